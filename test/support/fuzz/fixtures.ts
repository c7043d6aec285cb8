import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PNG } from 'pngjs';
import type { Harness } from '../stack/harness';
import { act } from '../agent-script';
import { approvedEntry, createSubmission, storeValidation, submissionBody } from '../market';

type Account = { userId: string; apiKey: string };

export interface Fixtures {
  /**
   * Ids that exist for the fuzzing account, by the operation path up to and including the parameter
   * (`/scrape/status/{jobId}`, `/agents/{id}`), so each operation gets an id of its own resource.
   */
  knownIds: Record<string, string[]>;
  /** Header values that pass, by header name: the event verification's real charge token. */
  knownHeaders: Record<string, string[]>;
  /** Bodies the fixtures accept, by operation id: a charge of the verification's own event. */
  knownBodies: Record<string, unknown[]>;
  /** This period's operations of the fuzzing account once the fixtures exist. */
  operationsUsed: number;
  /** Its stored automations and agents (each counts against the automation limit). */
  automationsUsed: number;
}

function expectStatus(response: { status: number; body: unknown }, status: number, what: string) {
  assert.equal(response.status, status, `${what}: ${JSON.stringify(response.body)}`);
}

/**
 * One of every resource the API has, owned by (or, for public market entries, visible to) `fuzzer`:
 * jobs of each kind (scrape, browser agent, automation, custom agent, agent-market run) waited to
 * their end, a social account, drafts in both markets, an approved entry of each market (by
 * `provider`), a credential for the MCP entry, an event verification with its run, and an icon. The
 * fuzzer then reaches each operation's happy path and body parsing, not only its 404.
 */
export async function createFixtures(h: Harness, fuzzer: Account, provider: Account): Promise<Fixtures> {
  const { apiKey } = fuzzer;
  const adminAuth = { authorization: `Bearer ${h.config.adminToken}` };
  const known: Record<string, string[]> = {};
  const add = (key: string, id: string) => (known[key] = [...(known[key] ?? []), id]);
  /** Bodies the fixtures accept, by operation id, for operations whose schema-valid bodies cannot pass. */
  const knownBodies: Record<string, unknown[]> = {};

  // Jobs of each kind, each waited until it ends (so no workflow of a fixture runs during the fuzzing).
  const scrape = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } });
  expectStatus(scrape, 202, 'scrape');
  await h.waitForJob(apiKey, `/api/v1/scrape/status/${scrape.body.jobId}`);
  add('/scrape/status/{jobId}', scrape.body.jobId);

  h.llm.enqueue(act('done', { success: true, answer: 'fuzz fixture' }));
  const agent = await h.http('POST', '/api/v1/agentscraper', {
    apiKey,
    body: { task: `Open ${h.site.url}/static and tell me its title`, headless: true },
  });
  expectStatus(agent, 202, 'browser agent');
  await h.waitForJob(apiKey, `/api/v1/agentscraper/status/${agent.body.jobId}`);
  add('/agentscraper/status/{jobId}', agent.body.jobId);

  h.llm.enqueue(act('done', { success: true, answer: 'fuzz fixture' }));
  const customRun = await h.http('POST', '/api/v1/agents/run', {
    apiKey,
    body: { task: 'Say hi', llm_model: 'gpt-4o-mini' },
  });
  expectStatus(customRun, 202, 'custom agent run');
  await h.waitForJob(apiKey, `/api/v1/agents/runs/${customRun.body.jobId}`);
  add('/agents/runs/{jobId}', customRun.body.jobId);

  const customAgent = await h.http('POST', '/api/v1/agents', {
    apiKey,
    body: { name: 'Fuzz agent', cron: '0 0 1 1 *', task: 'Say hi', llm_model: 'gpt-4o-mini' },
  });
  expectStatus(customAgent, 201, 'stored custom agent');
  add('/agents/{id}', customAgent.body.agent.id);

  // A social account, and an automation posting with it.
  const clientId = `fuzz-${randomBytes(4).toString('hex')}`;
  h.forum.addApp({ clientId, clientSecret: 'fuzz-forum-secret' });
  h.forum.addUser({ username: clientId, password: 'fuzz-forum-password' });
  const account = await h.http('POST', '/api/v1/social-accounts', {
    apiKey,
    body: {
      platform: 'forum',
      name: 'fuzz',
      credentials: {
        forumClientId: clientId,
        forumClientSecret: 'fuzz-forum-secret',
        forumUsername: clientId,
        forumPassword: 'fuzz-forum-password',
      },
    },
  });
  expectStatus(account, 201, 'social account');
  add('/social-accounts/{id}', account.body.account.id);

  h.llm.enqueue(act('done', { success: true, answer: 'nothing to post' }));
  const automation = await h.http('POST', '/api/v1/automations', {
    apiKey,
    body: {
      name: 'Fuzz automation',
      cron: '0 0 1 1 *',
      task: 'Post a tip to r/fuzz_bees',
      automation_type: 'forum-agent',
      forum: { mode: 'saved', accountIds: [account.body.account.id] },
    },
  });
  expectStatus(automation, 201, 'automation');

  // The MCP market: a draft of the fuzzer's, an approved entry with a credential, an event verification and its run.
  const draft = await createSubmission(h, apiKey, submissionBody(await storeValidation(h, fuzzer.userId)));
  add('/mcp-market/submissions/{id}', draft.id);
  // A draft for the update alone (the fuzzed submit sends the other one to review), with a body it accepts.
  const updatedBody = submissionBody(await storeValidation(h, fuzzer.userId));
  const updated = await createSubmission(h, apiKey, updatedBody);
  add('PUT /mcp-market/submissions/{id}', updated.id);
  knownBodies['PUT /mcp-market/submissions/{id}'] = [updatedBody];
  const entry = await approvedEntry(h, provider);
  // An approved entry of the fuzzer's own: a revision starts only from a live entry of its owner.
  const ownEntry = await approvedEntry(h, fuzzer);
  add('POST /mcp-market/submissions/{id}/revisions', ownEntry.submissionId);
  add('/mcp-market/mcps/{id}', entry.entryId);
  const credential = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, { apiKey, body: {} });
  expectStatus(credential, 201, 'market credential');
  add('/mcp-market/credentials/{credentialId}', credential.body.credentialId);
  const verified = await storeValidation(h, fuzzer.userId);
  const verification = await h.http('POST', '/api/v1/mcp-market/event-verifications', {
    apiKey,
    body: { sourceFingerprint: verified.sourceFingerprint, eventNames: ['row.extracted'] },
  });
  expectStatus(verification, 201, 'event verification');
  add('/mcp-market/event-verifications/{id}', verification.body.id);
  add('/provider/runs/{runId}', verification.body.runId);
  // The charge endpoint checks the token and the event before the run's money path: give it both.
  assert.ok(verification.body.chargeToken, 'the event verification has a charge token');
  const knownHeaders = { 'x-service-charge-token': [verification.body.chargeToken as string] };
  Object.assign(knownBodies, {
    'POST /provider/runs/{runId}/charge': [
      { eventName: 'row.extracted' },
      { eventName: 'row.extracted', count: 3, toolName: 'extract', metadata: { page: 1 } },
    ],
    'POST /mcp-market/mcps/{id}/credentials': [{}],
    'PATCH /mcp-market/credentials/{credentialId}': [{ budgetMonthlyUsd: 5 }, { budgetTotalUsd: null }],
    'PATCH /account/api-key': [{ budgetMonthlyUsd: 5 }, { budgetTotalUsd: null }],
    'PATCH /social-accounts/{id}': [{ name: 'fuzz renamed' }, { isActive: true }],
    'PATCH /agents/{id}': [{ name: 'Fuzz agent renamed' }, { task: 'Say hello' }],
  });

  const png = PNG.sync.write(new PNG({ width: 16, height: 16 }));
  const icon = await h.http('POST', '/api/v1/market/icons', {
    apiKey,
    body: { fileName: 'fuzz.png', contentType: 'image/png', base64: png.toString('base64') },
  });
  expectStatus(icon, 201, 'icon');
  add('/market/icons/{key}', icon.body.iconObjectKey);

  // The agent market: a draft of the fuzzer's, an approved agent of the provider's, bought and run by the fuzzer.
  const agentBody = (name: string) => ({
    name,
    priceUsd: 0.2,
    suggestedLlmProvider: 'service',
    suggestedLlmModel: 'gpt-4o-mini',
    runMode: 'template',
    systemPrompt: 'Answer briefly',
    promptTemplate: 'Open {{page}} and report its title.',
    inputSchema: { type: 'object', properties: { page: { type: 'string' } }, required: ['page'] },
    structuredOutput: [{ id: 'title', type: 'string' }],
  });
  const agentDraftBody = agentBody(`Fuzz draft ${randomBytes(3).toString('hex')}`);
  const agentDraft = await h.http('POST', '/api/v1/agent-market/submissions', { apiKey, body: agentDraftBody });
  expectStatus(agentDraft, 201, 'agent-market draft');
  add('/agent-market/submissions/{id}', agentDraft.body.id);
  // A draft for the update alone, as for the MCP market: the fuzzed submit may send the other one to review
  // first (409 to every update after it; seed 1805716136 did).
  const updatedAgentBody = agentBody(`Fuzz update ${randomBytes(3).toString('hex')}`);
  const updatedAgent = await h.http('POST', '/api/v1/agent-market/submissions', { apiKey, body: updatedAgentBody });
  expectStatus(updatedAgent, 201, 'agent-market draft to update');
  add('PUT /agent-market/submissions/{id}', updatedAgent.body.id);
  knownBodies['PUT /agent-market/submissions/{id}'] = [updatedAgentBody];
  // And one for the delete alone (DELETE runs last, when the fuzzed submit has usually sent the first to review).
  const deletedAgent = await h.http('POST', '/api/v1/agent-market/submissions', {
    apiKey,
    body: agentBody(`Fuzz delete ${randomBytes(3).toString('hex')}`),
  });
  expectStatus(deletedAgent, 201, 'agent-market draft to delete');
  add('DELETE /agent-market/submissions/{id}', deletedAgent.body.id);
  const approvedAgent = async (owner: { apiKey: string }, name: string) => {
    const submitted = await h.http('POST', '/api/v1/agent-market/submissions', {
      apiKey: owner.apiKey,
      body: agentBody(name),
    });
    expectStatus(submitted, 201, 'agent-market submission');
    expectStatus(
      await h.http('POST', `/api/v1/agent-market/submissions/${submitted.body.id}/submit`, { apiKey: owner.apiKey }),
      200,
      'agent-market submit',
    );
    expectStatus(
      await h.http('POST', `/admin/market/agent/submissions/${submitted.body.id}/review`, {
        headers: adminAuth,
        body: { action: 'approve' },
      }),
      200,
      'agent-market approval',
    );
    return submitted.body as { id: string; publicId: string };
  };
  const listed = await approvedAgent(provider, `Fuzz listed ${randomBytes(3).toString('hex')}`);
  // An approved agent of the fuzzer's own, for the revision (a revision starts only from its owner's live agent).
  const ownAgent = await approvedAgent({ apiKey }, `Fuzz own ${randomBytes(3).toString('hex')}`);
  add('POST /agent-market/submissions/{id}/revisions', ownAgent.id);
  const agentId = listed.publicId;
  add('/agent-market/agents/{agentId}', agentId);
  expectStatus(
    await h.http('POST', `/api/v1/agent-market/agents/${agentId}/purchase`, { apiKey }),
    201,
    'agent-market purchase',
  );
  h.llm.enqueue(act('done', { success: true, data: { title: 'Fixture' } }));
  const marketRun = await h.http('POST', `/api/v1/agent-market/agents/${agentId}/run`, {
    apiKey,
    body: { inputs: { page: `${h.site.url}/static` }, headless: true },
  });
  expectStatus(marketRun, 202, 'agent-market run');
  await h.waitForJob(apiKey, `/api/v1/agent-market/runs/${marketRun.body.jobId}`);
  add('/agent-market/runs/{jobId}', marketRun.body.jobId);

  const summary = await h.http('GET', '/api/v1/account', { apiKey });
  expectStatus(summary, 200, 'account');
  const automations = await h.db
    .selectFrom('automations')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', fuzzer.userId)
    .executeTakeFirstOrThrow();
  return {
    knownIds: known,
    knownHeaders,
    knownBodies,
    operationsUsed: summary.body.usage.operations,
    automationsUsed: Number(automations.n),
  };
}
