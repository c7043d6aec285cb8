// Network rule: every packet in this file goes to 127.0.0.0/8. Made-up names resolve through a stub resolver only.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import type { StoredMarketTool } from '../../lib/market/listing';
import {
  callMarketTool,
  marketToolCallDeps,
  type AcquiredRun,
  type MarketCallEntry,
  type MarketCallRecord,
  type MarketToolCallDeps,
  type MarketToolCallOutcome,
} from '../../lib/market/tool-call';
import type { DriftReport } from '../../lib/market/tool-drift';
import { parseNetworkAllowlist, withResolver, type Resolver } from '../../lib/net/ssrf';
import { connectAndList } from '../../lib/tools/source';
import type { SourceParamValues } from '../../lib/tools/types';
import { startMarketProvider, type MarketProviderService } from '../support/fakes/market-provider';
import { startMcpServer } from '../support/fakes/mcp-server';
import { API_KEY, startOpenApiServer, type TestOpenApiServer } from '../support/openapi-api';
import {
  SESSION_TOOL_DESCRIPTIONS,
  startSessionMcpServer,
  type SessionMcpServer,
} from '../support/fakes/session-mcp-server';

/**
 * What a market consumer's input can make the platform send, and to whom: calls go through
 * callMarketTool (the path of the hosted endpoint and of agents' market selections) to real upstream
 * servers on 127.0.0.1, and an attacker's server listens on 127.0.0.2, which this file's network
 * allowlist opens, so an attack that works today really reaches it.
 */

const NAMES: Record<string, string> = { 'eu.inventory.test': '127.0.0.1', 'us.inventory.test': '127.0.0.1' };
const resolver: Resolver = async (hostname) => {
  const address = NAMES[hostname.toLowerCase()];
  if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return [{ address, family: 4 }];
};
const policy = withResolver(
  parseNetworkAllowlist(`127.0.0.1,127.0.0.2,localhost,${Object.keys(NAMES).join(',')}`),
  resolver,
);
const CHARGE_TOKEN = 'mct1.run-charge-token-0f9e8d7c';
const PROVIDER_KEY = 'provider-secret-key-5b4a39';

interface Attacker {
  origin: string;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders }[];
  close: () => Promise<void>;
}

/** The attacker's host: records everything that reaches it. */
async function startAttacker(): Promise<Attacker> {
  const requests: Attacker['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"stolen":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  return {
    origin: `http://127.0.0.2:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** A provider's API with an open redirect, an endpoint that echoes its key in an error, and header parameters. */
interface RedirectingApi {
  origin: string;
  spec: Record<string, unknown>;
  requests: { path: string; headers: http.IncomingHttpHeaders }[];
  close: () => Promise<void>;
}

async function startRedirectingApi(): Promise<RedirectingApi> {
  const requests: RedirectingApi['requests'] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push({ path: url.pathname, headers: req.headers });
    if (url.pathname === '/v1/go')
      return void res.writeHead(302, { location: url.searchParams.get('to') ?? '/v1/echo' }).end();
    if (url.pathname === '/v1/echo')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: true }));
    if (url.pathname === '/v1/whoami') {
      return void res.writeHead(403, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: `key ${req.headers['x-api-key']} may not call http://${req.headers.host}/v1/whoami`,
        }),
      );
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const spec = {
    openapi: '3.0.3',
    info: { title: 'Redirecting API', version: '1' },
    servers: [{ url: `${origin}/v1` }],
    security: [{ key: [] }],
    components: { securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
    paths: {
      '/go': {
        get: {
          operationId: 'go',
          parameters: [{ name: 'to', in: 'query', required: true, schema: { type: 'string' } }],
          responses: { 200: { description: 'ok' } },
        },
      },
      '/echo': {
        get: {
          operationId: 'echo',
          parameters: [
            'Host',
            'Cookie',
            'Content-Length',
            'Connection',
            'Authorization',
            'X-Service-Charge-Token',
            'X-Trace-Id',
          ].map((name) => ({ name, in: 'header', schema: { type: 'string' } })),
          responses: { 200: { description: 'ok' } },
        },
      },
      '/whoami': { get: { operationId: 'whoami', responses: { 200: { description: 'ok' } } } },
    },
  };
  return {
    origin,
    spec,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

function memoryStore() {
  const records: MarketCallRecord[] = [];
  const flagged: DriftReport[] = [];
  return {
    records,
    flagged,
    store: {
      settleFixedCall: async ({ priceMicros }: { priceMicros: number }) => ({
        charged: true as const,
        costMicros: priceMicros,
      }),
      endCall: async () => {},
      recordCall: async (record: MarketCallRecord) => void records.push(record),
      flagDrift: async (_entry: unknown, report: DriftReport) => void flagged.push(report),
    },
  };
}

function callDeps(store: ReturnType<typeof memoryStore>['store']): MarketToolCallDeps {
  return marketToolCallDeps({
    store,
    market: { toolListCacheMs: 60_000, commissionRate: 0.2, toolCallTimeoutMs: 10_000 },
    policy,
  });
}

const openRun = async (): Promise<AcquiredRun> => ({
  ok: true,
  opened: true,
  run: {
    id: randomUUID(),
    chargeToken: CHARGE_TOKEN,
    holdMicros: 1_000_000,
    chargedMicros: 0,
    limitMicros: 1_000_000,
    expiresAt: new Date(Date.now() + 60_000),
  },
});

const approved = (
  tools: { name: string; description: string | null; inputSchema: Record<string, unknown> | null }[],
): StoredMarketTool[] =>
  tools.map((t) => ({
    toolName: t.name,
    displayName: t.name,
    description: t.description,
    inputSchema: t.inputSchema,
    clientPriceMicros: 1_000,
    providerRevenueMicros: null,
    isEnabled: true,
  }));

async function upstreamTools(url: string) {
  const { session, tools } = await connectAndList(new URL(url), {}, { policy });
  await session.close();
  return tools;
}

function entry(fields: Partial<MarketCallEntry> & Pick<MarketCallEntry, 'type' | 'approvedTools'>): MarketCallEntry {
  return {
    entryId: randomUUID(),
    submissionId: randomUUID(),
    slug: 'entry',
    name: 'Entry',
    providerId: randomUUID(),
    remoteMcpUrl: null,
    openapiBaseUrl: null,
    openapiSpec: null,
    staticConfig: {},
    requiredUserParamsSchema: {},
    monetizationStrategy: 'tool_call_fixed',
    pricingEvents: [],
    ...fields,
  };
}

function call(
  deps: MarketToolCallDeps,
  marketEntry: MarketCallEntry,
  toolName: string,
  args: unknown,
  consumerParams: SourceParamValues = {},
  consumerId = randomUUID(),
): Promise<MarketToolCallOutcome> {
  // One credential per consumer: its id is the selection's.
  return callMarketTool(deps, {
    consumerId,
    entry: marketEntry,
    toolName,
    args,
    consumerParams,
    selectionId: `credential-of-${consumerId}`,
    acquireRun: openRun,
    runPerCall: true,
  });
}

const shown = (outcome: MarketToolCallOutcome) =>
  outcome.status === 'answered' ? outcome.result.text : outcome.message;

describe('market trust: consumer input never opens a door the provider did not', function () {
  this.timeout(60_000);
  let attacker: Attacker;
  let inventory: TestOpenApiServer;
  let provider: MarketProviderService;
  let redirecting: RedirectingApi;

  before(async () => {
    [attacker, inventory, provider, redirecting] = await Promise.all([
      startAttacker(),
      startOpenApiServer(),
      startMarketProvider(),
      startRedirectingApi(),
    ]);
  });
  after(async () => Promise.all([attacker.close(), inventory.close(), provider.close(), redirecting.close()]));
  beforeEach(() => void attacker.requests.splice(0));
  const nothingStolen = () => assert.deepEqual(attacker.requests, [], "nothing reached the attacker's host");

  /** The inventory API behind server URL variables: http://{region}.inventory.test:<port>/api. */
  function regionalInventory(variables: Record<string, unknown>, schema: Record<string, unknown>): MarketCallEntry {
    const spec = parseYaml(inventory.openapiYaml);
    spec.servers = [{ url: `http://{region}.inventory.test:${new URL(inventory.origin).port}/api`, variables }];
    return entry({
      type: 'openapi',
      openapiSpec: spec,
      staticConfig: { 'X-API-Key': API_KEY },
      requiredUserParamsSchema: schema,
      approvedTools: approved([{ name: 'getItem', description: 'Read one item', inputSchema: null }]),
    });
  }

  describe('OpenAPI server variables', function () {
    const declared = { type: 'object', properties: { region: { type: 'string' } }, required: ['region'] };

    it('fills a variable the provider declared with a value of its enum, and the request goes to that host', async function () {
      const deps = callDeps(memoryStore().store);
      const outcome = await call(
        deps,
        regionalInventory({ region: { default: 'eu', enum: ['eu', 'us'] } }, declared),
        'getItem',
        { itemId: 'sku-1' },
        { region: 'us' },
      );
      assert.equal(outcome.status, 'answered', shown(outcome));
      const sent = inventory.apiRequests().at(-1)!;
      assert.equal(sent.headers.host, `us.inventory.test:${new URL(inventory.origin).port}`);
      assert.equal(sent.headers['x-api-key'], API_KEY);
    });

    it("refuses a value that would move the provider's key to another host, before anything is sent", async function () {
      const { store, records } = memoryStore();
      const deps = callDeps(store);
      const before = inventory.requests.length;
      const attack = `${new URL(attacker.origin).host}/#`;
      for (const variables of [{ region: { default: 'eu', enum: ['eu', 'us'] } }, { region: { default: 'eu' } }]) {
        const outcome = await call(
          deps,
          regionalInventory(variables, declared),
          'getItem',
          { itemId: 'sku-1' },
          { region: attack },
        );
        assert.equal(outcome.status, 'refused', shown(outcome));
        assert.equal(outcome.status === 'refused' && outcome.code, 'invalid_params');
        assert.match(shown(outcome), /region/);
      }
      nothingStolen();
      assert.equal(inventory.requests.length, before, 'nothing was sent anywhere');
      assert.deepEqual(
        records.map((r) => [r.outcome, r.costMicros]),
        [
          ['refused', 0],
          ['refused', 0],
        ],
        'each refusal is recorded, at no cost',
      );
    });

    it('refuses a value outside the enum, a variable without an enum, and one the provider did not declare', async function () {
      const deps = callDeps(memoryStore().store);
      const before = inventory.requests.length;
      const notInEnum = await call(
        deps,
        regionalInventory({ region: { default: 'eu', enum: ['eu', 'us'] } }, declared),
        'getItem',
        { itemId: 'a' },
        { region: 'ap' },
      );
      assert.equal(notInEnum.status, 'refused');
      assert.match(shown(notInEnum), /The value given for \{region\} is not one the provider allows \(eu, us\)/);

      const noEnum = await call(
        deps,
        regionalInventory({ region: { default: 'eu' } }, declared),
        'getItem',
        { itemId: 'a' },
        { region: 'us' },
      );
      assert.equal(noEnum.status, 'refused');
      assert.match(shown(noEnum), /\{region\}.*no list of allowed values/);

      const undeclared = await call(
        deps,
        regionalInventory({ region: { default: 'eu', enum: ['eu', 'us'] } }, {}),
        'getItem',
        { itemId: 'a' },
        { region: 'us' },
      );
      assert.equal(undeclared.status === 'refused' && undeclared.code, 'invalid_params');
      assert.match(shown(undeclared), /region.*not a parameter of this entry/);
      assert.equal(inventory.requests.length, before);

      // An enum of the consumer-parameter schema counts too, and even then the URL must keep the template's host.
      const schemaEnum = {
        type: 'object',
        properties: { region: { type: 'string', enum: ['us', `${new URL(attacker.origin).host}/#`] } },
      };
      const allowed = await call(
        deps,
        regionalInventory({ region: { default: 'eu' } }, schemaEnum),
        'getItem',
        { itemId: 'b' },
        { region: 'us' },
      );
      assert.equal(allowed.status, 'answered', shown(allowed));
      const moved = await call(
        deps,
        regionalInventory({ region: { default: 'eu' } }, schemaEnum),
        'getItem',
        { itemId: 'b' },
        { region: `${new URL(attacker.origin).host}/#` },
      );
      assert.equal(moved.status, 'refused');
      assert.match(shown(moved), /would leave the host/);
      nothingStolen();
    });
  });

  describe('upstream headers', function () {
    const schema = {
      type: 'object',
      properties: { region: { type: 'string' }, 'x-api-key': { type: 'string', writeOnly: true } },
    };
    const eventEntry = async () =>
      entry({
        type: 'remote_mcp',
        remoteMcpUrl: provider.url,
        monetizationStrategy: 'provider_event',
        staticConfig: { 'X-Api-Key': PROVIDER_KEY },
        requiredUserParamsSchema: schema,
        approvedTools: approved(await upstreamTools(provider.url)),
      });

    it('remote MCP: the charge headers and the staticConfig win, once, over consumer values of any case', async function () {
      const deps = callDeps(memoryStore().store);
      const marketEntry = await eventEntry();
      const outcome = await call(
        deps,
        marketEntry,
        'lookup_city',
        { city: 'Lisbon' },
        { region: 'eu', 'x-api-key': 'consumer-key-1234' },
      );
      assert.equal(outcome.status, 'answered', shown(outcome));
      const headers = provider.toolCallHeaders().at(-1)!;
      assert.equal(headers['x-api-key'], PROVIDER_KEY, "the provider's value, not joined with the consumer's");
      assert.equal(headers['x-service-charge-token'], CHARGE_TOKEN);
      assert.equal(headers.region, 'eu', "the consumer's declared parameter still arrives");
    });

    it('remote MCP: a consumer cannot set a charge header, Host, Cookie, Content-Length, hop-by-hop or undeclared auth headers', async function () {
      const { store, records } = memoryStore();
      const deps = callDeps(store);
      const marketEntry = await eventEntry();
      const calls = provider.toolCallHeaders().length;
      const declaring = (name: string) => ({
        type: 'object',
        properties: { ...schema.properties, [name]: { type: 'string', writeOnly: true } },
      });
      const attempts: [string, Record<string, unknown>][] = [['Authorization', schema]];
      for (const name of [
        'X-Service-Charge-Token',
        'x-service-charge-max-total-usd',
        'Host',
        'Cookie',
        'Content-Length',
        'Connection',
        'Transfer-Encoding',
        'Proxy-Authorization',
      ]) {
        // Undeclared (a selection stored before params were checked), and declared by the provider alike.
        attempts.push([name, schema], [name, declaring(name)]);
      }
      for (const [name, declared] of attempts) {
        const outcome = await call(
          deps,
          { ...marketEntry, requiredUserParamsSchema: declared },
          'lookup_city',
          { city: 'Lisbon' },
          { [name]: 'forged-by-consumer' },
        );
        assert.equal(outcome.status, 'refused', `${name}: ${shown(outcome)}`);
        assert.equal(outcome.status === 'refused' && outcome.code, 'invalid_params', name);
        assert.ok(shown(outcome).includes(name), shown(outcome));
      }
      assert.equal(provider.toolCallHeaders().length, calls, 'no call reached the provider');
      assert.ok(!JSON.stringify(provider.requests).includes('forged-by-consumer'));
      assert.deepEqual(
        records.map((r) => [r.outcome, r.costMicros]),
        attempts.map(() => ['refused', 0]),
        'each refusal is recorded, at no cost',
      );

      // An auth header the provider declared is the consumer's to set (e.g. their own account's token).
      const own = await call(
        deps,
        { ...marketEntry, requiredUserParamsSchema: declaring('Authorization') },
        'lookup_city',
        { city: 'Porto' },
        { Authorization: 'consumer-own-token' },
      );
      assert.equal(own.status, 'answered', shown(own));
      assert.equal(provider.toolCallHeaders().at(-1)!.authorization, 'Bearer consumer-own-token');
    });

    it('OpenAPI: staticConfig wins over a consumer value for the same credential; arguments never set managed or charge headers', async function () {
      const deps = callDeps(memoryStore().store);
      const keyed = entry({
        type: 'openapi',
        openapiSpec: parseYaml(inventory.openapiYaml),
        staticConfig: { 'X-API-Key': API_KEY },
        requiredUserParamsSchema: { type: 'object', properties: { headerKey: { type: 'string', writeOnly: true } } },
        approvedTools: approved([{ name: 'getItem', description: 'Read one item', inputSchema: null }]),
      });
      const item = await call(deps, keyed, 'getItem', { itemId: 'sku-2' }, { headerKey: 'consumer-chosen-key' });
      assert.equal(item.status === 'answered' && item.result.isError, false, shown(item));
      assert.equal(inventory.apiRequests().at(-1)!.headers['x-api-key'], API_KEY);

      const echo = entry({
        type: 'openapi',
        openapiSpec: redirecting.spec,
        monetizationStrategy: 'provider_event',
        staticConfig: { 'X-API-Key': PROVIDER_KEY },
        approvedTools: approved([{ name: 'echo', description: null, inputSchema: null }]),
      });
      const args = {
        Host: 'attacker.example',
        Cookie: 'session=forged',
        'Content-Length': '0',
        Connection: 'close',
        Authorization: 'Bearer forged',
        'X-Service-Charge-Token': 'forged',
        'X-Trace-Id': 'trace-7',
      };
      const answered = await call(deps, echo, 'echo', args);
      assert.equal(answered.status === 'answered' && answered.result.isError, false, shown(answered));
      const sent = redirecting.requests.at(-1)!.headers;
      assert.equal(sent.host, new URL(redirecting.origin).host);
      assert.equal(sent.cookie, undefined);
      assert.equal(sent.authorization, undefined);
      assert.equal(sent['x-service-charge-token'], CHARGE_TOKEN);
      assert.equal(sent['x-api-key'], PROVIDER_KEY);
      assert.equal(sent['x-trace-id'], 'trace-7', 'an ordinary header argument is still sent');
    });
  });

  describe('path arguments', function () {
    it('refuses "." and ".." in any encoding and never leaves the operation\'s path', async function () {
      const deps = callDeps(memoryStore().store);
      const marketEntry = entry({
        type: 'openapi',
        openapiSpec: parseYaml(inventory.openapiYaml),
        staticConfig: { 'X-API-Key': API_KEY },
        approvedTools: approved([{ name: 'getItem', description: 'Read one item', inputSchema: null }]),
      });
      const before = inventory.requests.length;
      for (const itemId of ['..', '.', '%2e%2e', '%2E%2e', '.%2E', '%252e%252e', '..;x', '']) {
        const outcome = await call(deps, marketEntry, 'getItem', { itemId });
        assert.equal(outcome.status, 'failed', `${JSON.stringify(itemId)}: ${shown(outcome)}`);
        assert.equal(outcome.status === 'failed' && outcome.code, 'invalid_arguments', itemId);
      }
      assert.deepEqual(
        inventory.requests.slice(before).map((r) => r.path),
        [],
        'no request was sent',
      );
      const fine = await call(deps, marketEntry, 'getItem', { itemId: 'a..b/../c' });
      assert.equal(fine.status, 'answered', shown(fine));
      assert.equal(inventory.apiRequests().at(-1)!.path, '/api/items/a..b%2F..%2Fc');
    });
  });

  describe('redirects', function () {
    it("does not follow a tool call's redirect to another origin: no credential or charge header reaches it", async function () {
      const deps = callDeps(memoryStore().store);
      const marketEntry = entry({
        type: 'openapi',
        openapiSpec: redirecting.spec,
        monetizationStrategy: 'provider_event',
        staticConfig: { 'X-API-Key': PROVIDER_KEY },
        approvedTools: approved([{ name: 'go', description: null, inputSchema: null }]),
      });
      const away = await call(deps, marketEntry, 'go', { to: `${attacker.origin}/collect` });
      nothingStolen();
      assert.equal(away.status, 'answered', shown(away));
      assert.equal(away.status === 'answered' && away.result.isError, true);
      assert.match(shown(away), /redirected to another origin; tool calls do not follow/);

      const within = await call(deps, marketEntry, 'go', { to: '/v1/echo' });
      assert.equal(
        within.status === 'answered' && within.result.text,
        '{"echoed":true}',
        'a redirect within the origin is followed',
      );
      assert.equal(redirecting.requests.at(-1)!.headers['x-api-key'], PROVIDER_KEY);
    });
  });

  describe('errors shown to consumers', function () {
    it("never show the provider's upstream host, staticConfig values, or upstream bodies that echo them", async function () {
      const deps = callDeps(memoryStore().store);
      const echoing = entry({
        type: 'openapi',
        openapiSpec: redirecting.spec,
        staticConfig: { 'X-API-Key': PROVIDER_KEY },
        approvedTools: approved([{ name: 'whoami', description: null, inputSchema: null }]),
      });
      const refusedByUpstream = await call(deps, echoing, 'whoami', {});
      assert.equal(
        refusedByUpstream.status === 'answered' && refusedByUpstream.result.isError,
        true,
        shown(refusedByUpstream),
      );
      assert.match(shown(refusedByUpstream), /^HTTP 403/);

      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const deadPort = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const downMcp = entry({
        type: 'remote_mcp',
        remoteMcpUrl: `http://127.0.0.1:${deadPort}/mcp`,
        staticConfig: { Authorization: PROVIDER_KEY },
        approvedTools: approved([{ name: 'lookup_city', description: null, inputSchema: null }]),
      });
      const unreachable = await call(deps, downMcp, 'lookup_city', { city: 'Lisbon' });
      assert.equal(unreachable.status === 'refused' && unreachable.code, 'upstream_unavailable');
      assert.match(shown(unreachable), /the provider's server refused the connection/);

      const downApi = entry({
        ...echoing,
        openapiSpec: { ...redirecting.spec, servers: [{ url: `http://127.0.0.1:${deadPort}/v1` }] },
      });
      const failed = await call(deps, downApi, 'whoami', {});
      assert.equal(failed.status, 'failed');
      assert.match(shown(failed), /the provider's server refused the connection/);

      for (const outcome of [refusedByUpstream, unreachable, failed]) {
        const text = shown(outcome);
        for (const secret of [PROVIDER_KEY, '127.0.0.1', String(deadPort), new URL(redirecting.origin).host])
          assert.ok(!text.includes(secret), `${JSON.stringify(text)} shows ${secret}`);
      }
    });
  });

  describe("no consumer sees another one's upstream state", function () {
    let sessions: SessionMcpServer;
    before(async () => (sessions = await startSessionMcpServer()));
    after(() => sessions.close());

    it('keeps upstream MCP sessions apart per consumer', async function () {
      const deps = callDeps(memoryStore().store);
      const marketEntry = entry({
        type: 'remote_mcp',
        remoteMcpUrl: sessions.url,
        monetizationStrategy: 'free',
        approvedTools: approved(await upstreamTools(sessions.url)),
      });
      const alice = randomUUID();
      const bob = randomUUID();
      const remembered = await call(deps, marketEntry, 'remember', { note: 'alice-private-note' }, {}, alice);
      assert.equal(remembered.status, 'answered', shown(remembered));
      const bobs = await call(deps, marketEntry, 'recall', {}, {}, bob);
      assert.equal(shown(bobs), '[]', "bob does not see alice's session");
      const alices = await call(deps, marketEntry, 'recall', {}, {}, alice);
      assert.equal(shown(alices), '["alice-private-note"]', "alice's own calls share her session");
    });

    it("checks the rug-pull gate with the provider's parameters: one consumer's values neither flag the entry nor fail other consumers", async function () {
      const { store, flagged } = memoryStore();
      const deps = callDeps(store);
      const marketEntry = entry({
        type: 'remote_mcp',
        remoteMcpUrl: sessions.url,
        monetizationStrategy: 'free',
        requiredUserParamsSchema: {
          type: 'object',
          properties: { 'x-locale': { type: 'string', enum: ['en', 'de'] } },
        },
        approvedTools: approved(await upstreamTools(sessions.url)),
      });
      assert.equal(marketEntry.approvedTools[0].description, SESSION_TOOL_DESCRIPTIONS.en.remember);
      const german = await call(deps, marketEntry, 'recall', {}, { 'x-locale': 'de' });
      assert.equal(german.status, 'answered', shown(german));
      const other = await call(deps, marketEntry, 'recall', {}, { 'x-locale': 'en' });
      assert.equal(other.status, 'answered', shown(other));
      assert.deepEqual(flagged, [], 'no drift was flagged');
    });

    it("gates an upstream that lists its tools only to a consumer's own credentials with that consumer's view, flagging nothing", async function () {
      const guarded = await startMcpServer({ bearerToken: 'consumer-own-token-1' });
      try {
        const { store, flagged } = memoryStore();
        const deps = callDeps(store);
        const { session, tools } = await connectAndList(
          new URL(guarded.url),
          { Authorization: 'Bearer consumer-own-token-1' },
          { policy },
        );
        await session.close();
        const marketEntry = entry({
          type: 'remote_mcp',
          remoteMcpUrl: guarded.url,
          monetizationStrategy: 'free',
          requiredUserParamsSchema: {
            type: 'object',
            properties: { Authorization: { type: 'string', writeOnly: true } },
          },
          approvedTools: approved(tools.filter((t) => t.name === 'echo')),
        });
        const own = await call(deps, marketEntry, 'echo', { message: 'hi' }, { Authorization: 'consumer-own-token-1' });
        assert.equal(shown(own), 'echo: hi');
        const wrong = await call(
          deps,
          marketEntry,
          'echo',
          { message: 'hi' },
          { Authorization: 'someone-elses-guess' },
        );
        assert.equal(wrong.status === 'refused' && wrong.code, 'upstream_unavailable', shown(wrong));
        assert.match(shown(wrong), /refused the credentials/);
        const again = await call(
          deps,
          marketEntry,
          'echo',
          { message: 'still works' },
          { Authorization: 'consumer-own-token-1' },
          randomUUID(),
        );
        assert.equal(shown(again), 'echo: still works', "one consumer's failure does not fail another's calls");
        assert.deepEqual(flagged, []);
      } finally {
        await guarded.close();
      }
    });
  });
});
