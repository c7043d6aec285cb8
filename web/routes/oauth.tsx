import Router from '@koa/router';
import type { WebContext, WebState } from '../context';
import type { OidcInteraction } from 'oidc-provider';
import type { OAuthServer } from '../../api/services/oauth/authorization-server';
import { consentListing, listingChoices, previousGrant } from '../../api/services/oauth/consent';
import type { WebSession } from '../../db/repos/sessions';
import { callableTools, type MarketCallEntry } from '../../lib/market/tool-call';
import { checkUserParams } from '../../lib/market/user-params-schema';
import { microsToUsd, usdToWholeMicros } from '../../lib/money';
import type { SourceParamValues } from '../../lib/tools/types';
import { requireFormToken, requireSameOrigin } from '../csrf';
import type { WebDeps } from '../deps';
import { readForm } from '../forms';
import { CONTENT_SECURITY_POLICY, PageError, sendPage } from '../page';
import {
  OAuthChooseListingPage,
  OAuthConsentPage,
  type ConsentParamField,
  type ConsentView,
} from '../pages/oauth-consent';
import { currentSession } from '../session';

const expired = () =>
  new PageError(
    400,
    'Authorization expired',
    'This authorization is unknown or has expired. Start again from your MCP client.',
  );

/** Where the browser goes back to, for the consent page's form-action (the redirect after the form is checked against it). */
function redirectSource(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

interface Resolved {
  interaction: OidcInteraction;
  /** Null while the client named no resource and the person has not chosen a listing yet. */
  entry: MarketCallEntry | null;
  resource: string;
  /** The client named no resource: the listing is the person's choice. */
  chosen: boolean;
  clientName: string;
  clientId: string;
  redirectUri: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function paramFields(schema: Record<string, unknown>): ConsentParamField[] {
  const properties = (schema?.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set(Array.isArray(schema?.required) ? (schema.required as string[]) : []);
  return Object.entries(properties).map(([name, p]) => ({
    name,
    label: typeof p.title === 'string' ? p.title : name,
    type:
      p.type === 'boolean'
        ? 'checkbox'
        : p.type === 'number' || p.type === 'integer'
          ? 'number'
          : p.writeOnly === true || p.format === 'password' || /secret|token|key|password/i.test(name)
            ? 'password'
            : 'text',
    required: required.has(name),
    description: typeof p.description === 'string' ? p.description : null,
  }));
}

function readParams(schema: Record<string, unknown>, form: URLSearchParams): SourceParamValues {
  const params: Record<string, unknown> = {};
  for (const field of paramFields(schema)) {
    const raw = form.get(`param.${field.name}`);
    if (field.type === 'checkbox') params[field.name] = raw === 'true';
    else if (raw === null || raw === '') continue;
    else if (field.type === 'number') params[field.name] = Number(raw);
    else params[field.name] = raw;
  }
  return params as SourceParamValues;
}

/**
 * The authorization server's interaction pages (issue 25): /oauth/interaction/{uid} shows the consent
 * page to the signed-in person (or sends them to the console's sign-in first, and back); its form
 * approves (the grant: entry, account, parameters, cap) or denies.
 */
export function oauthRoutes(deps: WebDeps, oauth: OAuthServer): Router {
  const router = new Router<WebState>({ prefix: '/oauth/interaction' });

  /** The interaction, its client and its listing: the resource the client named, else `chosenEntry` (the person's pick). */
  async function resolve(ctx: WebContext, chosenEntry: string | null): Promise<Resolved> {
    const provider = oauth.provider(ctx);
    let interaction: OidcInteraction;
    try {
      interaction = await provider.interactionDetails(ctx.req, ctx.res);
    } catch {
      throw expired();
    }
    if (interaction.uid !== ctx.params.uid) throw expired();
    const params = interaction.params;
    const resources = Array.isArray(params.resource) ? params.resource : params.resource ? [params.resource] : [];
    if (resources.length > 1 || (resources.length === 1 && typeof resources[0] !== 'string'))
      throw new PageError(
        400,
        'Which endpoint?',
        'The client must name at most one market endpoint (/mcp/{entryId}) as the resource of this authorization.',
      );
    const chosen = resources.length === 0;
    let resource: string | null = null;
    let entry: MarketCallEntry | null = null;
    if (!chosen) {
      resource = resources[0] as string;
      const entryId = oauth.entryOfResource(ctx, resource);
      entry = entryId ? await consentListing(deps, entryId) : null;
      if (!entry)
        throw new PageError(404, 'Listing not found', 'The endpoint this client asks for is not a live listing.');
    } else if (chosenEntry) {
      entry = UUID.test(chosenEntry) ? await consentListing(deps, chosenEntry.toLowerCase()) : null;
      if (!entry) throw new PageError(404, 'Listing not found', 'The listing you chose is not live. Choose another.');
      resource = oauth.resource(ctx, entry.entryId);
    }
    const clientId = String(params.client_id);
    const client = await provider.Client.find(clientId).catch((err: { status?: number }) => {
      // OAUTH_RATE_LIMIT_PER_CLIENT_PER_MINUTE: the client's lookups are limited here too.
      if (err?.status === 429)
        throw new PageError(429, 'Too many requests', 'This app made too many requests. Try again in a minute.');
      throw err;
    });
    if (!client) throw expired();
    return {
      interaction,
      entry,
      resource: resource ?? '',
      chosen,
      clientId,
      clientName: client.clientName ?? (client.metadata().client_name as string | undefined) ?? clientId,
      redirectUri: String(params.redirect_uri),
    };
  }

  const formAction = (r: Resolved) =>
    CONTENT_SECURITY_POLICY.replace("form-action 'self'", `form-action 'self' ${redirectSource(r.redirectUri)}`);

  async function chooseListingPage(ctx: WebContext, session: WebSession, r: Resolved) {
    const q = typeof ctx.query.q === 'string' ? ctx.query.q.slice(0, 200) : '';
    const listings = await listingChoices(deps, q);
    ctx.set('Content-Security-Policy', formAction(r));
    await sendPage(
      ctx,
      <OAuthChooseListingPage
        view={{
          uid: r.interaction.uid,
          csrfToken: session.csrfToken,
          email: session.user.email,
          clientName: r.clientName,
          clientId: r.clientId,
          redirectHost: new URL(r.redirectUri).host || r.redirectUri,
          q,
          listings,
        }}
      />,
      { private: true },
    );
  }

  /** The newest grant of this client for this listing (another device's), and the values (no secrets) to pre-fill from it. */
  async function existingGrant(session: WebSession, r: Resolved & { entry: MarketCallEntry }) {
    const previous = await previousGrant(deps, {
      userId: session.user.userId,
      clientId: r.clientId,
      entryId: r.entry.entryId,
    });
    if (!previous) return { existing: null, prefill: { cap: '', budgetMonthly: '', budgetTotal: '', params: {} } };
    const { claims, recorded } = previous;
    const amount = (micros: number | null | undefined) => (micros ? microsToUsd(micros).toString() : '');
    const params: Record<string, string | boolean> = {};
    for (const field of paramFields(r.entry.requiredUserParamsSchema)) {
      const value = claims?.params[field.name];
      if (field.type === 'password' || value === undefined || value === null) continue;
      params[field.name] = field.type === 'checkbox' ? value === true : String(value);
    }
    return {
      existing: { createdAt: previous.createdAt.toISOString().slice(0, 16).replace('T', ' ') + ' UTC' },
      prefill: {
        cap: amount(claims?.capMicros),
        budgetMonthly: amount(recorded?.budgetMonthlyMicros),
        budgetTotal: amount(recorded?.budgetTotalMicros),
        params,
      },
    };
  }

  async function consentPage(
    ctx: WebContext,
    session: WebSession,
    r: Resolved & { entry: MarketCallEntry },
    problem: string | null,
    status = 200,
  ) {
    const view: ConsentView = {
      uid: r.interaction.uid,
      csrfToken: session.csrfToken,
      email: session.user.email,
      clientName: r.clientName,
      clientId: r.clientId,
      redirectHost: new URL(r.redirectUri).host || r.redirectUri,
      entry: { entryId: r.entry.entryId, name: r.entry.name, slug: r.entry.slug },
      prices: callableTools(r.entry).map((t) => ({
        tool: t.displayName,
        price:
          r.entry.monetizationStrategy === 'tool_call_fixed'
            ? `$${microsToUsd(t.clientPriceMicros ?? 0)} per call`
            : r.entry.monetizationStrategy === 'provider_event'
              ? 'per event (see the listing)'
              : 'free',
      })),
      fields: paramFields(r.entry.requiredUserParamsSchema),
      problem,
      chosen: r.chosen,
      ...(await existingGrant(session, r)),
    };
    ctx.set('Content-Security-Policy', formAction(r));
    await sendPage(ctx, <OAuthConsentPage view={view} />, { status, private: true });
  }

  const withEntry = (r: Resolved): (Resolved & { entry: MarketCallEntry }) | null => (r.entry ? (r as never) : null);

  router.get('/:uid', async (ctx) => {
    const resolved = await resolve(ctx, typeof ctx.query.entry === 'string' ? ctx.query.entry : null);
    const session = await currentSession(ctx, deps);
    if (!session) return ctx.redirect(`/console/sign-in?next=${encodeURIComponent(ctx.path)}`);
    const ready = withEntry(resolved);
    if (!ready) return chooseListingPage(ctx, session, resolved);
    await consentPage(ctx, session, ready, null);
  });

  router.post('/:uid/confirm', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    const session = await currentSession(ctx, deps);
    if (!session) throw new PageError(401, 'Signed out', 'Your console session ended. Start again from your client.');
    requireFormToken(form.get('csrf'), session.csrfToken);
    const allow = form.get('decision') === 'allow';
    const resolved = await resolve(ctx, allow ? form.get('entry') : null);
    const ready = withEntry(resolved);
    let next: string;
    if (!allow) {
      next = await oauth.deny(ctx);
    } else if (!ready) {
      return chooseListingPage(ctx, session, resolved);
    } else {
      const resolved = ready;
      const params = readParams(resolved.entry.requiredUserParamsSchema, form);
      try {
        checkUserParams(resolved.entry.requiredUserParamsSchema, params, 'params');
      } catch (err) {
        return consentPage(ctx, session, resolved, `The parameters are not valid: ${(err as Error).message}`, 400);
      }
      // The limit per run and the budgets: positive amounts in whole micro-USD (never rounded, never dropped).
      const amounts: Record<'cap' | 'budgetMonthly' | 'budgetTotal', number | null> = {
        cap: null,
        budgetMonthly: null,
        budgetTotal: null,
      };
      const names = { cap: 'limit per run', budgetMonthly: 'monthly budget', budgetTotal: 'total budget' } as const;
      for (const field of ['budgetMonthly', 'budgetTotal', 'cap'] as const) {
        const raw = (form.get(field) ?? '').trim();
        if (!raw) continue;
        const micros = usdToWholeMicros(Number(raw));
        if (micros === null || !(micros > 0) || micros > 1_000_000 * 1_000_000)
          return consentPage(
            ctx,
            session,
            resolved,
            `The ${names[field]} must be a positive amount of USD in whole micro-USD (at most 6 decimals).`,
            400,
          );
        amounts[field] = micros;
      }
      const capMicros = amounts.cap;
      next = await oauth.approve(ctx, resolved.interaction, {
        device: {
          name: (form.get('device') ?? '').trim().slice(0, 100) || null,
          userAgent: ctx.get('user-agent') || null,
        },
        userId: session.user.userId,
        apiKeyId: session.apiKeyId,
        clientName: resolved.clientName,
        entry: resolved.entry,
        resource: resolved.resource,
        params,
        capMicros,
        budgets: { budgetMonthlyMicros: amounts.budgetMonthly, budgetTotalMicros: amounts.budgetTotal },
      });
    }
    ctx.status = 303;
    ctx.redirect(next);
  });

  return router;
}
