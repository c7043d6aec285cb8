/**
 * `tsx scripts/capture-mcp-servers.ts DIR [PACKAGE...]` — captures the benign half of the
 * tool-poisoning evaluation set (test/support/fixtures/poisoning-eval/servers/*.json): the server
 * instructions and tool lists (name, title, description, inputSchema, annotations) of real, widely
 * used MCP servers from npm, read by running each one over stdio with the MCP SDK v2 client.
 *
 * Not run by `npm test` (the fixtures are committed); a maintainer re-runs it to refresh them:
 *
 *   mkdir /tmp/mcp-eval && cd /tmp/mcp-eval && npm init -y
 *   PUPPETEER_SKIP_DOWNLOAD=1 npm i --ignore-scripts <the packages of SERVERS below>
 *   cd <clone> && npx tsx scripts/capture-mcp-servers.ts /tmp/mcp-eval
 *
 * DIR is the scratch directory the servers are installed in (outside the repository). Servers that
 * need an API key to start get a dummy value (the names are recorded, never the values); none is
 * given a working credential or needs the network to list its tools. Each server is stopped as soon
 * as it has listed its tools. With PACKAGE names, only those are captured. Exit code 1 when a server
 * could not be captured (the others are still written).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

interface ServerSpec {
  package: string;
  /** The package's bin to run (default: its only bin). */
  bin?: string;
  args?: string[];
  /** Dummy values some servers need to start; not credentials. */
  env?: Record<string, string>;
  /** Files written under the scratch home directory first (a dummy login some CLIs look for). */
  files?: Record<string, string>;
  /** Added after the scan's rules were first written against the others (see the fixtures' README). */
  secondBatch?: true;
}

const DUMMY = 'dummy-value-for-tool-listing';
const SCRATCH = path.join(os.tmpdir(), 'mcp-eval-scratch');

/** The servers of the evaluation set: official reference servers and widely used vendor servers. */
export const SERVERS: ServerSpec[] = [
  { package: '@modelcontextprotocol/server-everything', args: ['stdio'] },
  { package: '@modelcontextprotocol/server-filesystem', args: [SCRATCH] },
  { package: '@modelcontextprotocol/server-memory', env: { MEMORY_FILE_PATH: path.join(SCRATCH, 'memory.json') } },
  { package: '@modelcontextprotocol/server-sequential-thinking' },
  { package: '@modelcontextprotocol/server-github', env: { GITHUB_PERSONAL_ACCESS_TOKEN: DUMMY } },
  {
    package: '@modelcontextprotocol/server-gitlab',
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: DUMMY, GITLAB_API_URL: 'http://127.0.0.1:9/api/v4' },
  },
  { package: '@modelcontextprotocol/server-slack', env: { SLACK_BOT_TOKEN: DUMMY, SLACK_TEAM_ID: 'T00000000' } },
  { package: '@modelcontextprotocol/server-postgres', args: ['postgresql://127.0.0.1:9/none'] },
  { package: '@modelcontextprotocol/server-puppeteer' },
  { package: '@modelcontextprotocol/server-brave-search', env: { BRAVE_API_KEY: DUMMY } },
  { package: '@modelcontextprotocol/server-google-maps', env: { GOOGLE_MAPS_API_KEY: DUMMY } },
  { package: '@modelcontextprotocol/server-redis', args: ['redis://127.0.0.1:9'] },
  { package: '@playwright/mcp', args: ['--headless'] },
  { package: '@upstash/context7-mcp' },
  { package: 'firecrawl-mcp', env: { FIRECRAWL_API_KEY: 'fc-dummy' } },
  { package: '@notionhq/notion-mcp-server', env: { NOTION_TOKEN: 'ntn_dummy' } },
  { package: '@heroku/mcp-server', env: { HEROKU_API_KEY: DUMMY } },
  // Every feature group but `docs`, whose tool schema is fetched from Supabase's content API at start.
  {
    package: '@supabase/mcp-server-supabase',
    args: ['--access-token', DUMMY, '--features', 'account,database,debugging,development,functions,branching,storage'],
  },
  { package: 'mcp-server-kubernetes' },
  { package: '@browsermcp/mcp' },
  { package: 'tavily-mcp', env: { TAVILY_API_KEY: 'tvly-dummy' } },
  { package: 'exa-mcp-server', env: { EXA_API_KEY: DUMMY } },
  { package: '@sentry/mcp-server', args: ['--access-token', DUMMY] },
  { package: 'figma-developer-mcp', args: ['--stdio'], env: { FIGMA_API_KEY: DUMMY } },
  {
    package: '@cloudflare/mcp-server-cloudflare',
    args: ['run', '00000000000000000000000000000000'],
    files: {
      '.config/.wrangler/config/default.toml': `oauth_token = "${DUMMY}"\nexpiration_time = "2099-01-01T00:00:00.000Z"\n`,
    },
  },
  // Second batch: captured after the rules of lib/market/poisoning.ts were first written against the servers above.
  { package: '@wonderwhy-er/desktop-commander', bin: 'desktop-commander', secondBatch: true },
  { package: 'chrome-devtools-mcp', bin: 'chrome-devtools-mcp', args: ['--headless'], secondBatch: true },
  { package: '@neondatabase/mcp-server-neon', args: ['start', DUMMY], secondBatch: true },
  { package: '@circleci/mcp-server-circleci', env: { CIRCLECI_TOKEN: DUMMY }, secondBatch: true },
  {
    package: '@elastic/mcp-server-elasticsearch',
    env: { ES_URL: 'http://127.0.0.1:9', ES_API_KEY: DUMMY },
    secondBatch: true,
  },
  {
    package: '@modelcontextprotocol/server-aws-kb-retrieval',
    env: { AWS_ACCESS_KEY_ID: DUMMY, AWS_SECRET_ACCESS_KEY: DUMMY, AWS_REGION: 'us-east-1' },
    secondBatch: true,
  },
  { package: '@shopify/dev-mcp', secondBatch: true },
  { package: 'mongodb-mcp-server', env: { MDB_MCP_TELEMETRY: 'disabled' }, secondBatch: true },
];

export const FIXTURE_DIR = path.join(__dirname, '..', 'test', 'support', 'fixtures', 'poisoning-eval', 'servers');

export interface CapturedServer {
  package: string;
  version: string;
  secondBatch?: true;
  capturedAt: string;
  /** How it was started: the bin, its arguments (dummy values shown as such) and the names of the env vars set. */
  command: { bin: string; args: string[]; env: string[] };
  server: { name: string; version: string; title?: string } | null;
  instructions: string | null;
  tools: {
    name: string;
    title?: string;
    description?: string;
    inputSchema: Record<string, unknown>;
    annotations?: Record<string, unknown>;
  }[];
}

const fileNameOf = (pkg: string) => `${pkg.replace(/^@/, '').replace(/\//g, '__')}.json`;

async function capture(dir: string, spec: ServerSpec): Promise<CapturedServer> {
  const packageDir = path.join(dir, 'node_modules', spec.package);
  const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
    bin?: string | Record<string, string>;
  };
  const bins = typeof manifest.bin === 'string' ? { [spec.package]: manifest.bin } : (manifest.bin ?? {});
  const binName = spec.bin ?? Object.keys(bins)[0];
  if (!binName || !bins[binName]) throw new Error(`${spec.package} has no bin ${spec.bin ?? ''}`);
  const args = spec.args ?? [];
  for (const [file, content] of Object.entries(spec.files ?? {})) {
    mkdirSync(path.dirname(path.join(SCRATCH, file)), { recursive: true });
    writeFileSync(path.join(SCRATCH, file), content);
  }
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [path.join(packageDir, bins[binName]), ...args],
    env: { PATH: process.env.PATH ?? '', HOME: SCRATCH, ...spec.env },
    cwd: SCRATCH,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'poisoning-eval-capture', version: '1.0.0' });
  try {
    await client.connect(transport, { timeout: 60_000 });
    const tools: CapturedServer['tools'] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: 60_000 });
      for (const tool of page.tools) {
        tools.push({
          name: tool.name,
          ...(tool.title !== undefined && { title: tool.title }),
          ...(tool.description !== undefined && { description: tool.description }),
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(tool.annotations !== undefined && { annotations: tool.annotations as Record<string, unknown> }),
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    const server = client.getServerVersion() as { name: string; version: string; title?: string } | undefined;
    return {
      package: spec.package,
      version: manifest.version,
      ...(spec.secondBatch && { secondBatch: true as const }),
      capturedAt: new Date().toISOString().slice(0, 10),
      command: {
        bin: binName,
        args: args.map((a) => a.replace(DUMMY, '<dummy>').replace(SCRATCH, '<scratch>')),
        env: Object.keys(spec.env ?? {}),
      },
      server: server
        ? { name: server.name, version: server.version, ...(server.title && { title: server.title }) }
        : null,
      instructions: client.getInstructions() ?? null,
      tools,
    };
  } finally {
    await client.close().catch(() => undefined);
  }
}

async function main(): Promise<number> {
  const [dir, ...only] = process.argv.slice(2);
  if (!dir || !existsSync(path.join(dir, 'node_modules'))) {
    console.error(
      'usage: tsx scripts/capture-mcp-servers.ts DIR [PACKAGE...]  (DIR: where the servers are npm-installed)',
    );
    return 1;
  }
  mkdirSync(SCRATCH, { recursive: true });
  mkdirSync(FIXTURE_DIR, { recursive: true });
  let failed = 0;
  for (const spec of SERVERS.filter((s) => !only.length || only.includes(s.package))) {
    try {
      const captured = await capture(path.resolve(dir), spec);
      writeFileSync(path.join(FIXTURE_DIR, fileNameOf(spec.package)), `${JSON.stringify(captured, null, 2)}\n`);
      console.log(
        `${spec.package}@${captured.version}: ${captured.tools.length} tools, instructions ${captured.instructions ? `${captured.instructions.length} chars` : 'none'}`,
      );
    } catch (error) {
      failed++;
      console.log(`${spec.package}: FAILED ${(error as Error).message}`);
    }
  }
  return failed ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
