import { randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import { accountSummary } from '../../api/services/account';
import { findOwnJob, listRecentJobs } from '../../db/repos/jobs';
import { listAgentTransactions } from '../../db/repos/agent-transactions';
import { findApiKeyOwner } from '../../db/repos/market-tool-calls';
import { listOpenHolds, spendPerCategory, spendPerDay, spendPerListing } from '../../db/repos/spending';
import { microsToUsd } from '../../lib/money';
import {
  countLiveSessions,
  createSession,
  revokeSession,
  revokeUserSessions,
  type WebSession,
} from '../../db/repos/sessions';
import { requireFormToken, requireSameOrigin } from '../csrf';
import type { WebDeps } from '../deps';
import { readForm } from '../forms';
import { pageNotFound, sendPage } from '../page';
import { ConsoleHomePage } from '../pages/console-home';
import { RunPage } from '../pages/run';
import { SignInPage } from '../pages/sign-in';
import { UsagePage } from '../pages/usage';
import { streamRunEvents } from '../run-events';
import {
  clearCookie,
  currentSession,
  readCookie,
  sessionLifetimes,
  setCookie,
  SESSION_COOKIE,
  SIGN_IN_COOKIE,
} from '../session';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SIGN_IN_FORM_SECONDS = 3_600;
const RECENT_RUNS = 25;
/** The usage page's window (days, today included) and its transactions per page. */
const USAGE_DAYS = 30;
const TRANSACTIONS_PAGE_SIZE = 20;

/** Where to go after signing in: a console address only (never another site). */
function safeNext(raw: unknown): string | null {
  return typeof raw === 'string' && /^\/(console|market)(\/[A-Za-z0-9_.-]+)*$/.test(raw) && !raw.includes('..')
    ? raw
    : null;
}

function seeOther(ctx: Context, url: string): void {
  ctx.status = 303;
  ctx.redirect(url);
}

/**
 * The console: sign-in with an API key into a server-side session, the account's home (money and
 * recent runs) and a page per run with live logs. Every POST passes the Origin/Sec-Fetch-Site check
 * and brings back its form's token.
 */
export function consoleRoutes(deps: WebDeps): Router {
  const router = new Router({ prefix: '/console' });
  const lifetimes = sessionLifetimes(deps.config);

  /** The session, or a redirect to the sign-in page (which then comes back here). */
  async function signedIn(ctx: Context): Promise<WebSession | null> {
    const session = await currentSession(ctx, deps);
    if (session) return session;
    if (readCookie(ctx, SESSION_COOKIE) !== null) clearCookie(ctx, SESSION_COOKIE);
    ctx.redirect(`/console/sign-in?next=${encodeURIComponent(ctx.path)}`);
    return null;
  }

  async function signInPage(ctx: Context, next: string | null, problem: string | null, status = 200) {
    const formToken = randomBytes(24).toString('base64url');
    setCookie(ctx, SIGN_IN_COOKIE, formToken, SIGN_IN_FORM_SECONDS);
    await sendPage(
      ctx,
      <SignInPage
        formToken={formToken}
        next={next}
        problem={problem}
        sessionHours={Math.round(lifetimes.maxMs / 3_600_000)}
      />,
      { status, private: true },
    );
  }

  router.get('/', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const [account, jobs, liveSessions] = await Promise.all([
      accountSummary(deps.db, session.user),
      listRecentJobs(deps.db, session.user.userId, { limit: RECENT_RUNS }),
      countLiveSessions(deps.db, session.user.userId, lifetimes),
    ]);
    await sendPage(
      ctx,
      <ConsoleHomePage
        account={{
          email: account.email,
          planId: account.subscription.planId,
          balanceUsd: account.balanceUsd,
          heldUsd: account.heldUsd,
          availableUsd: account.availableUsd,
          operations: account.usage.operations,
          period: account.usage.period,
          monthlyOperationLimit: account.subscription.monthlyOperationLimit,
        }}
        jobs={jobs}
        csrfToken={session.csrfToken}
        liveSessions={liveSessions}
        sessionEndsAt={session.expiresAt}
      />,
      { private: true },
    );
  });

  router.get('/sign-in', async (ctx) => {
    if (await currentSession(ctx, deps)) return seeOther(ctx, '/console');
    await signInPage(ctx, safeNext(ctx.query.next), null);
  });

  router.post('/sign-in', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    requireFormToken(form.get('csrf'), readCookie(ctx, SIGN_IN_COOKIE));
    const next = safeNext(form.get('next'));
    const apiKey = (form.get('api_key') ?? '').trim();
    const owner = apiKey ? await findApiKeyOwner(deps.db, apiKey) : null;
    if (!owner)
      return signInPage(ctx, next, 'That API key is not valid (or has been rotated). Check it and try again.', 401);
    const { token } = await createSession(deps.db, { userId: owner.userId, apiKeyId: owner.apiKeyId, lifetimes });
    clearCookie(ctx, SIGN_IN_COOKIE);
    setCookie(ctx, SESSION_COOKIE, token, lifetimes.maxMs / 1000);
    seeOther(ctx, next ?? '/console');
  });

  /** Sign-out (this browser) and sign-out everywhere (every session of the account). */
  for (const [path, everywhere] of [
    ['/sign-out', false],
    ['/sign-out-everywhere', true],
  ] as const) {
    router.post(path, async (ctx) => {
      requireSameOrigin(ctx, deps.config);
      const form = await readForm(ctx);
      const session = await currentSession(ctx, deps);
      if (session) {
        requireFormToken(form.get('csrf'), session.csrfToken);
        if (everywhere) await revokeUserSessions(deps.db, session.user.userId);
        else await revokeSession(deps.db, session.id);
      }
      clearCookie(ctx, SESSION_COOKIE);
      seeOther(ctx, '/console/sign-in');
    });
  }

  router.get('/usage', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const userId = session.user.userId;
    const now = new Date();
    const since = new Date(
      `${new Date(now.getTime() - (USAGE_DAYS - 1) * 86_400_000).toISOString().slice(0, 10)}T00:00:00.000Z`,
    );
    const pageNumber = Number(ctx.query.page ?? '1');
    const page = {
      page: Number.isInteger(pageNumber) && pageNumber >= 1 && pageNumber <= 100_000 ? pageNumber : 1,
      pageSize: TRANSACTIONS_PAGE_SIZE,
    };
    const [account, perDay, perCategory, perListing, holds, transactions] = await Promise.all([
      accountSummary(deps.db, session.user),
      spendPerDay(deps.db, userId, { from: since, to: now }),
      spendPerCategory(deps.db, userId, since),
      spendPerListing(deps.db, userId, since),
      listOpenHolds(deps.db, userId),
      listAgentTransactions(deps.db, userId, page),
    ]);
    await sendPage(
      ctx,
      <UsagePage
        view={{
          email: account.email,
          money: { balanceUsd: account.balanceUsd, heldUsd: account.heldUsd, availableUsd: account.availableUsd },
          days: USAGE_DAYS,
          perDay: perDay.map((d) => ({ day: d.day, usd: microsToUsd(d.micros) })),
          perCategory: perCategory.map((c) => ({ ...c, usd: microsToUsd(c.micros) })),
          perListing: perListing.map((l) => ({ ...l, usd: microsToUsd(l.micros) })),
          holds: {
            ...holds,
            jobsUsd: holds.jobs.map((j) => microsToUsd(j.micros)),
            marketRunsUsd: holds.marketRuns.map((r) => microsToUsd(r.micros)),
          },
          transactions: {
            rows: transactions.transactions.map((t) => ({ ...t, costUsd: microsToUsd(t.cost_micros) })),
            page: page.page,
            totalPages: transactions.meta.totalPages,
          },
        }}
      />,
      { private: true },
    );
  });

  const ownRun = async (ctx: Context, session: WebSession) => {
    const id = String(ctx.params.id);
    const job = UUID.test(id) ? await findOwnJob(deps.db, session.user.userId, id.toLowerCase()) : undefined;
    // Another account's run is exactly as absent as one that never existed.
    if (!job) throw pageNotFound('You have no run with this id.');
    return job;
  };

  router.get('/runs/:id', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    await sendPage(ctx, <RunPage job={await ownRun(ctx, session)} email={session.user.email} />, { private: true });
  });

  router.get('/runs/:id/events', async (ctx) => {
    const session = await currentSession(ctx, deps);
    if (!session) {
      ctx.status = 401;
      ctx.body = '';
      return;
    }
    streamRunEvents(ctx, deps, session.user.userId, await ownRun(ctx, session));
  });

  return router;
}
