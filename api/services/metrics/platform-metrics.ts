import type { Db } from '../../../db/connect';
import { readPlatformState, type PlatformState } from '../../../db/repos/platform-state';
import type { JobKind, JobStatus } from '../../../db/schema';
import type { Logger } from '../../../lib/log';
import { processMetrics } from '../../../lib/metrics';

const JOB_KINDS: JobKind[] = ['scrape', 'agentic', 'automation', 'agent-market'];
const JOB_STATUSES: JobStatus[] = ['pending', 'processing', 'completed', 'failed'];

interface Family {
  name: string;
  help: string;
  type: 'gauge' | 'counter';
  samples: { labels?: Record<string, string>; value: number }[];
}

function render(families: Family[]): string {
  return families
    .map((f) => {
      const lines = [`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`];
      for (const s of f.samples) {
        const labels = s.labels
          ? `{${Object.entries(s.labels)
              .map(([k, v]) => `${k}="${v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}"`)
              .join(',')}}`
          : '';
        lines.push(`${f.name}${labels} ${s.value}`);
      }
      return lines.join('\n');
    })
    .join('\n\n');
}

/**
 * Series read from Postgres at scrape time: they describe the whole platform whichever process did
 * the work (money and jobs are the database's truth). When the read fails, platform_state_up is 0
 * and the other series are left out rather than reported as zero.
 */
function platformStateFamilies(state: PlatformState | null): Family[] {
  const up: Family = {
    name: 'platform_state_up',
    help: '1 when this scrape could read the platform state from Postgres, else 0',
    type: 'gauge',
    samples: [{ value: state ? 1 : 0 }],
  };
  if (!state) return [up];
  const ledger = (kind: string) => state.ledger.find((row) => row.kind === kind);
  const counts = new Map(state.jobs.map((row) => [`${row.kind}/${row.status}`, row.count]));
  const kinds = [...new Set([...JOB_KINDS, ...state.jobs.map((row) => row.kind)])];
  const families: Family[] = [
    up,
    {
      name: 'platform_jobs',
      help: 'Jobs by kind and state',
      type: 'gauge',
      samples: kinds.flatMap((kind) =>
        JOB_STATUSES.map((status) => ({
          labels: { kind, state: status },
          value: counts.get(`${kind}/${status}`) ?? 0,
        })),
      ),
    },
    {
      name: 'platform_debits_total',
      help: 'Usage debits (ledger usage entries)',
      type: 'counter',
      samples: [{ value: ledger('usage')?.entries ?? 0 }],
    },
    {
      name: 'platform_debits_micros_total',
      help: 'Usage debited from wallets, in micro-USD',
      type: 'counter',
      samples: [{ value: -(ledger('usage')?.amountMicros ?? 0) }],
    },
    {
      name: 'platform_credits_micros_total',
      help: 'Credit added to wallets, in micro-USD',
      type: 'counter',
      samples: [{ value: ledger('credit')?.amountMicros ?? 0 }],
    },
    {
      name: 'platform_wallet_balance_micros',
      help: 'Sum of all wallet balances (ledger balance), in micro-USD',
      type: 'gauge',
      samples: [{ value: state.wallets.balanceMicros }],
    },
  ];
  families.push(
    {
      name: 'platform_holds_open',
      help: 'Open holds: amounts reserved for running jobs and open market runs, not settled yet',
      type: 'gauge',
      samples: [{ value: state.holds.open }],
    },
    {
      name: 'platform_holds_open_micros',
      help: 'Sum of the open holds (unused part for market runs), in micro-USD',
      type: 'gauge',
      samples: [{ value: state.holds.micros }],
    },
  );
  return families;
}

/**
 * GET /metrics: Prometheus text format; this process's series plus the platform state read from Postgres (a
 * failed read is logged on `logger` and reported as platform_state_up 0).
 */
export async function metricsText(db: Db, logger: Logger): Promise<{ contentType: string; body: string }> {
  const [own, state] = await Promise.all([
    processMetrics.metrics(),
    readPlatformState(db).catch((err) => {
      logger.warn({ err }, 'metrics: could not read the platform state from the database');
      return null;
    }),
  ]);
  return {
    contentType: processMetrics.contentType,
    body: `${own.trimEnd()}\n\n${render(platformStateFamilies(state))}\n`,
  };
}
