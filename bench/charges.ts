/**
 * Production charge benchmark (`npm run bench:charges`): one harness (real Postgres database,
 * Temporal dev server, API in this process), loopback only, bounded in time.
 *
 *   1. 32 providers, each with its own API key and an approved provider_event entry, and 32
 *      consumers, each with an open market run on one of them (price 10 micro-USD per event, so a
 *      1.00 USD run pays for 100,000 events).
 *   2. Baseline: raw single-row Postgres transactions (BEGIN; UPDATE one row of 32; COMMIT) at 32
 *      concurrent clients on their own pool of the same database.
 *   3. Production charges: POST /provider/runs/{runId}/charge at 32 concurrent providers, every
 *      request a new idempotency key (each a locked transaction: two wallets and the run, the charge
 *      row, the consumer's debit and agent transaction, the provider's revenue).
 *   4. The same charge transaction called in-process (db/repos/market-runs.ts chargeMarketRun on the
 *      API's pool, no HTTP, no API key or token check): what the database part costs.
 *   5. The replay path: the same keys and bodies again (each answered from the stored result).
 *   6. Checks: every accepted charge exactly once in the books (one charge row per key, one debit
 *      and one revenue credit per charge, the run's total equal to the sum), replays wrote nothing,
 *      and the ledger reconciles. A double charge fails the benchmark.
 *
 * Prints a table and, last, one JSON line with every figure. BENCH_CPU_PROF=<dir> writes a CPU profile
 * of this process (API and clients) for each measured phase: <dir>/charges-{baseline,http,in-process,replays}.cpuprofile.
 */
import os from 'node:os';
import pg from 'pg';
import { sql } from 'kysely';
import { chargeMarketRun, openMarketRun } from '../db/repos/market-runs';
import type { Harness } from '../test/support/stack/harness';
import { findLedgerProblems } from '../test/support/ledger-reconciliation';
import { approvedEventEntry } from '../test/support/market';
import { log, percentile, perSecond, round, runClosedLoop, runHarnessBenchmark, type LoadResult } from './load';
import { profiledPhase } from './phase-profile';

/**
 * CPU time of this process (the API and the clients: user + system) during each measured phase, in
 * ms. Per operation it varies far less with the machine's load than the rates do.
 */
const phaseCpuMs: Record<string, number> = {};

async function measuredPhase<T>(name: string, run: () => Promise<T>): Promise<T> {
  const before = process.cpuUsage();
  try {
    return await profiledPhase(name, run);
  } finally {
    const used = process.cpuUsage(before);
    phaseCpuMs[name] = (used.user + used.system) / 1000;
  }
}

const PROVIDERS = 32;
const PHASE_MS = 15_000;
const MAX_PER_PHASE = 200_000;
const WARMUP = 256;
const WATCHDOG_MS = 420_000;
const UNIT_PRICE_USD = 0.00001;

interface Lane {
  providerId: string;
  entryId: string;
  providerKey: string;
  runId: string;
  token: string;
  /** Keys this lane charged with, in order. */
  keys: string[];
  /** The keys charged through HTTP (replayed through HTTP with the same body). */
  httpKeys: string[];
}

async function setUp(h: Harness): Promise<Lane[]> {
  log(`creating ${PROVIDERS} providers with approved entries and ${PROVIDERS} consumers with open runs`);
  const lanes: Lane[] = [];
  for (let i = 0; i < PROVIDERS; i++) {
    const provider = await h.createUser({ creditUsd: 0 });
    const consumer = await h.createUser({ creditUsd: 5 });
    const entry = await approvedEventEntry(h, provider, [{ eventName: 'row.extracted', unitPriceUsd: UNIT_PRICE_USD }]);
    const opened = await openMarketRun(h.db, {
      consumerId: consumer.userId,
      entryId: entry.entryId,
      selectionId: `bench-${i}`,
      ttlMs: 3_600_000,
      limitMicros: h.config.market.runChargeLimitMicros,
      chargeTokenKey: h.config.market.chargeTokenKey,
    });
    if (opened.outcome !== 'opened') throw new Error(`run not opened: ${opened.outcome}`);
    lanes.push({
      providerId: provider.userId,
      entryId: entry.entryId,
      providerKey: provider.apiKey,
      runId: opened.run.id,
      token: opened.chargeToken,
      keys: [],
      httpKeys: [],
    });
  }
  return lanes;
}

async function charge(h: Harness, lane: Lane, key: string, expectReplay: boolean): Promise<boolean> {
  const response = await fetch(`${h.baseUrl}/api/v1/provider/runs/${lane.runId}/charge`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': lane.providerKey,
      'x-service-charge-token': lane.token,
      'idempotency-key': key,
    },
    body: JSON.stringify({ eventName: 'row.extracted', count: 1 }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await response.json()) as { replayed?: boolean; chargedCount?: number; error?: unknown };
  if (response.status !== 200)
    throw new Error(`charge answered ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
  if (body.replayed !== expectReplay || body.chargedCount !== 1)
    throw new Error(`unexpected charge result: ${JSON.stringify(body)}`);
  return true;
}

/** The charge transaction without the HTTP layer. */
async function chargeInProcess(h: Harness, lane: Lane, key: string): Promise<boolean> {
  const outcome = await chargeMarketRun(h.db, {
    runId: lane.runId,
    providerId: lane.providerId,
    entryId: lane.entryId,
    idempotencyKey: key,
    requestHash: `in-process:${key}`,
    eventName: 'row.extracted',
    count: 1,
    toolName: null,
    commissionRate: h.config.market.commissionRate,
  });
  if (outcome.kind !== 'recorded' || outcome.result.chargedCount !== 1)
    throw new Error(`unexpected in-process charge: ${JSON.stringify(outcome)}`);
  return true;
}

/** One client per provider: each lane runs `task(lane, n)` back to back until the phase ends (or `limit` tasks per lane). */
async function perLane(
  lanes: Lane[],
  task: (lane: Lane, n: number) => Promise<boolean>,
  limit = MAX_PER_PHASE,
): Promise<LoadResult> {
  const result: LoadResult = { attempted: 0, succeeded: 0, failed: 0, elapsedMs: 0, latenciesMs: [], firstError: null };
  const started = performance.now();
  const deadline = started + PHASE_MS;
  await Promise.all(
    lanes.map(async (lane) => {
      for (let n = 0; n < limit && performance.now() < deadline; n++) {
        result.attempted++;
        const taskStarted = performance.now();
        try {
          if (await task(lane, n)) {
            result.succeeded++;
            result.latenciesMs.push(performance.now() - taskStarted);
          } else result.failed++;
        } catch (err) {
          result.failed++;
          result.firstError ??= err instanceof Error ? err.message : String(err);
        }
      }
    }),
  );
  result.elapsedMs = performance.now() - started;
  return result;
}

async function baseline(h: Harness): Promise<LoadResult> {
  await sql`create table if not exists bench_single_row (id int primary key, value bigint not null)`.execute(h.db);
  await sql`insert into bench_single_row select g, 0 from generate_series(1, ${PROVIDERS}::int) g on conflict do nothing`.execute(
    h.db,
  );
  const pool = new pg.Pool({ connectionString: h.databaseUrl, max: PROVIDERS });
  try {
    const run = async (i: number) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await client.query('update bench_single_row set value = value + 1 where id = $1', [(i % PROVIDERS) + 1]);
        await client.query('commit');
        return true;
      } finally {
        client.release();
      }
    };
    await runClosedLoop(WARMUP, PROVIDERS, PHASE_MS, run);
    log(`baseline: raw single-row transactions at ${PROVIDERS} clients for ${PHASE_MS / 1000}s`);
    return await measuredPhase('charges-baseline', () => runClosedLoop(MAX_PER_PHASE, PROVIDERS, PHASE_MS, run));
  } finally {
    await pool.end();
  }
}

interface Books {
  accepted: number;
  chargeRows: number;
  duplicateKeys: number;
  debits: number;
  revenueCredits: number;
  runsOff: number;
  ledgerProblems: string[];
}

async function checkBooks(h: Harness, lanes: Lane[]): Promise<Books> {
  const runIds = lanes.map((l) => l.runId);
  const accepted = lanes.reduce((n, l) => n + l.keys.length, 0);
  const rows = await h.db
    .selectFrom('market_run_charges')
    .select(['run_id', 'idempotency_key'])
    .where('run_id', 'in', runIds)
    .execute();
  const distinct = new Set(rows.map((r) => `${r.run_id} ${r.idempotency_key}`));
  const entries = await h.db
    .selectFrom('ledger_entries')
    .select(['kind'])
    .where('market_run_id', 'in', runIds)
    .execute();
  const runsOff = await sql<{ id: string }>`
    select r.id from market_runs r
    where r.id in (${sql.join(runIds.map((id) => sql`${id}::uuid`))})
      and r.charged_micros <> (select coalesce(sum(c.total_micros), 0) from market_run_charges c where c.run_id = r.id)`.execute(
    h.db,
  );
  return {
    accepted,
    chargeRows: rows.length,
    duplicateKeys: rows.length - distinct.size,
    debits: entries.filter((e) => e.kind === 'usage').length,
    revenueCredits: entries.filter((e) => e.kind === 'revenue').length,
    runsOff: runsOff.rows.length,
    ledgerProblems: (await findLedgerProblems(h.db)).map((p) => `${p.check} (${p.rows.length})`),
  };
}

function printReport(figures: {
  baseline: LoadResult;
  charges: LoadResult;
  inProcess: LoadResult;
  replays: LoadResult;
  books: Books;
  loadAverages: number[];
}): void {
  const { baseline: base, charges, inProcess, replays, books } = figures;
  const p = (r: LoadResult, q: number) => round(percentile(r.latenciesMs, q), 1);
  const cpuPerOp = (phase: string, r: LoadResult) => round((phaseCpuMs[phase] ?? NaN) / r.succeeded, 3);
  const rows = [
    [
      `at ${PROVIDERS} concurrent clients, ${PHASE_MS / 1000}s each`,
      'ok',
      'per second',
      'ratio to baseline',
      'p50 ms',
      'p99 ms',
      'CPU ms/op here',
    ],
    [
      'raw single-row Postgres transactions (baseline)',
      String(base.succeeded),
      String(round(perSecond(base), 1)),
      '1',
      String(p(base, 50)),
      String(p(base, 99)),
      String(cpuPerOp('charges-baseline', base)),
    ],
    [
      'production charges (new idempotency key each)',
      String(charges.succeeded),
      String(round(perSecond(charges), 1)),
      String(round(perSecond(charges) / perSecond(base), 3)),
      String(p(charges, 50)),
      String(p(charges, 99)),
      String(cpuPerOp('charges-http', charges)),
    ],
    [
      'the same transaction in-process (no HTTP)',
      String(inProcess.succeeded),
      String(round(perSecond(inProcess), 1)),
      String(round(perSecond(inProcess) / perSecond(base), 3)),
      String(p(inProcess, 50)),
      String(p(inProcess, 99)),
      String(cpuPerOp('charges-in-process', inProcess)),
    ],
    [
      'replayed charges (same key and body again)',
      String(replays.succeeded),
      String(round(perSecond(replays), 1)),
      String(round(perSecond(replays) / perSecond(base), 3)),
      String(p(replays, 50)),
      String(p(replays, 99)),
      String(cpuPerOp('charges-replays', replays)),
    ],
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c])).join(' | ');
  console.log('');
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const row of rows.slice(1)) console.log(line(row));
  for (const [name, r] of Object.entries({ baseline: base, charges, inProcess, replays }))
    if (r.failed) console.log(`${name}: ${r.failed} failed; first error: ${r.firstError}`);
  console.log('');
  console.log(
    `books: ${books.accepted} accepted charges, ${books.chargeRows} charge rows, ${books.duplicateKeys} duplicate keys, ${books.debits} consumer debits, ` +
      `${books.revenueCredits} provider revenue credits, ${books.runsOff} runs whose total differs from their charges; ledger problems: ${books.ledgerProblems.length ? books.ledgerProblems.join('; ') : 'none'}`,
  );
  console.log(
    `machine: ${os.cpus().length} CPUs, 1-min load average at start/end ${figures.loadAverages.map((l) => round(l, 1)).join(' / ')}`,
  );
  console.log('');
  const figure = (r: LoadResult) => ({
    ok: r.succeeded,
    failed: r.failed,
    per_second: round(perSecond(r), 1),
    p50_ms: p(r, 50),
    p99_ms: p(r, 99),
  });
  console.log(
    JSON.stringify({
      clients: PROVIDERS,
      phase_seconds: PHASE_MS / 1000,
      baseline_single_row_tx: figure(base),
      charges: { ...figure(charges), ratio_to_baseline: round(perSecond(charges) / perSecond(base), 3) },
      charges_in_process: { ...figure(inProcess), ratio_to_baseline: round(perSecond(inProcess) / perSecond(base), 3) },
      replays: { ...figure(replays), ratio_to_baseline: round(perSecond(replays) / perSecond(base), 3) },
      books,
      cpus: os.cpus().length,
      load_average_1m: figures.loadAverages.map((l) => round(l, 2)),
      bench_process_cpu_ms_per_op: {
        baseline: cpuPerOp('charges-baseline', base),
        charges: cpuPerOp('charges-http', charges),
        charges_in_process: cpuPerOp('charges-in-process', inProcess),
        replays: cpuPerOp('charges-replays', replays),
      },
    }),
  );
}

void runHarnessBenchmark(WATCHDOG_MS, async (h) => {
  const lanes = await setUp(h);
  const loadAtStart = os.loadavg()[0];
  const baseResult = await baseline(h);

  log('warming up the charge endpoint');
  await perLane(
    lanes,
    async (lane, n) => {
      const key = `warmup-${n}`;
      await charge(h, lane, key, false);
      lane.keys.push(key);
      return true;
    },
    WARMUP / PROVIDERS,
  );
  log(`production charges at ${PROVIDERS} concurrent providers for ${PHASE_MS / 1000}s`);
  const charges = await measuredPhase('charges-http', () =>
    perLane(lanes, async (lane, n) => {
      const key = `event-${n}`;
      await charge(h, lane, key, false);
      lane.keys.push(key);
      lane.httpKeys.push(key);
      return true;
    }),
  );
  log(`the charge transaction in-process at ${PROVIDERS} concurrent providers for ${PHASE_MS / 1000}s`);
  const inProcess = await measuredPhase('charges-in-process', () =>
    perLane(lanes, async (lane, n) => {
      const key = `direct-${n}`;
      await chargeInProcess(h, lane, key);
      lane.keys.push(key);
      return true;
    }),
  );
  log(`replays of the keys just charged, at ${PROVIDERS} concurrent providers for ${PHASE_MS / 1000}s`);
  const replays = await measuredPhase('charges-replays', () =>
    perLane(lanes, (lane, n) => charge(h, lane, lane.httpKeys[n % lane.httpKeys.length], true)),
  );

  const books = await checkBooks(h, lanes);
  printReport({
    baseline: baseResult,
    charges,
    inProcess,
    replays,
    books,
    loadAverages: [loadAtStart, os.loadavg()[0]],
  });
  const double =
    books.chargeRows !== books.accepted ||
    books.duplicateKeys !== 0 ||
    books.debits !== books.accepted ||
    books.revenueCredits !== books.accepted ||
    books.runsOff !== 0;
  if (double) throw new Error('double (or missing) charges found: see "books" above');
  if (books.ledgerProblems.length) throw new Error(`the ledger does not reconcile: ${books.ledgerProblems.join('; ')}`);
  if (charges.failed || inProcess.failed || replays.failed) throw new Error('some charges failed: see above');
});
