import type { Page } from 'playwright-core';
import { Context } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import { appendJobLog } from '../../db/repos/jobs';
import { recordUsage } from '../../db/repos/job-usage';
import { BROWSER_MICROS_PER_SECOND, PROXY_MICROS_PER_REQUEST } from '../../lib/billing/pricing';
import type { BrowserPool } from './pool';
import { renderPage } from './render';
import { CaptchaSolveError } from './captcha-solver';
import { SsrfBlockedError, type NetworkPolicy } from '../../lib/net/ssrf';
import { findFetchError } from '../../lib/net/transport';
import { normalizeCookies } from '../../lib/page/cookies';
import { htmlToPage } from '../../lib/page/convert';
import { attemptKey, withHeartbeat } from '../heartbeat';
import { loadJob } from '../jobs';
import { rejectScrape } from '../rejections';
import { assertCaptchaAvailable, requestedProxy, type AdapterConfig } from '../page/adapters';
import { saveSnapshot } from '../../db/repos/page-snapshots';
import { solvePageCaptcha } from './captcha';

export interface BrowserDeps extends AdapterConfig {
  db: Db;
  policy: NetworkPolicy;
  masterKey: Buffer;
  pool: BrowserPool;
}

export function createBrowserActivities(deps: BrowserDeps) {
  const { db } = deps;
  return {
    /** Renders the job's page in Chromium (every request through the SSRF guard), solving a captcha when asked to. */
    async renderPage(jobId: string): Promise<void> {
      const { request } = await loadJob(db, jobId, 'scrape', deps.masterKey);
      assertCaptchaAvailable(deps, request);
      const proxy = requestedProxy(deps, {
        enabled: request.mobile_proxy_enabled,
        country: request.mobile_proxy_country,
        field: 'mobile_proxy_enabled',
      });
      const cookies = request.cookies === undefined ? [] : normalizeCookies(request.cookies, request.url);
      const started = Date.now();
      let solves = 0;
      const solveIfAsked = async (page: Page) => {
        if (request.captcha_solver_enabled) await solvePageCaptcha(deps, jobId, page, `captcha-${++solves}`);
      };
      try {
        const rendered = await withHeartbeat(() =>
          renderPage(deps.pool, {
            url: request.url,
            cookies,
            policy: deps.policy,
            proxy,
            timeoutMs: 60_000,
            onLoaded: solveIfAsked,
            signal: Context.current().cancellationSignal,
          }),
        );
        const page = htmlToPage(rendered.html, rendered.finalUrl);
        await saveSnapshot(db, jobId, {
          ...page,
          finalUrl: rendered.finalUrl,
          statusCode: rendered.status,
          renderedWith: 'browser',
        });
        await appendJobLog(
          db,
          jobId,
          `rendered ${rendered.finalUrl} in Chromium (${rendered.status}, ${page.markdown.length} chars of markdown)`,
        );
        if (rendered.status >= 400) throw rejectScrape(`The page answered HTTP ${rendered.status}`);
      } catch (err) {
        if (err instanceof SsrfBlockedError) throw rejectScrape(`Blocked by the SSRF guard: ${err.message}`);
        // The operator's proxy failed the navigation, not the site: the job says so at once.
        if (findFetchError(err)?.code === 'proxy') throw rejectScrape((err as Error).message);
        if (err instanceof CaptchaSolveError) throw rejectScrape(err.message);
        throw err;
      } finally {
        const seconds = (Date.now() - started) / 1000;
        await recordUsage(db, {
          jobId,
          usageKey: attemptKey(jobId, 'browser'),
          kind: 'browser',
          quantity: seconds,
          costMicros: Math.ceil(seconds * BROWSER_MICROS_PER_SECOND),
        });
        if (proxy)
          await recordUsage(db, {
            jobId,
            usageKey: attemptKey(jobId, 'browser-proxy'),
            kind: 'proxy',
            quantity: 1,
            costMicros: PROXY_MICROS_PER_REQUEST,
          });
      }
    },
  };
}

export type BrowserActivities = ReturnType<typeof createBrowserActivities>;
