import { randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import { accountSummary } from '../../../api/services/account/account-summary';
import { buyMarketAgent, runMarketAgent } from '../../../api/services/market/agent-orders';
import { idempotencyKeyOf } from '../../../api/services/jobs/start-metered-job';
import { agentEntryView, mayRunAgent } from '../../../api/services/market/catalog';
import type { WebSession } from '../../../db/repos/sessions';
import { readFields } from '../../components/schema-form';
import { usd } from '../../format';
import type { WebDeps } from '../../deps';
import { pageNotFound, sendPage } from '../../page';
import { BuyAgentPage, RunAgentPage } from '../pages/agent-order';
import { signedIn as signedInPage, signedInForm as signedInPageForm } from '../../session';
import { findPublicAgent } from '../../../api/services/market/reads';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function seeOther(ctx: Context, url: string): void {
  ctx.status = 303;
  ctx.redirect(url);
}

/** What a service refused with (a 4xx error and its details), else rethrown. */
function problemOf(err: unknown): string {
  const status = (err as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && err instanceof Error) {
    const details = (err as { details?: { path: string; message: string }[] }).details ?? [];
    const why = details.map((d) => `${d.path.replace(/^(body|inputs)[./]/, '')} ${d.message}`).join('; ');
    return why ? `${err.message}: ${why}` : err.message;
  }
  throw err;
}

/**
 * The agent market, signed in: buy an agent (the price first, then a confirm step; idempotent, the
 * same service as POST /agent-market/agents/{id}/purchase) and run it from a form generated from its
 * input schema (the same service as POST …/run), then on to the run's page in the console.
 */
export function agentOrderRoutes(deps: WebDeps): Router {
  const router = new Router({ prefix: '/market/agents/:id' });

  const signedIn = (ctx: Context) => signedInPage(ctx, deps);

  const signedInForm = (ctx: Context) => signedInPageForm(ctx, deps);

  async function liveAgent(ctx: Context, session: WebSession) {
    const id = String(ctx.params.id);
    const agent = UUID.test(id) ? await findPublicAgent(deps.db, id.toLowerCase()) : null;
    if (!agent) throw pageNotFound('No agent-market listing has this address: it may have been withdrawn.');
    const mayRun = await mayRunAgent(deps.db, agent, session.user.userId);
    return { agent, mayRun, entry: agentEntryView(agent, () => '', mayRun, []) };
  }

  async function buyPage(ctx: Context, session: WebSession, problems: string[], status = 200) {
    const { entry } = await liveAgent(ctx, session);
    const account = await accountSummary(deps.db, session.user);
    await sendPage(
      ctx,
      <BuyAgentPage
        entry={entry}
        availableUsd={account.availableUsd}
        csrfToken={session.csrfToken}
        problems={problems}
        signedInAs={session.user.email}
      />,
      { status, private: true },
    );
  }

  async function runPage(
    ctx: Context,
    session: WebSession,
    extra: { notice?: string | null; values?: URLSearchParams | null; problems?: string[] },
    status = 200,
  ) {
    const { entry } = await liveAgent(ctx, session);
    await sendPage(
      ctx,
      <RunAgentPage
        entry={entry}
        csrfToken={session.csrfToken}
        runKey={extra.values?.get('run_key') ?? randomBytes(18).toString('base64url')}
        notice={extra.notice ?? null}
        values={extra.values ?? null}
        problems={extra.problems ?? []}
        signedInAs={session.user.email}
      />,
      { status, private: true },
    );
  }

  router.get('/buy', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const { mayRun } = await liveAgent(ctx, session);
    // Bought already, free, or the consumer's own: nothing to buy.
    if (mayRun) return seeOther(ctx, `/market/agents/${String(ctx.params.id).toLowerCase()}/run`);
    await buyPage(ctx, session, []);
  });

  router.post('/buy', async (ctx) => {
    const { session } = await signedInForm(ctx);
    const { agent } = await liveAgent(ctx, session);
    let outcome;
    try {
      outcome = (await buyMarketAgent(deps, session.user, agent)).outcome;
    } catch (err) {
      return buyPage(ctx, session, [problemOf(err)], 400);
    }
    seeOther(ctx, `/market/agents/${agent.listingId}/run?bought=${outcome === 'created' ? 'now' : 'before'}`);
  });

  router.get('/run', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const { mayRun, entry } = await liveAgent(ctx, session);
    if (!mayRun) return seeOther(ctx, `/market/agents/${entry.id}/buy`);
    const bought = ctx.query.bought;
    await runPage(ctx, session, {
      notice:
        bought === 'now'
          ? `Bought for ${usd(entry.priceUsd)}. Run it below.`
          : bought === 'before'
            ? 'You had bought this agent already: nothing was charged.'
            : null,
    });
  });

  router.post('/run', async (ctx) => {
    const { session, form } = await signedInForm(ctx);
    const { agent, mayRun } = await liveAgent(ctx, session);
    if (!mayRun) return seeOther(ctx, `/market/agents/${agent.listingId}/buy`);
    const { values: inputs, problems } =
      agent.runMode === 'template' ? readFields(agent.inputSchema, form, 'in.') : { values: {}, problems: [] };
    if (problems.length > 0) return runPage(ctx, session, { values: form, problems }, 400);
    const task = (form.get('task') ?? '').trim();
    let job;
    try {
      job = await runMarketAgent(
        deps,
        session.user,
        agent,
        { ...(agent.runMode === 'template' && { inputs }), ...(task && { task }) } as Parameters<
          typeof runMarketAgent
        >[3],
        // The form's own key: sending it twice (a double click, a reload) starts one run.
        idempotencyKeyOf(`web-run-${form.get('run_key') ?? ''}`.slice(0, 200)),
      );
    } catch (err) {
      return runPage(ctx, session, { values: form, problems: [problemOf(err)] }, 400);
    }
    seeOther(ctx, `/console/runs/${job.id}`);
  });

  return router;
}
