import assert from 'node:assert/strict';
import { compareRuns, conformanceTooling, REVISIONS, runConformance } from '../support/stack/conformance-cli';
import {
  FIXTURE_EXPECTATIONS,
  startConformanceServer,
  type ConformanceServer,
} from '../support/fakes/conformance-server';
import { hostedEndpointFor, type HostedEndpoint } from '../support/stack/hosted-conformance';
import { useHarness, type Harness } from '../support/stack/harness';

/**
 * The official MCP conformance suite against the conformance fixture directly and against the hosted
 * market endpoint /mcp/{entryId} in front of it (the fixture listed as a free entry and approved, called
 * with a consumer's API key through a loopback relay): every scenario the fixture passes directly — each
 * tool scenario, and the transport scenarios of a tool server (sessions, resumable and concurrent streams,
 * stateless serving, SEP-2243 headers, DNS-rebinding protection) — must pass through the hosted endpoint
 * too. docs/mcp-conformance.md has the table. CONFORMANCE_TABLE=1 prints it.
 */

describe('MCP conformance through the hosted market endpoint', function () {
  this.timeout(600_000);
  let h: Harness;
  let fixture: ConformanceServer;
  let hosted: HostedEndpoint;

  before(async function () {
    conformanceTooling();
    h = await useHarness();
    // A stack of its own with a high request limit: the suite sends a few hundred requests a minute.
    const stack = await h.startIsolatedStack({
      taskQueues: { platform: 'conformance-hosted-unused', browser: 'conformance-hosted-unused-browser' },
      overrides: { market: { ...h.config.market, mcpRateLimitPerMinute: 1_000_000 } },
      queues: [],
    });
    fixture = await startConformanceServer();
    hosted = await hostedEndpointFor(h, fixture.url, stack.baseUrl);
  });

  after(async function () {
    await hosted?.close();
    await fixture?.close();
  });

  for (const revision of REVISIONS) {
    it(`passes through /mcp/{entryId} every scenario the fixture passes directly at ${revision}`, async function () {
      const direct = await runConformance(fixture.url, revision);
      const through = await runConformance(hosted.url, revision);
      const { rows, regressions } = compareRuns(direct, through, FIXTURE_EXPECTATIONS[revision]);
      const table = rows
        .map(
          (row) => `${row.scenario}: direct ${row.direct ? 'pass' : 'fail'}, hosted ${row.through ? 'pass' : 'fail'}`,
        )
        .join('\n');
      if (process.env.CONFORMANCE_TABLE) console.log(`${revision}\n${table}`);
      // The fixture passes every scenario it implements (test/docs/mcp-conformance.test.ts holds it to that).
      assert.ok(rows.length > 0 && rows.every((row) => row.direct), `the fixture itself failed:\n${table}`);
      assert.deepEqual(
        regressions.map((row) => `${row.scenario}: ${row.problems.join('; ')}`),
        [],
        `scenarios that pass directly but not through the hosted endpoint at ${revision}`,
      );
    });
  }
});
