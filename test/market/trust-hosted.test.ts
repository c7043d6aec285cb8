import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { marketCallPath } from '../../api/services/market/call-path';
import { createMarketSelectionCaller } from '../../activities/tools/market';
import { admitJob } from '../../db/repos/jobs';
import { getWalletSummary } from '../../db/repos/ledger';
import { recordValidation } from '../../db/repos/market-validations';
import { readOpenApiDocument } from '../../lib/tools/openapi/reader';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import { sealRequestSecrets, type RequestSecrets } from '../../lib/request-secrets';
import { loadOpenApi } from '../../lib/tools/source';
import { useHarness, type Harness } from '../support/stack/harness';
import { approvedEntry, completeVerification, storeValidation } from '../support/market';
import { discoveredTools, startMarketProvider, type MarketProviderService } from '../support/fakes/market-provider';
import { API_KEY as INVENTORY_KEY, startOpenApiServer, type TestOpenApiServer } from '../support/openapi-api';

/**
 * The attacks of the market-trust review, end to end: through the hosted endpoint /mcp/{entryId} with a
 * consumer's credential, and through an agent's stored market selection, against the real charge
 * endpoint. The harness's NETWORK_ALLOWLIST opens 127.0.0.1 only, so the attacker's host is another
 * origin there (its own listener and port), which the SSRF guard lets through as it would a public host.
 */
const policy = parseNetworkAllowlist('127.0.0.1,localhost');
type ToolResult = Awaited<ReturnType<Client['callTool']>>;
const textOf = (result: ToolResult) =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');
const billing = (result: ToolResult) => (result._meta as Record<string, any>)['scrape-platform/billing'];

describe('market trust, end to end: what a consumer can make the platform send', function () {
  this.timeout(120_000);
  let h: Harness;
  let inventory: TestOpenApiServer;
  let service: MarketProviderService;
  let attacker: http.Server;
  const stolen: http.IncomingHttpHeaders[] = [];
  const clients: Client[] = [];

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    [inventory, service] = await Promise.all([startOpenApiServer(), startMarketProvider()]);
    attacker = http.createServer((req, res) => {
      stolen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await Promise.all([
      inventory?.close(),
      service?.close(),
      new Promise<void>((resolve) => (attacker.closeAllConnections(), attacker.close(() => resolve()))),
    ]);
  });

  const wallet = (userId: string) => getWalletSummary(h.db, userId);

  it("a credential's server-variable value cannot send the provider's key to the consumer's host", async function () {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 1 });
    // The provider's API lives at http://{region}.inventory.test/api and the consumer chooses the region.
    const specText = inventory.openapiYaml.replace(
      `servers:\n  - url: ${inventory.apiBase}\n`,
      'servers:\n  - url: http://{region}.inventory.test/api\n    variables:\n      region: { default: eu, enum: [eu, us] }\n',
    );
    assert.notEqual(specText, inventory.openapiYaml);
    const document = readOpenApiDocument({ specText });
    const { model } = await loadOpenApi({ type: 'openapi', specText, baseUrl: inventory.apiBase }, { policy });
    const tools = model.operations.map((o) => ({
      name: o.tool.name,
      description: o.tool.description,
      inputSchema: o.tool.inputSchema,
    }));
    const validation = await recordValidation(h.db, {
      ownerId: provider.userId,
      source: { type: 'openapi', document, baseUrl: null },
      discovery: { title: 'Inventory', description: 'Inventory', params: [], tools },
    });
    const entry = await approvedEntry(
      h,
      provider,
      {
        type: 'openapi',
        remoteMcpUrl: undefined,
        openapiSpecText: specText,
        staticConfig: { 'X-API-Key': INVENTORY_KEY },
        requiredUserParamsSchema: {
          type: 'object',
          properties: { region: { type: 'string', description: 'Data region' } },
          required: ['region'],
        },
        monetizationStrategy: 'tool_call_fixed',
        tools: [{ toolName: 'get_items', displayName: 'List items', clientPriceUsd: 0.001 }],
      },
      { ...validation, url: '' },
    );
    const attack = `127.0.0.1:${(attacker.address() as AddressInfo).port}/#`;
    const issued = await h.http('POST', `/api/v1/mcp-market/mcps/${entry.entryId}/credentials`, {
      apiKey: consumer.apiKey,
      body: { params: { region: attack } },
    });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));

    const client = new Client({ name: 'market-consumer', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/mcp/${entry.entryId}`), {
        requestInit: { headers: { authorization: `Bearer ${issued.body.credential}` } },
      }),
    );
    clients.push(client);
    const result = await client.callTool({ name: 'get_items', arguments: {} });
    assert.deepEqual(stolen, [], "nothing reached the consumer's host");
    assert.equal(result.isError, true);
    assert.deepEqual(
      [billing(result).outcome, billing(result).code, billing(result).chargedUsd],
      ['refused', 'invalid_params', 0],
    );
    assert.match(textOf(result), /\{region\} is not one the provider allows \(eu, us\)/);
    assert.ok(!textOf(result).includes(INVENTORY_KEY));
    assert.equal((await wallet(consumer.userId)).balanceMicros, 1_000_000);
  });

  it("an agent selection's param cannot forge or join the charge token: the provider's charges keep working", async function () {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 2 });
    const events = [{ eventName: 'page.scraped', unitPriceUsd: 0.1 }];
    const validation = await storeValidation(h, provider.userId, {
      url: service.url,
      tools: await discoveredTools(service.url),
    });
    const eventVerificationId = await completeVerification(h, provider.apiKey, validation.sourceFingerprint, [
      'page.scraped',
    ]);
    const entry = await approvedEntry(
      h,
      provider,
      { monetizationStrategy: 'provider_event', pricingEvents: events, eventVerificationId },
      validation,
    );
    service.configureCharging({ apiBase: h.baseUrl, apiKey: provider.apiKey });
    const call = createMarketSelectionCaller({
      db: h.db,
      config: h.config,
      callPath: marketCallPath(h.db, h.config.market, policy),
    });

    // A selection stored with a param the entry does not declare (as before params were checked on input).
    const admit = async (params: Record<string, string>) => {
      const admitted = await admitJob(h.db, {
        userId: consumer.userId,
        kind: 'agentic',
        request: {
          task: 'scrape',
          market_mcps: [
            {
              mcp_id: entry.entryId,
              params: Object.fromEntries(Object.keys(params).map((k) => [k, '[redacted]'])),
              max_total_usd: 1,
            },
          ],
        },
        webhookUrl: null,
        idempotencyKey: null,
        holdMaxMicros: 1,
        sealSecrets: (jobId) =>
          sealRequestSecrets(h.config.masterKey, jobId, { market_mcps_params: [params] } as RequestSecrets),
      });
      assert.equal(admitted.outcome, 'created');
      return (admitted as { job: { id: string } }).job.id;
    };
    const ran = service.runs('scrape_pages');
    const forged = await call({
      jobId: await admit({ 'X-Service-Charge-Token': 'forged' }),
      index: 0,
      tool: 'scrape_pages',
      args: { batches: [2] },
    });
    assert.equal(forged.status, 'refused', JSON.stringify(forged));
    assert.equal(forged.status === 'refused' && forged.code, 'invalid_params');
    assert.match(
      forged.status === 'refused' ? forged.message : '',
      /"X-Service-Charge-Token" is not a parameter of this entry/,
    );
    assert.equal(service.runs('scrape_pages'), ran, 'the provider was not called');

    const honest = await call({ jobId: await admit({}), index: 0, tool: 'scrape_pages', args: { batches: [2] } });
    assert.equal(honest.status, 'answered', JSON.stringify(honest));
    const { charges } = JSON.parse(honest.status === 'answered' ? honest.result.text : '{}');
    assert.deepEqual(
      charges.map((c: { status: number; body: { chargedCount: number } }) => [c.status, c.body.chargedCount]),
      [[200, 2]],
    );
    assert.equal(
      service.toolCallHeaders().at(-1)!['x-service-charge-token']?.toString().split(',').length,
      1,
      'one token, not joined',
    );
    assert.equal(
      (await wallet(consumer.userId)).balanceMicros,
      2_000_000 - 200_000,
      'the consumer paid for what the provider charged',
    );
  });
});
