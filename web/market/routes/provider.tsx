import { randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { WebContext, WebState } from '../../context';
import { marketReview, type McpReviewView } from '../../../api/services/market/review';
import { MARKETS, type Market, type ReviewAction } from '../../../lib/market/review-state';
import { microsToUsd } from '../../../lib/money';
import { requireFormToken, requireSameOrigin } from '../../csrf';
import type { WebDeps } from '../../deps';
import { readForm } from '../../forms';
import { currentOperator, endOperatorSignIn, isAdminToken, startOperatorSession } from '../../operator';
import { PageError, pageNotFound, sendPage } from '../../page';
import { ProviderPage } from '../pages/provider';
import { OperatorSignInPage, QUEUE_STATUSES, ReviewQueuePage, type QueueStatus } from '../pages/review';
import { clearCookie, readCookie, setCookie, SIGN_IN_COOKIE, signedIn as signedInPage } from '../../session';
import {
  findEmails,
  listOwnSubmissions,
  listProviderRevenue,
  revenuePerDay,
  revenuePerEvent,
  revenuePerListing,
} from '../../../api/services/market/reads';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SIGN_IN_FORM_SECONDS = 3_600;
/** The provider page's revenue window (days, today included) and how many submissions of each market it lists. */
const REVENUE_DAYS = 30;
const SUBMISSIONS_SHOWN = 100;
/** How many submissions of each market the review queue shows at once (oldest submitted first). */
const QUEUE_SIZE = 50;
const REVIEW_ACTIONS: readonly ReviewAction[] = ['approve', 'reject', 'disable'];
const DONE: Record<string, string> = { approve: 'approved', reject: 'rejected', disable: 'disabled' };

function seeOther(ctx: WebContext, url: string): void {
  ctx.status = 303;
  ctx.redirect(url);
}

/**
 * The provider's pages (its submissions to both markets and its revenue, signed in with its API key
 * like the rest of the console) and the operators' review queue (signed in with the admin token).
 */
export function providerRoutes(deps: WebDeps): Router {
  const router = new Router<WebState>({ prefix: '/console' });
  const review = marketReview(deps);

  /** The session, or a redirect to the sign-in page (which then comes back here). */
  const signedIn = (ctx: WebContext) => signedInPage(ctx, deps);

  router.get('/provider', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const userId = session.user.userId;
    const now = new Date();
    const since = new Date(
      `${new Date(now.getTime() - (REVENUE_DAYS - 1) * 86_400_000).toISOString().slice(0, 10)}T00:00:00.000Z`,
    );
    const page = { page: 1, pageSize: SUBMISSIONS_SHOWN };
    const [mcp, agent, revenue, perDay, perListing, perEvent] = await Promise.all([
      listOwnSubmissions(deps.db, 'mcp', userId, page),
      listOwnSubmissions(deps.db, 'agent', userId, page),
      listProviderRevenue(deps.db, userId, { page: 1, pageSize: 1 }),
      revenuePerDay(deps.db, userId, { from: since, to: now }),
      revenuePerListing(deps.db, userId, since),
      revenuePerEvent(deps.db, userId, since),
    ]);
    await sendPage(
      ctx,
      <ProviderPage
        view={{
          email: session.user.email,
          csrfToken: session.csrfToken,
          days: REVENUE_DAYS,
          submissions: [
            { market: 'mcp', ...mcp },
            { market: 'agent', ...agent },
          ],
          totals: revenue.totals,
          perDay: perDay.map((d) => ({ day: d.day, usd: microsToUsd(d.micros) })),
          perListing: perListing.map((l) => ({
            ...l,
            usd: microsToUsd(l.micros),
            totalUsd: microsToUsd(l.totalMicros),
          })),
          perEvent: perEvent.map((e) => ({ ...e, usd: microsToUsd(e.micros) })),
        }}
      />,
      { private: true },
    );
  });

  async function operatorSignIn(ctx: WebContext, problem: string | null, status = 200) {
    const formToken = randomBytes(24).toString('base64url');
    setCookie(ctx, SIGN_IN_COOKIE, formToken, SIGN_IN_FORM_SECONDS);
    await sendPage(
      ctx,
      <OperatorSignInPage
        formToken={formToken}
        problem={problem}
        minutes={Math.round(deps.config.web.sessionIdleMs / 60_000)}
      />,
      { status, private: true },
    );
  }

  router.get('/review/sign-in', async (ctx) => {
    if (await currentOperator(ctx, deps)) return seeOther(ctx, '/console/review');
    await operatorSignIn(ctx, null);
  });

  router.post('/review/sign-in', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    requireFormToken(form.get('csrf'), readCookie(ctx, SIGN_IN_COOKIE));
    if (!isAdminToken(deps.config, form.get('admin_token') ?? ''))
      return operatorSignIn(ctx, 'That is not the admin token. Check it and try again.', 401);
    clearCookie(ctx, SIGN_IN_COOKIE);
    await startOperatorSession(ctx, deps);
    seeOther(ctx, '/console/review');
  });

  router.post('/review/sign-out', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    const operator = await currentOperator(ctx, deps);
    if (operator) requireFormToken(form.get('csrf'), operator.csrfToken);
    // Ended on the server: a copy of the cookie is refused from now on.
    await endOperatorSignIn(ctx, deps);
    seeOther(ctx, '/console/review/sign-in');
  });

  /** The line that tells what the last decision did, read back from the submission (the address carries no text). */
  async function lastDecision(ctx: WebContext): Promise<string | null> {
    const { done, market, id } = ctx.query;
    if (typeof done !== 'string' || !DONE[done] || typeof id !== 'string' || !UUID.test(id)) return null;
    if (!(MARKETS as readonly string[]).includes(String(market))) return null;
    try {
      const sub = await review.get(market as Market, id.toLowerCase());
      return `${sub.name} was ${DONE[done]}.`;
    } catch {
      return null;
    }
  }

  router.get('/review', async (ctx) => {
    const operator = await currentOperator(ctx, deps);
    if (!operator) return ctx.redirect('/console/review/sign-in');
    const status: QueueStatus = (QUEUE_STATUSES as readonly string[]).includes(String(ctx.query.status))
      ? (ctx.query.status as QueueStatus)
      : 'pending_review';
    const q = typeof ctx.query.q === 'string' ? ctx.query.q.trim().slice(0, 100) : '';
    const markets = await Promise.all(
      MARKETS.map(async (market) => {
        const listed = await review.list(
          market,
          { status, ...(q && { nameContains: q }) },
          { page: 1, pageSize: QUEUE_SIZE },
        );
        return { market, submissions: listed.submissions, total: listed.meta.total };
      }),
    );
    const all = markets.flatMap((m) => m.submissions);
    const [evidence, ownerEmails] = await Promise.all([
      review.mcpEvidence(all.filter((s): s is McpReviewView => s.market === 'mcp')),
      findEmails(deps.db, [...new Set(all.map((s) => s.ownerId))]),
    ]);
    const done = await lastDecision(ctx);
    await sendPage(
      ctx,
      <ReviewQueuePage view={{ status, q, csrfToken: operator.csrfToken, markets, evidence, ownerEmails, done }} />,
      { private: true },
    );
  });

  router.post('/review/:market/:id', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const operator = await currentOperator(ctx, deps);
    if (!operator)
      throw new PageError(401, 'Sign in first', 'Your operator sign-in has ended: sign in to the review queue again.');
    const form = await readForm(ctx);
    requireFormToken(form.get('csrf'), operator.csrfToken);
    const market = String(ctx.params.market);
    const id = String(ctx.params.id);
    if (!(MARKETS as readonly string[]).includes(market) || !UUID.test(id)) throw pageNotFound();
    const action = form.get('action') ?? '';
    if (!(REVIEW_ACTIONS as readonly string[]).includes(action))
      throw new PageError(400, 'Request refused', 'Choose approve, reject or disable.');
    const reason = (form.get('reason') ?? '').trim() || null;
    const reviewed = await review.review(market as Market, id.toLowerCase(), action as ReviewAction, reason);
    const back = action === 'disable' ? 'approved' : 'pending_review';
    const q = (form.get('q') ?? '').trim().slice(0, 100);
    seeOther(
      ctx,
      `/console/review?status=${back}${q ? `&q=${encodeURIComponent(q)}` : ''}&done=${action}&market=${market}&id=${reviewed.id}`,
    );
  });

  return router;
}
