import assert from 'node:assert/strict';
import {
  compareRuns,
  conformanceTooling,
  REVISIONS,
  runConformance,
  type CheckStatus,
  type ConformanceRun,
} from '../support/stack/conformance-cli';
import {
  directFixtureRun,
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
 * too, whether FIXTURE_EXPECTATIONS lists it or not. docs/mcp-conformance.md has the table.
 * CONFORMANCE_TABLE=1 prints it.
 */

/** A run of made-up scenarios, each with one check of the given status. */
function fakeRun(statuses: Record<string, CheckStatus>): ConformanceRun {
  const scenarios = new Map(
    Object.entries(statuses).map(([scenario, status]) => [
      scenario,
      {
        scenario,
        verdict:
          status === 'SUCCESS' ? ('pass' as const) : status === 'FAILURE' ? ('fail' as const) : ('skipped' as const),
        checks: [{ id: `${scenario}-check`, name: scenario, description: scenario, status }],
        problems: status === 'FAILURE' ? [`${scenario}-check: broken`] : [],
      },
    ]),
  );
  return { revision: REVISIONS[0], url: 'http://127.0.0.1:1/mcp', scenarios, output: '' };
}

describe('comparing a direct conformance run with one through an endpoint', function () {
  it('judges every scenario the server passes directly, listed in the expectations or not', function () {
    const direct = fakeRun({ listed: 'SUCCESS', unlisted: 'SUCCESS', 'fails-directly': 'FAILURE', na: 'SKIPPED' });
    const through = fakeRun({ listed: 'SUCCESS', unlisted: 'FAILURE', 'fails-directly': 'FAILURE', na: 'SKIPPED' });
    const { rows, regressions } = compareRuns(direct, through, { listed: 'pass' });
    assert.deepEqual(
      rows.map((row) => row.scenario),
      ['listed', 'unlisted'],
    );
    assert.deepEqual(
      regressions.map((row) => row.problems.join('; ')),
      ['unlisted: fail — unlisted-check: broken'],
    );
    const missing = compareRuns(direct, fakeRun({ listed: 'SUCCESS' }), {});
    assert.deepEqual(
      missing.regressions.map((row) => row.scenario),
      ['unlisted'],
      'a scenario the endpoint does not run at all is a regression too',
    );
  });
});

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
      // The direct run is shared with test/docs/mcp-conformance.test.ts: once per revision per process.
      const direct = await directFixtureRun(revision);
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
