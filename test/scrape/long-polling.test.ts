import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { useHarness, type Harness } from '../support/stack/harness';
import { jobWaitersFor } from '../../api/services/jobs/job-status';
import { act } from '../support/agent-script';

/** GET …/status/{id}?wait=N: held until the job is terminal or N seconds pass. */
describe('long polling of job status (?wait=N)', function () {
  let h: Harness;
  let apiKey: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey } = await h.createUser({ creditUsd: 5 }));
  });

  async function acceptHeldScrape(tag: string) {
    const held = h.llm.hold();
    const accepted = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: `${h.site.url}/static?longpoll=${tag}` },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await held.reached; // the job is now processing, blocked in extraction
    return { jobId: accepted.body.jobId as string, held };
  }

  /** Resolves once a long poll of the job is held in this API's waiters (the poll's request reached its wait). */
  async function pollHeld(jobId: string) {
    const waiters = jobWaitersFor(h.db);
    for (const deadline = Date.now() + 15_000; waiters.waitingOn(jobId) === 0;) {
      assert.ok(Date.now() < deadline, `no long poll of ${jobId} is waiting`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** A request whose answer is noted: `answered()` tells whether it has come yet. */
  function tracked<T>(work: Promise<T>): { answer: Promise<T>; answered: () => boolean } {
    let answered = false;
    return { answer: work.finally(() => (answered = true)), answered: () => answered };
  }

  /**
   * A long poll (?wait=30, the longest) of a job held in extraction: only the end of its wait can answer it. A poll
   * started after it and answered while it is still pending was answered before its own wait could run out, so
   * because its job finished; no elapsed time is measured. `end()` lets its job finish.
   */
  async function stopwatch(tag: string) {
    const { jobId, held } = await acceptHeldScrape(`stopwatch-${tag}`);
    const poll = tracked(h.http('GET', `/api/v1/scrape/status/${jobId}?wait=30`, { apiKey }));
    await pollHeld(jobId);
    return {
      running: () => !poll.answered(),
      async end() {
        held.release();
        await poll.answer;
      },
    };
  }

  it('answers as soon as the job completes, with the final record', async function () {
    this.timeout(60_000);
    const { jobId, held } = await acceptHeldScrape('early');
    const clock = await stopwatch('early');
    const statusPath = `/api/v1/scrape/status/${jobId}`;
    const waiting = tracked(h.http('GET', `${statusPath}?wait=30`, { apiKey }));
    await pollHeld(jobId);
    assert.equal(waiting.answered(), false, 'answered before the job could finish');
    held.release();
    const answer = await waiting.answer;
    assert.ok(clock.running(), 'held until its wait ran out although the job finished');
    await clock.end();
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.status, 'completed', answer.body.error);
    assert.equal(answer.body.result.metadata.title, 'Field Guide to Urban Beekeeping');
    const plain = await h.http('GET', statusPath, { apiKey });
    assert.deepEqual(answer.body, plain.body);
  });

  it('answers with the current record when the wait elapses first', async function () {
    this.timeout(60_000);
    const { jobId, held } = await acceptHeldScrape('timeout');
    try {
      // The job stays held until the release below: only the end of the wait can answer this poll.
      const answer = await h.http('GET', `/api/v1/scrape/status/${jobId}?wait=1`, { apiKey });
      assert.equal(answer.status, 200);
      assert.equal(answer.body.status, 'processing');
      assert.equal(answer.body.id, jobId);
    } finally {
      held.release();
    }
    const done = await h.http('GET', `/api/v1/scrape/status/${jobId}?wait=30`, { apiKey });
    assert.equal(done.body.status, 'completed', done.body.error);
  });

  it('answers at once for a job that is already terminal, and for wait=0', async function () {
    this.timeout(60_000);
    const accepted = await h.http('POST', '/api/v1/scrape', {
      apiKey,
      body: { url: `${h.site.url}/static?longpoll=done` },
    });
    const statusPath = `/api/v1/scrape/status/${accepted.body.jobId}`;
    const done = await h.waitForJob(apiKey, statusPath);
    assert.equal(done.status, 'completed');
    const { jobId, held } = await acceptHeldScrape('zero');
    const clock = await stopwatch('at-once');
    try {
      const value = await h.http('GET', `${statusPath}?wait=30`, { apiKey });
      assert.equal(value.body.status, 'completed');
      const immediate = await h.http('GET', `/api/v1/scrape/status/${jobId}?wait=0`, { apiKey });
      assert.equal(immediate.body.status, 'processing');
      assert.ok(clock.running(), 'a finished job or wait=0 was held');
    } finally {
      held.release();
      await clock.end();
    }
  });

  it('notices a terminal state written by another process (another database connection)', async function () {
    this.timeout(60_000);
    const { jobId, held } = await acceptHeldScrape('elsewhere');
    const clock = await stopwatch('elsewhere');
    const waiting = h.http('GET', `/api/v1/scrape/status/${jobId}?wait=30`, { apiKey });
    await pollHeld(jobId);
    // A worker in another process finishing the job: only the database tells this API about it.
    const other = new pg.Client({ connectionString: h.databaseUrl });
    await other.connect();
    try {
      await other.query(
        `update jobs set status = 'failed', error = 'finished elsewhere', updated_at = now() where id = $1`,
        [jobId],
      );
    } finally {
      await other.end();
    }
    const answer = await waiting;
    assert.ok(clock.running(), 'held until its wait ran out although the job was finished elsewhere');
    held.release();
    await clock.end();
    assert.equal(answer.body.status, 'failed');
    assert.equal(answer.body.error, 'finished elsewhere');
  });

  it('refuses a wait that is not a whole number of seconds from 0 to 30, on every status route', async function () {
    for (const route of [
      '/api/v1/scrape/status',
      '/api/v1/agentscraper/status',
      '/api/v1/agents/runs',
      '/api/v1/agent-market/runs',
    ]) {
      for (const wait of ['31', '-1', 'abc', '1.5', '', '1e1']) {
        const answer = await h.http('GET', `${route}/${randomUUID()}?wait=${encodeURIComponent(wait)}`, { apiKey });
        assert.equal(answer.status, 400, `${route} wait=${wait}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error.code, 'validation_failed');
        assert.match(answer.body.error.message, /wait/);
        assert.equal(typeof answer.body.error.requestId, 'string');
      }
      const repeated = await h.http('GET', `${route}/${randomUUID()}?wait=1&wait=2`, { apiKey });
      assert.equal(repeated.status, 400);
      const unknown = await h.http('GET', `${route}/${randomUUID()}?wait=30`, { apiKey });
      assert.equal(unknown.status, 404, 'an unknown job is a 404 at once, not after the wait');
    }
    const unauthenticated = await h.http('GET', `/api/v1/scrape/status/${randomUUID()}?wait=5`);
    assert.equal(unauthenticated.status, 401);
  });

  it('long-polls browser-agent jobs too', async function () {
    this.timeout(90_000);
    const clock = await stopwatch('agent');
    h.llm.enqueue(act('done', { success: true, answer: 'Field Guide to Urban Beekeeping' }, 'Answer'));
    const held = h.llm.hold();
    const accepted = await h.http('POST', '/api/v1/agentscraper', {
      apiKey,
      body: { task: `Open ${h.site.url}/static and tell me its title`, headless: true },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    await held.reached;
    const statusPath = `/api/v1/agentscraper/status/${accepted.body.jobId}`;
    const early = await h.http('GET', `${statusPath}?wait=1`, { apiKey });
    assert.equal(early.body.status, 'processing');
    held.release();
    const done = await h.http('GET', `${statusPath}?wait=30`, { apiKey });
    assert.ok(clock.running(), 'held until its wait ran out although the agent finished');
    await clock.end();
    assert.equal(done.body.status, 'completed', done.body.error);
    assert.equal(done.body.result.answer, 'Field Guide to Urban Beekeeping');
  });

  it('long-polls custom-agent runs, answering with the tool calls and usage once finished', async function () {
    this.timeout(90_000);
    const clock = await stopwatch('custom-agent');
    h.llm.enqueue(act('done', { success: true, answer: 'long-polled custom agent' }));
    const accepted = await h.http('POST', '/api/v1/agents/run', {
      apiKey,
      body: { task: 'Say the phrase "long-polled custom agent"', llm_model: 'gpt-4o-mini' },
    });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const done = await h.http('GET', `/api/v1/agents/runs/${accepted.body.jobId}?wait=30`, { apiKey });
    assert.ok(clock.running(), 'held until its wait ran out although the run finished');
    await clock.end();
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.status, 'completed', done.body.error);
    assert.deepEqual(done.body.toolCalls, []);
    assert.equal(done.body.usage.toolCalls, 0);
    assert.ok(done.body.usage.llmTokens > 0, "the decision's tokens are in the usage");
  });

  it('stops waiting when the client goes away', async function () {
    this.timeout(60_000);
    const { jobId, held } = await acceptHeldScrape('gone');
    const waiters = jobWaitersFor(h.db);
    try {
      const request = fetch(`${h.baseUrl}/api/v1/scrape/status/${jobId}?wait=30`, {
        headers: { 'x-api-key': apiKey },
        signal: AbortSignal.timeout(500),
      });
      await assert.rejects(request, { name: 'TimeoutError' });
      const deadline = Date.now() + 3_000;
      while (waiters.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(waiters.size, 0, 'the abandoned request still waits');
    } finally {
      held.release();
    }
  });
});
