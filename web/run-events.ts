import { PassThrough } from 'node:stream';
import type { WebContext } from './context';
import { onJobTerminal } from '../db/job-terminal-events';
import { ownJob } from '../api/services/jobs/own-jobs';
import type { Job } from '../db/schema';
import { log } from '../lib/log';
import type { WebDeps } from './deps';
import { utc } from './format';
import type { Renderable } from './page';
import { StatusBadge } from './pages/console-home';
import { isTerminal, LiveNote, LogLine, RunOutcome } from './pages/run';

/** How often a followed run is re-read. A run that ends in this process wakes the stream at once. */
export const RUN_EVENTS_POLL_MS = 1_000;
/** A stream ends after this long; the browser reconnects with Last-Event-ID and carries on. */
export const RUN_EVENTS_MAX_MS = 10 * 60_000;
const HEARTBEAT_MS = 15_000;

/** The swap htmx 4 applies to a part of a message: `<hx-partial>` with its target and swap style. */
const partial = async (target: string, swap: string, content: Renderable | Renderable[]) =>
  `<hx-partial hx-target="${target}" hx-swap="${swap}">${(await Promise.all([content].flat().map((c) => c.toString()))).join('')}</hx-partial>`;

/** One server-sent event: each line of the data on its own `data:` line. */
function event(fields: { id?: number; event?: string; data: string }): string {
  const lines = fields.data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`);
  return `${fields.id !== undefined ? `id: ${fields.id}\n` : ''}${fields.event ? `event: ${fields.event}\n` : ''}${lines.join('\n')}\n\n`;
}

/** Where the browser is in the run's log: Last-Event-ID on a reconnect, else ?after= (the lines the page was rendered with). */
function cursorOf(ctx: WebContext): number {
  for (const raw of [ctx.get('last-event-id'), String(ctx.query.after ?? '')]) {
    if (/^\d{1,7}$/.test(raw)) return Number(raw);
  }
  return 0;
}

/**
 * GET /console/runs/:id/events: the run page's live updates as server-sent events (htmx SSE
 * extension). Each message carries `<hx-partial>`s: new log lines appended to the log, the status
 * and last-change time replaced; its id is the number of log lines sent so far, so a reconnect
 * (Last-Event-ID) resumes where it left off. When the run ends the outcome is swapped in and a
 * `done` event closes the stream (the page has hx-sse:close="done").
 */
export function streamRunEvents(ctx: WebContext, deps: WebDeps, userId: string, first: Job): void {
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.status = 200;
  ctx.type = 'text/event-stream';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Accel-Buffering', 'no');
  const stream = new PassThrough();
  ctx.body = stream;

  const gone = new AbortController();
  // The response's close, not the request's: a request emits 'close' once its (empty) body is read.
  ctx.res.once('close', () => gone.abort());
  let sent = Math.min(cursorOf(ctx), first.logs.length);
  let shown: { status: string; updated: number } | null = null;
  let lastWrite = Date.now();
  const write = (text: string) => {
    lastWrite = Date.now();
    stream.write(text);
  };

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        unsubscribe();
        gone.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      const unsubscribe = onJobTerminal(first.id, done);
      gone.signal.addEventListener('abort', done, { once: true });
    });

  const pump = async () => {
    const deadline = Date.now() + RUN_EVENTS_MAX_MS;
    let job: Job | undefined = first;
    while (job && !gone.signal.aborted) {
      const parts: string[] = [];
      if (job.logs.length > sent)
        parts.push(
          await partial(
            '#run-logs',
            'beforeend',
            job.logs.slice(sent).map((line) => LogLine({ line })),
          ),
        );
      const updated = new Date(job.updated_at).getTime();
      if (!shown || shown.status !== job.status || shown.updated !== updated) {
        parts.push(await partial('#run-status', 'outerHTML', StatusBadge({ id: 'run-status', status: job.status })));
        // utc() writes digits, dashes, colons and "UTC" only: nothing to escape.
        const time = utc(job.updated_at);
        parts.push(await partial('#run-updated', 'innerHTML', { toString: () => time }));
        shown = { status: job.status, updated };
      }
      if (isTerminal(job.status)) {
        parts.push(
          await partial('#run-outcome', 'outerHTML', RunOutcome({ job })),
          await partial('#run-live-note', 'outerHTML', LiveNote({ job })),
        );
      }
      sent = job.logs.length;
      if (parts.length) write(event({ id: sent, data: parts.join('') }));
      if (isTerminal(job.status)) {
        write(event({ id: sent, event: 'done', data: 'the run has ended' }));
        break;
      }
      if (Date.now() > deadline) break;
      await pause(RUN_EVENTS_POLL_MS);
      if (Date.now() - lastWrite > HEARTBEAT_MS) write(': still following\n\n');
      job = gone.signal.aborted ? undefined : await ownJob(deps.db, userId, first.id);
    }
  };
  pump()
    .catch((err: unknown) => (ctx.state.log ?? log()).warn({ err, jobId: first.id }, 'run events stream failed'))
    .finally(() => stream.end());
}
