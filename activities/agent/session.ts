import { createHash } from 'node:crypto';
import type { Page } from 'playwright-core';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import type { AgentAction } from '../../db/schema';
import { findSealedCheckpoint, saveSealedCheckpoint } from '../../db/repos/agent-checkpoints';
import { saveObservedStep } from '../../db/repos/agent-steps';
import { recordUsage } from '../../db/repos/job-usage';
import { appendJobLog } from '../../db/repos/jobs';
import { BROWSER_MICROS_PER_SECOND, PROXY_MICROS_PER_REQUEST } from '../../lib/billing/pricing';
import { seal, unseal } from '../../lib/crypto';
import { executeAction as runBrowserAction } from './browser/tools';
import { observe } from './browser/observation';
import type { SessionCheckpoint } from './browser/session';
import { normalizeCookies } from '../../lib/page/cookies';
import type { NetworkPolicy } from '../../lib/net/ssrf';
import { attemptKey, withHeartbeat } from '../heartbeat';
import { assertCaptchaAvailable, requestedProxy, type AdapterConfig } from '../page/adapters';
import { CaptchaSolveError } from '../browser/captcha-solver';
import { solvePageCaptcha } from '../browser/captcha';
import { loadAgentJob, OPTIMIZATION_PROFILES } from './job';
import type { SessionRegistry } from './session-registry';

export interface SessionHandle {
  taskQueue: string;
  sessionId: string;
}

export interface SessionDeps extends AdapterConfig {
  db: Db;
  policy: NetworkPolicy;
  masterKey: Buffer;
  registry: SessionRegistry;
}

export interface ObservationSummary {
  url: string;
  /** Hash of what the model sees: equal hashes mean the page did not change. */
  stateHash: string;
  readable: boolean;
  screenshot: boolean;
}

function sessionLost(): ApplicationFailure {
  return ApplicationFailure.create({
    message: 'browser session is not on this worker',
    type: 'SessionLost',
    nonRetryable: true,
  });
}

export function createSessionOpenerActivities(deps: SessionDeps) {
  return {
    /** Runs on the shared browser queue: opens (or reopens from the checkpoint) a session on whichever worker took it. */
    async openBrowserSession({ jobId }: { jobId: string }): Promise<SessionHandle> {
      const { request } = await loadAgentJob(deps.db, jobId, deps.masterKey);
      assertCaptchaAvailable(deps, request);
      const proxy = requestedProxy(deps, {
        enabled: request.proxy_enabled,
        country: request.proxy_country,
        field: 'proxy_enabled',
      });
      const stored = await findSealedCheckpoint(deps.db, jobId);
      const checkpoint = stored
        ? (JSON.parse(unseal(deps.masterKey, stored, `checkpoint:${jobId}`)) as SessionCheckpoint)
        : null;
      // Waiting for a browser slot heartbeats (busy, not gone) and ends when the run gives up on this call.
      const sessionId = await withHeartbeat(() =>
        deps.registry.open(
          {
            headless: request.headless,
            policy: deps.policy,
            proxy,
            sensitiveData: request.sensitive_data ?? [],
            cookies: request.cookies,
            checkpoint,
          },
          {
            signal: Context.current().cancellationSignal,
            onWait: (inUse) =>
              void appendJobLog(
                deps.db,
                jobId,
                `waiting for a free browser (all ${inUse} in use on this worker)`,
              ).catch(() => undefined),
          },
        ),
      );
      await appendJobLog(
        deps.db,
        jobId,
        checkpoint
          ? 'browser session reopened from the last checkpoint'
          : `browser session opened (${request.headless ? 'headless' : 'headed'})`,
      );
      if (proxy)
        await recordUsage(deps.db, {
          jobId,
          usageKey: attemptKey(jobId, 'session-proxy'),
          kind: 'proxy',
          quantity: 1,
          costMicros: PROXY_MICROS_PER_REQUEST,
        });
      return { taskQueue: deps.registry.taskQueue, sessionId };
    },
  };
}

/** Activities on this worker's own task queue: they need the live browser context held here. */
export function createSessionActivities(deps: SessionDeps) {
  const { db, registry } = deps;

  async function chargeBrowserTime(jobId: string, what: string, startedAt: number) {
    const seconds = (Date.now() - startedAt) / 1000;
    await recordUsage(db, {
      jobId,
      usageKey: attemptKey(jobId, what),
      kind: 'browser',
      quantity: seconds,
      costMicros: Math.ceil(seconds * BROWSER_MICROS_PER_SECOND),
    });
  }

  /** A captcha widget on the page is solved through the solver adapter before the model looks at the page. */
  async function solveVisibleCaptcha(jobId: string, page: Page, key: string) {
    try {
      await solvePageCaptcha(deps, jobId, page, `captcha-${key}`);
    } catch (err) {
      if (!(err instanceof CaptchaSolveError)) throw err;
      await appendJobLog(db, jobId, `captcha not solved: ${err.message}`);
    }
  }

  return {
    async observePage(input: {
      jobId: string;
      sessionId: string;
      taskIndex: number;
      step: number;
    }): Promise<ObservationSummary> {
      const live = registry.get(input.sessionId);
      if (!live) throw sessionLost();
      const startedAt = Date.now();
      try {
        const { request } = await loadAgentJob(db, input.jobId);
        if (request.captcha_solver_enabled && deps.captcha)
          await solveVisibleCaptcha(input.jobId, live.session.currentPage(), `${input.taskIndex}-${input.step}`);
        const profile = OPTIMIZATION_PROFILES[request.optimization_mode];
        const wantScreenshot =
          request.vision_mode === 'visual' || (request.vision_mode === 'auto' && live.screenshotRequested);
        const options = { maxChars: profile.observationChars, detail: request.vision_detail_level };
        let observation = await withHeartbeat(() =>
          observe(live.session, { ...options, includeScreenshot: wantScreenshot }),
        );
        if (request.vision_mode === 'auto' && !observation.readable && !observation.screenshot) {
          observation = await withHeartbeat(() => observe(live.session, { ...options, includeScreenshot: true }));
        }
        live.screenshotRequested = false;
        const rendered = live.session.mask(observation.rendered);
        const screenshot = observation.screenshot
          ? `data:${observation.screenshot.mimeType};base64,${observation.screenshot.base64}`
          : null;
        const values = {
          url: live.session.mask(observation.url),
          observation: rendered,
          screenshot,
          goal: null,
          actions: '[]',
          outcomes: '[]',
        };
        await saveObservedStep(db, input, values);
        return {
          url: values.url,
          stateHash: createHash('sha256').update(rendered).digest('hex').slice(0, 16),
          readable: observation.readable,
          screenshot: screenshot !== null,
        };
      } finally {
        await chargeBrowserTime(input.jobId, `observe-${input.taskIndex}-${input.step}`, startedAt);
      }
    },

    async executeAction(input: {
      jobId: string;
      sessionId: string;
      taskIndex: number;
      step: number;
      actionIndex: number;
      action: AgentAction;
    }) {
      const live = registry.get(input.sessionId);
      if (!live) throw sessionLost();
      const startedAt = Date.now();
      try {
        const { action } = input;
        if (
          (action.name === 'navigate' || action.name === 'open_tab') &&
          live.pendingCookies !== undefined &&
          typeof action.args.url === 'string'
        ) {
          try {
            await live.session.context.addCookies(normalizeCookies(live.pendingCookies, action.args.url));
          } catch (err) {
            return {
              ok: false,
              navigated: false,
              message: `could not set the request's cookies: ${(err as Error).message}`,
            };
          }
          live.pendingCookies = undefined;
        }
        const result = await withHeartbeat(() => runBrowserAction(live.session, action));
        if (result.screenshotRequested) live.screenshotRequested = true;
        const checkpoint = await live.session.checkpoint();
        const sealed = seal(deps.masterKey, JSON.stringify(checkpoint), `checkpoint:${input.jobId}`);
        await saveSealedCheckpoint(db, input.jobId, sealed);
        return { ok: result.ok, navigated: result.navigated, message: live.session.mask(result.message) };
      } finally {
        await chargeBrowserTime(input.jobId, `act-${input.taskIndex}-${input.step}-${input.actionIndex}`, startedAt);
      }
    },

    async closeBrowserSession(input: { jobId: string; sessionId: string }): Promise<void> {
      await registry.close(input.sessionId);
    },

    /**
     * The run's hold on its session, for as long as the run uses it: heartbeats tell the run this worker is
     * alive (however busy), and its failure tells it the worker is gone. Ends when the session closes.
     */
    async holdBrowserSession(input: { jobId: string; sessionId: string }): Promise<void> {
      const context = Context.current();
      const keeperId = `${context.info.workflowExecution?.runId ?? context.info.workflowType}:${context.info.activityId}`;
      const held = await registry.hold(input.sessionId, keeperId, {
        signal: context.cancellationSignal,
        heartbeat: () => context.heartbeat(),
      });
      if (!held) throw sessionLost();
    },
  };
}

export type SessionOpenerActivities = ReturnType<typeof createSessionOpenerActivities>;
export type SessionActivities = ReturnType<typeof createSessionActivities>;
