import type { Db } from '../../db/connect';
import { appendJobLog } from '../../db/repos/jobs';
import { recordUsage } from '../../db/repos/job-usage';
import { PROXY_MICROS_PER_REQUEST } from '../../lib/billing/pricing';
import { fetchBuffered } from '../../lib/net/buffered-fetch';
import type { NetworkPolicy } from '../../lib/net/ssrf';
import { findFetchError, ssrfRefusal } from '../../lib/net/transport';
import { cookieHeaderFor, normalizeCookies } from '../../lib/page/cookies';
import { htmlToPage, needsBrowser } from '../../lib/page/convert';
import { loadJob } from '../jobs';
import { attemptKey } from '../heartbeat';
import { rejectScrape } from '../rejections';
import { assertCaptchaAvailable, requestedProxy, type AdapterConfig } from './adapters';
import { saveSnapshot } from '../../db/repos/page-snapshots';

export const DESKTOP_USER_AGENT =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';

/** Statuses that often mean "bot check": worth a real browser before giving up. */
const BROWSER_RETRY_STATUSES = new Set([401, 403, 429, 503]);
const CAPTCHA_MARKERS = /class=["'][^"']*(g-recaptcha|h-captcha|cf-turnstile)|data-sitekey=/i;

export interface PageDeps extends AdapterConfig {
  db: Db;
  policy: NetworkPolicy;
  masterKey: Buffer;
}

export interface FetchOutcome {
  needsBrowser: boolean;
  reason: string;
}

function textAsMarkdown(body: string, contentType: string): string {
  if (contentType.includes('json')) {
    try {
      return '```json\n' + JSON.stringify(JSON.parse(body), null, 2) + '\n```';
    } catch {
      return body;
    }
  }
  return body;
}

export function createPageActivities(deps: PageDeps) {
  return {
    /** The fast path: one guarded HTTP fetch. Says whether the page needs Chromium, judged by its content. */
    async fetchPage(jobId: string): Promise<FetchOutcome> {
      const { request } = await loadJob(deps.db, jobId, 'scrape', deps.masterKey);
      assertCaptchaAvailable(deps, request);
      const proxy = requestedProxy(deps, {
        enabled: request.mobile_proxy_enabled,
        country: request.mobile_proxy_country,
        field: 'mobile_proxy_enabled',
      });
      let cookies;
      try {
        cookies = request.cookies === undefined ? [] : normalizeCookies(request.cookies, request.url);
      } catch (err) {
        throw rejectScrape(`cookies: ${(err as Error).message}`);
      }
      let response;
      try {
        const cookie = cookieHeaderFor(cookies, request.url);
        response = await fetchBuffered(request.url, {
          policy: deps.policy,
          proxy,
          headers: {
            'user-agent': DESKTOP_USER_AGENT,
            accept: 'text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5',
            'accept-language': 'en-US,en;q=0.9',
            ...(cookie && { cookie }),
          },
        });
      } catch (err) {
        const refusal = ssrfRefusal(err);
        if (refusal) throw rejectScrape(`Blocked by the SSRF guard: ${refusal.message}`);
        // The operator's proxy failed, not the site: no retry storm, the job says so at once.
        if (findFetchError(err)?.code === 'proxy') throw rejectScrape((err as Error).message);
        throw err;
      } finally {
        if (proxy)
          await recordUsage(deps.db, {
            jobId,
            usageKey: attemptKey(jobId, 'proxy'),
            kind: 'proxy',
            quantity: 1,
            costMicros: PROXY_MICROS_PER_REQUEST,
          });
      }
      const contentType = response.headers['content-type'] ?? 'text/html';
      const body = response.body.toString('utf8');
      const hops = response.redirects.length ? ` after ${response.redirects.length} redirect(s)` : '';
      // The fetch's log line is written with whatever comes next (one statement per outcome).
      const fetchedLine = `fetched ${response.url} over HTTP: ${response.status}${hops}`;

      if (BROWSER_RETRY_STATUSES.has(response.status))
        return handOff(`the site answered HTTP ${response.status} to a plain fetch`);
      if (response.status >= 400) {
        await appendJobLog(deps.db, jobId, fetchedLine);
        throw rejectScrape(`The page answered HTTP ${response.status}`);
      }
      if (request.captcha_solver_enabled && CAPTCHA_MARKERS.test(body)) return handOff('the page shows a captcha');
      const isHtml = /html|xml/.test(contentType);
      if (isHtml) {
        const need = needsBrowser(body, contentType);
        if (need.needed) return handOff(need.reason);
      }
      const page = isHtml
        ? htmlToPage(body, response.url)
        : {
            markdown: textAsMarkdown(body, contentType),
            metadata: { title: null, description: null, links: [], language: null },
          };
      await saveSnapshot(
        deps.db,
        jobId,
        { ...page, finalUrl: response.url, statusCode: response.status, renderedWith: 'http' },
        [fetchedLine, `converted page to markdown (${page.markdown.length} chars, no browser needed)`],
      );
      return { needsBrowser: false, reason: 'static content' };

      async function handOff(reason: string): Promise<FetchOutcome> {
        await appendJobLog(deps.db, jobId, [fetchedLine, `page needs a browser: ${reason}`]);
        return { needsBrowser: true, reason };
      }
    },
  };
}

export type PageActivities = ReturnType<typeof createPageActivities>;
