import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { sql } from 'kysely';
import { useHarness, type Harness } from '../support/stack/harness';
import { capturedOutput } from '../support/stack/output-capture';
import { parsePrometheus } from '../support/prometheus';
import { startWebhookReceiver } from '../support/fakes/webhook-receiver';
import { startWorkerProcess } from '../support/stack/worker-process';
import { freePort } from '../support/stack/ports';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createLogger, flatLogger } from '../../lib/log';
import { requestId as requestIdMiddleware } from '../../api/middleware/request-id';
import { requestLog } from '../../api/middleware/request-log';
import { errorHandler } from '../../api/middleware/errors';
import { jsonBody } from '../../api/middleware/json-body';
import type { AppContext } from '../../api/context';
import { getWalletSummary } from '../../db/repos/ledger';

/** The JSON log lines written so far (the harness sends the service's logs to the captured output). */
function jsonLogLines(): Record<string, any>[] {
  return capturedOutput()
    .split('\n')
    .filter((line) => line.startsWith('{"level":'))
    .map((line) => JSON.parse(line));
}

describe('operations: structured logs and metrics', function () {
  let h: Harness;
  let user: { userId: string; apiKey: string };

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    user = await h.createUser({ creditUsd: 5 });
  });

  describe('logs', function () {
    it('writes one JSON access line per request carrying its request id, route, status, duration and user', async function () {
      const requestId = `ops-log-${randomBytes(6).toString('hex')}`;
      const response = await h.http('GET', '/api/v1/logs?pageSize=5', {
        apiKey: user.apiKey,
        headers: { 'x-request-id': requestId },
      });
      assert.equal(response.status, 200);
      const lines = jsonLogLines().filter((line) => line.requestId === requestId);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const [line] = lines;
      assert.equal(line.level, 'info');
      assert.equal(line.method, 'GET');
      assert.equal(line.route, '/api/v1/logs');
      assert.equal(line.status, 200);
      assert.equal(line.userId, user.userId);
      assert.equal(typeof line.durationMs, 'number');
      assert.match(line.time, /^\d{4}-\d\d-\d\dT/);
    });

    it('labels unknown paths as unmatched instead of logging the raw path', async function () {
      const requestId = `ops-404-${randomBytes(6).toString('hex')}`;
      const response = await h.http('GET', `/api/v1/no-such-thing/${requestId}`, {
        apiKey: user.apiKey,
        headers: { 'x-request-id': requestId },
      });
      assert.equal(response.status, 404);
      const [line] = jsonLogLines().filter((l) => l.requestId === requestId);
      assert.equal(line.route, 'unmatched');
      assert.ok(!JSON.stringify(line).includes('no-such-thing'), JSON.stringify(line));
    });

    it('never logs the API key, an Authorization or Cookie header, or secret body fields of a request', async function () {
      const password = `pw-${randomBytes(12).toString('hex')}`;
      const cookie = `session=${randomBytes(12).toString('hex')}`;
      const bearer = randomBytes(16).toString('hex');
      const requestId = `ops-secret-${randomBytes(6).toString('hex')}`;
      const response = await h.http('POST', '/api/v1/social-accounts', {
        apiKey: user.apiKey,
        headers: { 'x-request-id': requestId, authorization: `Bearer ${bearer}`, cookie },
        body: {
          platform: 'forum',
          name: 'ops',
          credentials: { username: 'someone', password, client_id: 'x', client_secret: password },
        },
      });
      assert.ok(response.status < 500, JSON.stringify(response.body));
      assert.ok(
        jsonLogLines().some((l) => l.requestId === requestId),
        'the request was not logged at all',
      );
      const output = capturedOutput();
      for (const secret of [user.apiKey, password, cookie, bearer])
        assert.ok(!output.includes(secret), `a secret reached the logs: ${secret.slice(0, 12)}…`);
    });

    it('redacts secret fields wherever a logged object carries them', function () {
      let written = '';
      const logger = createLogger({
        level: 'debug',
        destination: { write: (chunk: string) => ((written += chunk), true) } as unknown as NodeJS.WritableStream,
      });
      const apiKey = `sk_live_${randomBytes(16).toString('hex')}`;
      logger.child({ requestId: 'r-1' }).info(
        {
          headers: {
            'x-api-key': apiKey,
            authorization: 'Bearer admin-token-value',
            cookie: 'sid=cookie-value',
            accept: 'application/json',
          },
          body: {
            url: 'https://example.com',
            credentials: { password: 'password-value' },
            cookies: [{ name: 'a', value: 'cookie-list-value' }],
          },
          account: { platform: { token: 'token-value', client_secret: 'client-secret-value' } },
        },
        'a request',
      );
      for (const secret of [
        apiKey,
        'admin-token-value',
        'cookie-value',
        'password-value',
        'cookie-list-value',
        'token-value',
        'client-secret-value',
      ]) {
        assert.ok(!written.includes(secret), `${secret} was logged: ${written}`);
      }
      const line = JSON.parse(written);
      assert.equal(line.headers['x-api-key'], '[redacted]');
      assert.equal(line.headers.accept, 'application/json');
      assert.equal(line.body.url, 'https://example.com');
      assert.equal(line.requestId, 'r-1');
    });
  });

  describe('the request log and body reading', function () {
    let server: http.Server;
    let base: string;
    const handled: string[] = [];

    /** The middleware the API runs first (api/app.ts), with a body limit of 64 bytes, around three routes. */
    before(async function () {
      const app = new Koa();
      app.use(requestIdMiddleware());
      app.use(requestLog());
      app.use(errorHandler());
      app.use(jsonBody(64));
      app.use(async (ctx: AppContext) => {
        handled.push(ctx.state.requestId);
        if (ctx.path === '/boom') throw new Error('an unexpected failure');
        ctx.state.log!.info({ headers: ctx.headers, body: ctx.state.body }, 'a route logs the request');
        ctx.body = { received: ctx.state.body ?? null };
      });
      server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    after(function () {
      server.close();
    });

    /** POST with a chunked body (no content-length), written in two parts. */
    const postChunked = (requestId: string, parts: string[], headers: Record<string, string> = {}) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request(
          `${base}/echo`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
          },
          (response) => {
            let body = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (body += chunk));
            response.on('end', () => resolve({ status: response.statusCode!, body }));
          },
        );
        request.on('error', reject);
        for (const part of parts) request.write(part);
        request.end();
      });

    it('reads a chunked JSON body, and a route logs through the request logger with secrets redacted', async function () {
      const requestId = `ops-body-${randomBytes(6).toString('hex')}`;
      const apiKey = `sk_live_${randomBytes(16).toString('hex')}`;
      const token = `mct1.${randomBytes(12).toString('hex')}`;
      const response = await postChunked(requestId, ['{"password":"pw-', 'value","n":1}'], {
        'x-api-key': apiKey,
        'x-service-charge-token': token,
      });
      assert.equal(response.status, 200, response.body);
      assert.deepEqual(JSON.parse(response.body), { received: { password: 'pw-value', n: 1 } });
      const lines = jsonLogLines().filter((line) => line.requestId === requestId);
      assert.deepEqual(
        lines.map((line) => line.msg),
        ['a route logs the request', 'POST unmatched 200'],
      );
      const [routeLine, accessLine] = lines;
      assert.equal(routeLine.headers['x-api-key'], '[redacted]');
      assert.equal(
        routeLine.headers['x-service-charge-token'],
        token,
        'not a secret field name (the charge token is never logged by a route)',
      );
      assert.equal(routeLine.body.password, '[redacted]');
      assert.deepEqual(Object.keys(accessLine), [
        'level',
        'time',
        'pid',
        'requestId',
        'method',
        'route',
        'status',
        'durationMs',
        'msg',
      ]);
      const output = capturedOutput();
      assert.ok(!output.includes(apiKey) && !output.includes('pw-value'), 'a secret reached the logs');
    });

    it('refuses a chunked body over the limit before any route runs', async function () {
      const requestId = `ops-huge-${randomBytes(6).toString('hex')}`;
      const outcome = await postChunked(requestId, [`{"a":"${'x'.repeat(40)}`, `${'y'.repeat(40)}"}`]).catch(
        (err: Error) => err,
      );
      // The request stream is destroyed when the limit is passed: the client sees 413 or a closed connection.
      if (!(outcome instanceof Error)) assert.equal(outcome.status, 413, outcome.body);
      assert.ok(!handled.includes(requestId), 'the route ran with a body over the limit');
    });

    it('logs an unexpected error with the request id, then its access line', async function () {
      const requestId = `ops-boom-${randomBytes(6).toString('hex')}`;
      const response = await fetch(`${base}/boom`, { headers: { 'x-request-id': requestId } });
      assert.equal(response.status, 500);
      assert.equal(((await response.json()) as any).error.code, 'internal_error');
      // Error lines are captured twice (the test sink echoes them to stderr, which is captured too).
      const lines = [
        ...new Set(
          jsonLogLines()
            .filter((line) => line.requestId === requestId)
            .map((line) => JSON.stringify(line)),
        ),
      ].map((text) => JSON.parse(text));
      assert.deepEqual(
        lines.map((line) => [line.level, line.msg]),
        [
          ['error', 'request failed with an unexpected error'],
          ['error', 'GET unmatched 500'],
        ],
      );
      assert.equal(lines[0].err.message, 'an unexpected failure');
    });

    it('writes the access line as the request logger would, redacting secret fields at the top of a flat line', function () {
      let written = '';
      const logger = createLogger({
        level: 'debug',
        destination: { write: (chunk: string) => ((written += chunk), true) } as unknown as NodeJS.WritableStream,
      });
      const line = {
        method: 'POST',
        route: '/api/v1/provider/runs/:runId/charge',
        status: 200,
        durationMs: 1.5,
        userId: 'u-1',
      };
      logger.child({ requestId: 'r-1' }).info(line, 'POST /x 200');
      flatLogger(logger).info({ requestId: 'r-1', ...line }, 'POST /x 200');
      const [viaChild, viaFlat] = written
        .trim()
        .split('\n')
        .map((text) => text.replace(/"time":"[^"]+"/, ''));
      assert.equal(viaFlat, viaChild);

      written = '';
      const secrets = {
        apiKey: 'k-value',
        'x-api-key': 'h-value',
        token: 't-value',
        password: 'p-value',
        authorization: 'a-value',
      };
      flatLogger(logger).info({ route: '/r', ...secrets }, 'flat');
      for (const value of Object.values(secrets))
        assert.ok(!written.includes(value), `${value} was logged: ${written}`);
      const parsed = JSON.parse(written);
      for (const name of Object.keys(secrets)) assert.equal(parsed[name], '[redacted]');
      assert.equal(parsed.route, '/r');
    });
  });

  describe('routing', function () {
    it('answers OPTIONS and 405 on an API route from its methods, and still runs the route', async function () {
      const path = `/api/v1/provider/runs/${randomUUID()}/charge`;
      const options = await h.http('OPTIONS', path);
      assert.equal(options.status, 200);
      assert.deepEqual(options.headers.get('allow')?.split(', ').sort(), ['POST']);
      const put = await h.http('PUT', path, { apiKey: user.apiKey });
      assert.equal(put.status, 405);
      assert.equal(put.body.error.code, 'method_not_allowed');
      const post = await h.http('POST', path, { apiKey: user.apiKey, body: { eventName: 'e', count: 1 } });
      assert.equal(post.status, 400);
      assert.equal(post.body.error.code, 'idempotency_key_required');
      const revenue = await h.http('GET', '/api/v1/provider/revenue', { apiKey: user.apiKey });
      assert.equal(revenue.status, 200, JSON.stringify(revenue.body));
    });
  });

  describe('GET /metrics', function () {
    const scrapeMetrics = (token?: string) =>
      h.http('GET', '/metrics', { headers: token ? { authorization: `Bearer ${token}` } : {} });

    it('is not public: 401 with the error body without the token or with another one', async function () {
      for (const token of [undefined, user.apiKey, 'x'.repeat(40)]) {
        const response = await scrapeMetrics(token);
        assert.equal(response.status, 401);
        assert.equal(response.body.error.code, 'unauthorized');
        assert.equal(response.body.error.requestId, response.headers.get('x-request-id'));
      }
    });

    it('answers in Prometheus text format with HTTP latency, jobs, job duration, debits and webhook outcomes after a scrape job', async function () {
      this.timeout(120_000);
      const receiver = await startWebhookReceiver();
      let jobId: string;
      try {
        const accepted = await h.http('POST', '/api/v1/scrape', {
          apiKey: user.apiKey,
          body: { url: `${h.site.url}/static`, webhook_url: receiver.url('/ops') },
        });
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        jobId = accepted.body.jobId;
        await h.waitForJob(user.apiKey, `/api/v1/scrape/status/${jobId}`, (j) =>
          j.logs.some((l: string) => /webhook delivered/.test(l)),
        );
      } finally {
        await receiver.close();
      }
      const response = await scrapeMetrics(h.config.adminToken);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const metrics = parsePrometheus(response.body);

      assert.equal(metrics.types.get('http_request_duration_seconds'), 'histogram');
      assert.ok(
        metrics.value('http_request_duration_seconds_count', {
          method: 'POST',
          route: '/api/v1/scrape',
          status: '202',
        }) >= 1,
      );
      assert.ok(
        metrics.value('http_request_duration_seconds_count', {
          method: 'GET',
          route: '/api/v1/scrape/status/:jobId',
          status: '200',
        }) >= 1,
      );
      assert.ok(!metrics.samples.some((s) => s.labels.route?.includes(jobId)), 'a raw job id became a label');

      const jobs = await h.db
        .selectFrom('jobs')
        .select(['kind', 'status', sql<number>`cast(count(*) as bigint)`.as('n')])
        .groupBy(['kind', 'status'])
        .execute();
      for (const row of jobs)
        assert.equal(
          metrics.value('platform_jobs', { kind: row.kind, state: row.status }),
          row.n,
          `${row.kind}/${row.status}`,
        );
      assert.ok(metrics.value('platform_jobs', { kind: 'scrape', state: 'completed' }) >= 1);

      assert.equal(metrics.types.get('platform_job_duration_seconds'), 'histogram');
      assert.ok(metrics.value('platform_job_duration_seconds_count', { kind: 'scrape', status: 'completed' }) >= 1);

      const usage = await h.db
        .selectFrom('ledger_entries')
        .select([
          sql<number>`cast(count(*) as bigint)`.as('n'),
          sql<number>`cast(coalesce(-sum(amount_micros), 0) as bigint)`.as('micros'),
        ])
        .where('kind', '=', 'usage')
        .executeTakeFirstOrThrow();
      assert.ok(usage.n >= 1, 'the scrape was not debited');
      assert.equal(metrics.value('platform_debits_total'), usage.n);
      assert.equal(metrics.value('platform_debits_micros_total'), usage.micros);
      assert.equal(metrics.types.get('platform_debits_micros_total'), 'counter');
      const balances = await h.db
        .selectFrom('wallets')
        .select(sql<number>`cast(sum(balance_micros) as bigint)`.as('b'))
        .executeTakeFirstOrThrow();
      assert.equal(metrics.value('platform_wallet_balance_micros'), balances.b);
      assert.equal(metrics.value('platform_state_up'), 1);
      // Open holds: the sum over accounts of what the available-balance arithmetic reserves.
      const users = await h.db.selectFrom('wallets').select('user_id').execute();
      let heldMicros = 0;
      for (const { user_id } of users) heldMicros += (await getWalletSummary(h.db, user_id)).heldMicros;
      assert.equal(metrics.value('platform_holds_open_micros'), heldMicros);
      const jobHolds = await h.db
        .selectFrom('job_holds')
        .select(sql<number>`cast(count(*) as bigint)`.as('n'))
        .where('released_at', 'is', null)
        .executeTakeFirstOrThrow();
      assert.ok(metrics.value('platform_holds_open') >= Number(jobHolds.n));

      assert.ok(metrics.value('platform_webhook_deliveries_total', { outcome: 'delivered' }) >= 1);
      assert.equal(typeof metrics.value('platform_webhook_deliveries_total', { outcome: 'http_error' }), 'number');
      assert.ok(metrics.find('process_cpu_user_seconds_total').length === 1, 'Node process metrics are missing');
    });
  });

  describe('worker process metrics', function () {
    let child: ChildProcess | null = null;
    let output = '';
    after(async function () {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child!.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    });

    it('exports the Temporal SDK runtime metrics and its own series on the configured ports, and logs JSON lines', async function () {
      this.timeout(120_000);
      const [sdkPort, appPort] = [await freePort(), await freePort()];
      const suffix = randomBytes(4).toString('hex');
      child = await startWorkerProcess({
        ...h.env,
        PLATFORM_TASK_QUEUE: `platform-ops-${suffix}`,
        BROWSER_TASK_QUEUE: `browser-ops-${suffix}`,
        WORKER_METRICS_PORT: String(sdkPort),
        WORKER_APP_METRICS_PORT: String(appPort),
      });
      child.stdout!.on('data', (chunk) => (output += chunk));
      const deadline = Date.now() + 30_000;
      let sdk = parsePrometheus('');
      // The SDK registers its series once the pollers have started.
      while (Date.now() < deadline) {
        sdk = parsePrometheus(await (await fetch(`http://127.0.0.1:${sdkPort}/metrics`)).text());
        if (sdk.find('temporal_num_pollers').length > 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      assert.ok(
        sdk.find('temporal_num_pollers', { task_queue: `platform-ops-${suffix}` }).length > 0,
        `no poller series: ${sdk.samples.map((s) => s.name).join(',')}`,
      );
      const app = parsePrometheus(await (await fetch(`http://127.0.0.1:${appPort}/metrics`)).text());
      assert.equal(app.types.get('platform_job_duration_seconds'), 'histogram');
      assert.equal(app.value('platform_webhook_deliveries_total', { outcome: 'delivered' }), 0);
      assert.equal((await fetch(`http://127.0.0.1:${appPort}/other`)).status, 404);

      // Production processes log one JSON object per line (the shutdown lines, written after this point).
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      const lines = output.split('\n').filter(Boolean);
      assert.ok(lines.length > 0, 'the worker logged nothing while shutting down');
      for (const line of lines) {
        const parsed = JSON.parse(line);
        assert.ok(
          typeof parsed.level === 'string' && typeof parsed.msg === 'string' && typeof parsed.time === 'string',
          line,
        );
      }
    });
  });
});
