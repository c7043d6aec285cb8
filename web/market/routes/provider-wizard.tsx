import Router from '@koa/router';
import type { WebContext, WebState } from '../../context';
import { publicOrigin } from '../../../api/services/shared/public-urls';
import {
  createAndSubmitListing,
  eventVerificationView,
  reviseAndSubmitListing,
  startEventVerification,
  validateSource,
  type DiscoveryBody,
} from '../../../api/services/market/listing';
import type { McpSubmission } from '../../../db/repos/market-mcp';
import type { StoredValidation } from '../../../db/repos/market-validations';
import type { WebSession } from '../../../db/repos/sessions';
import type { WebDeps } from '../../deps';
import { PageError, pageNotFound, sendPage } from '../../page';
import { revisionValues } from '../listing-revision';
import {
  eventsHref,
  sourceHref,
  userParamRows,
  WizardEventsPage,
  WizardSourcePage,
  WizardToolsPage,
  wizardHref,
  type RevisionOf,
  type WizardSource,
} from '../pages/listing-wizard';
import { signedIn as signedInPage, signedInForm as signedInPageForm } from '../../session';
import {
  findEventVerification,
  findMcpSubmission,
  findValidation,
  unsealStaticConfig,
} from '../../../api/services/market/reads';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** How many name/value rows of discovery credentials and event names a form may carry. */
const MAX_ROWS = 20;

function seeOther(ctx: WebContext, url: string): void {
  ctx.status = 303;
  ctx.redirect(url);
}

const text = (raw: unknown, max = 2048) => (typeof raw === 'string' && raw.length <= max ? raw.trim() : '');

/** The source the wizard carries in its addresses and forms. */
function sourceOf(get: (name: string) => unknown): WizardSource {
  const type = get('type') === 'openapi' ? 'openapi' : 'remote_mcp';
  const revision = text(get('revision'), 36);
  return {
    type,
    url: text(get('url')),
    base: type === 'openapi' ? text(get('base')) : '',
    revision: UUID.test(revision) ? revision.toLowerCase() : '',
  };
}

const usd = (raw: string | null) => {
  const value = (raw ?? '').trim();
  return /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
};

/**
 * The console's listing wizard: source → validation report → events to verify (per-event pricing)
 * → tools and prices → submit. Every step is a plain form (no script needed), each action one call
 * of the services the REST routes use (api/services/market/listing.ts). In revision mode (`revision`, the
 * id of the caller's live approved listing, carried in every address and form) the steps start from
 * that listing and the last one makes the revision and submits it.
 */
export function providerWizardRoutes(deps: WebDeps): Router {
  const router = new Router<WebState>({ prefix: '/console/provider/new' });

  const signedIn = (ctx: WebContext) => signedInPage(ctx, deps);

  const signedInForm = (ctx: WebContext) => signedInPageForm(ctx, deps);

  /** What went wrong, as the API would say it (a 4xx/5xx error with a message), else rethrown. */
  const problemOf = (err: unknown): { status: number; message: string } => {
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 600 && err instanceof Error) {
      const details = (err as { details?: { path: string; message: string }[] }).details ?? [];
      const why = details.map((d) => `${d.path.replace(/^body[./]/, '')} ${d.message}`).join('; ');
      return { status, message: why ? `${err.message}: ${why}` : err.message };
    }
    throw err;
  };

  /** The caller's tool-market submission with that id (else the 404 page: another account's is unknown here). */
  const ownListing = async (session: WebSession, id: string): Promise<McpSubmission> => {
    const listing = UUID.test(id) ? await findMcpSubmission(deps.db, id.toLowerCase(), session.user.userId) : null;
    if (!listing) throw pageNotFound('You have no tool-market listing with this id.');
    return listing;
  };

  /** In revision mode, the listing revised (the caller's own), else null. */
  const revised = (session: WebSession, source: WizardSource) =>
    source.revision ? ownListing(session, source.revision) : Promise.resolve(null);

  const revisionOf = (listing: McpSubmission | null): RevisionOf | null =>
    listing && { name: listing.name, monetizationStrategy: listing.monetizationStrategy };

  const ownValidation = async (ctx: WebContext, session: WebSession): Promise<StoredValidation> => {
    const id = String(ctx.params.id);
    const validation = UUID.test(id) ? await findValidation(deps.db, session.user.userId, id.toLowerCase()) : null;
    if (!validation) throw pageNotFound('You have no validation with this id (validations expire after a day).');
    return validation;
  };

  /** The caller's verification with that id, for this validation's source (else a 404 page). */
  const ownVerification = async (ctx: WebContext, session: WebSession, validation: StoredValidation, id: unknown) => {
    const verification =
      typeof id === 'string' && UUID.test(id)
        ? await findEventVerification(deps.db, session.user.userId, id.toLowerCase())
        : null;
    if (!verification || verification.sourceFingerprint !== validation.sourceFingerprint)
      throw pageNotFound('You have no event verification with this id for this source.');
    return eventVerificationView(verification, `${publicOrigin(ctx, deps.config)}/api/v1`);
  };

  /**
   * "Make a revision" of a live approved listing (the provider page's form): the wizard starts in
   * revision mode with the listing's source. Another account's listing is the 404 page; a listing
   * that is not live and approved cannot be revised (a clear 409 page, as the API answers it).
   */
  router.post('/revision/:id', async (ctx) => {
    const { session } = await signedInForm(ctx);
    const listing = await ownListing(session, String(ctx.params.id));
    if (listing.status !== 'approved' || !listing.live)
      throw new PageError(
        409,
        'This listing cannot be revised',
        listing.status === 'approved'
          ? `${listing.name}: this version has been replaced by a newer one; make a revision of the live listing.`
          : `${listing.name} is ${listing.status.replace('_', ' ')}: only a live approved listing can be revised.`,
      );
    seeOther(
      ctx,
      sourceHref({
        type: listing.type,
        url: listing.type === 'remote_mcp' ? (listing.remoteMcpUrl ?? '') : '',
        base: listing.openapiBaseUrl ?? '',
        revision: listing.id,
      }),
    );
  });

  router.get('/', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const source = sourceOf((name) => ctx.query[name]);
    const listing = await revised(session, source);
    await sendPage(
      ctx,
      <WizardSourcePage
        email={session.user.email}
        csrfToken={session.csrfToken}
        source={source}
        paramNames={[]}
        problem={null}
        revisionOf={revisionOf(listing)}
      />,
      { private: true },
    );
  });

  router.post('/', async (ctx) => {
    const { session, form } = await signedInForm(ctx);
    const source = sourceOf((name) => form.get(name));
    const listing = await revised(session, source);
    const params: Record<string, string> = {};
    const paramNames: string[] = [];
    for (let i = 0; i < MAX_ROWS; i++) {
      const name = text(form.get(`param.${i}.name`), 64);
      if (!name) continue;
      paramNames.push(name);
      const value = form.get(`param.${i}.value`) ?? '';
      if (value) params[name] = value;
    }
    const body = {
      type: source.type,
      url: source.url,
      ...(source.base && { openapiBaseUrl: source.base }),
      params,
    } as unknown as DiscoveryBody;
    try {
      const validation = await validateSource(deps, session.user.userId, body);
      seeOther(ctx, wizardHref(validation.validationId, source));
    } catch (err) {
      const problem = problemOf(err);
      await sendPage(
        ctx,
        <WizardSourcePage
          email={session.user.email}
          csrfToken={session.csrfToken}
          source={source}
          paramNames={paramNames}
          problem={`The source could not be validated: ${problem.message}`}
          revisionOf={revisionOf(listing)}
        />,
        { status: problem.status, private: true },
      );
    }
  });

  router.get('/:id', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const validation = await ownValidation(ctx, session);
    const verification = ctx.query.verification
      ? await ownVerification(ctx, session, validation, ctx.query.verification)
      : null;
    const source = sourceOf((name) => ctx.query[name]);
    const listing = await revised(session, source);
    await sendPage(
      ctx,
      <WizardToolsPage
        email={session.user.email}
        csrfToken={session.csrfToken}
        source={source}
        validation={validation}
        verification={verification}
        problem={null}
        values={listing && revisionValues(listing, validation, verification)}
        revisionOf={revisionOf(listing)}
      />,
      { private: true },
    );
  });

  router.post('/:id', async (ctx) => {
    const { session, form } = await signedInForm(ctx);
    const validation = await ownValidation(ctx, session);
    const source = sourceOf((name) => form.get(name));
    const listing = await revised(session, source);
    const verificationId = form.get('eventVerificationId');
    const verification = verificationId ? await ownVerification(ctx, session, validation, verificationId) : null;
    const chosen = form.get('monetizationStrategy');
    const strategy = chosen === 'free' || chosen === 'provider_event' ? chosen : 'tool_call_fixed';
    const tools = validation.discovery.tools.flatMap((tool, i) => {
      if (form.get(`tool.${i}.name`) !== tool.name || form.get(`tool.${i}.listed`) !== 'on') return [];
      return [
        {
          toolName: tool.name,
          displayName: (form.get(`tool.${i}.displayName`) ?? '').trim() || tool.name,
          ...(strategy === 'tool_call_fixed' && { clientPriceUsd: usd(form.get(`tool.${i}.price`)) }),
        },
      ];
    });
    const pricingEvents = (verification?.eventNames ?? []).flatMap((event, i) => {
      if (form.get(`event.${i}.name`) !== event) return [];
      const title = (form.get(`event.${i}.title`) ?? '').trim();
      return [{ eventName: event, ...(title && { title }), unitPriceUsd: usd(form.get(`event.${i}.price`)) }];
    });
    // The consumer parameters, as the flat JSON Schema requiredUserParamsSchema is.
    const properties: Record<string, Record<string, unknown>> = {};
    const required: string[] = [];
    for (const row of userParamRows(validation, form)) {
      const name = row.name.trim();
      if (!name) continue;
      const choices = row.choices
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean);
      properties[name] = {
        type: 'string',
        ...(row.description.trim() && { description: row.description.trim() }),
        ...(choices.length && { enum: [...new Set(choices)] }),
        ...(row.secret && { writeOnly: true }),
      };
      if (row.required) required.push(name);
    }
    const description = (form.get('description') ?? '').trim();
    const body = {
      validationId: validation.id,
      sourceFingerprint: validation.sourceFingerprint,
      type: source.type,
      name: (form.get('name') ?? '').trim(),
      ...(description && { description }),
      ...(source.type === 'remote_mcp' ? { remoteMcpUrl: source.url } : source.base && { openapiBaseUrl: source.base }),
      monetizationStrategy: strategy,
      ...(strategy === 'provider_event' && { pricingEvents, eventVerificationId: verification?.id ?? null }),
      ...(Object.keys(properties).length && {
        requiredUserParamsSchema: { type: 'object', properties, ...(required.length && { required }) },
      }),
      tools,
    };
    const iconUrl = (key: string) => `/api/v1/market/icons/${key}.png`;
    const options = source.type === 'openapi' ? { openapiDocumentUrl: source.url } : {};
    try {
      if (listing) {
        // A revision keeps what the wizard does not edit: the slug, the icon and the provider's staticConfig.
        const staticConfig = unsealStaticConfig(deps.config.masterKey, listing);
        const kept = {
          ...body,
          slug: listing.slug,
          ...(listing.iconObjectKey ? { iconObjectKey: listing.iconObjectKey } : { iconUrl: listing.iconUrl }),
          ...(Object.keys(staticConfig).length && { staticConfig }),
        };
        await reviseAndSubmitListing(deps, session.user.userId, listing.id, kept, iconUrl, options);
      } else await createAndSubmitListing(deps, session.user.userId, body, iconUrl, options);
      seeOther(ctx, '/console/provider');
    } catch (err) {
      const problem = problemOf(err);
      await sendPage(
        ctx,
        <WizardToolsPage
          email={session.user.email}
          csrfToken={session.csrfToken}
          source={source}
          validation={validation}
          verification={verification}
          problem={`${listing ? 'The revision' : 'The listing'} was not submitted: ${problem.message}`}
          values={form}
          revisionOf={revisionOf(listing)}
        />,
        { status: problem.status, private: true },
      );
    }
  });

  router.get('/:id/events', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const source = sourceOf((name) => ctx.query[name]);
    const listing = await revised(session, source);
    await sendPage(
      ctx,
      <WizardEventsPage
        email={session.user.email}
        csrfToken={session.csrfToken}
        source={source}
        validation={await ownValidation(ctx, session)}
        verification={null}
        chargeToken={null}
        eventNames={listing?.pricingEvents.map((e) => e.eventName) ?? []}
        problem={null}
        revisionOf={revisionOf(listing)}
      />,
      { private: true },
    );
  });

  router.post('/:id/events', async (ctx) => {
    const { session, form } = await signedInForm(ctx);
    const validation = await ownValidation(ctx, session);
    const source = sourceOf((name) => ctx.query[name]);
    const listing = await revised(session, source);
    const eventNames = [
      ...new Set(
        form
          .getAll('event')
          .slice(0, MAX_ROWS)
          .map((e) => e.trim())
          .filter(Boolean),
      ),
    ];
    try {
      const started = await startEventVerification(
        deps,
        session.user.userId,
        { sourceFingerprint: validation.sourceFingerprint, eventNames },
        `${publicOrigin(ctx, deps.config)}/api/v1`,
      );
      const { chargeToken, ...verification } = started;
      // The token is shown in this answer only (it is not in the address, and no page shows it again).
      ctx.set('Content-Location', eventsHref(validation.id, source, verification.id));
      await sendPage(
        ctx,
        <WizardEventsPage
          email={session.user.email}
          csrfToken={session.csrfToken}
          source={source}
          validation={validation}
          verification={verification}
          chargeToken={chargeToken}
          eventNames={eventNames}
          problem={null}
          revisionOf={revisionOf(listing)}
        />,
        { status: 201, private: true },
      );
    } catch (err) {
      const problem = problemOf(err);
      await sendPage(
        ctx,
        <WizardEventsPage
          email={session.user.email}
          csrfToken={session.csrfToken}
          source={source}
          validation={validation}
          verification={null}
          chargeToken={null}
          eventNames={eventNames}
          problem={`The verification was not started: ${problem.message}`}
          revisionOf={revisionOf(listing)}
        />,
        { status: problem.status, private: true },
      );
    }
  });

  router.get('/:id/events/:verification', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const validation = await ownValidation(ctx, session);
    const source = sourceOf((name) => ctx.query[name]);
    const listing = await revised(session, source);
    await sendPage(
      ctx,
      <WizardEventsPage
        email={session.user.email}
        csrfToken={session.csrfToken}
        source={source}
        validation={validation}
        verification={await ownVerification(ctx, session, validation, ctx.params.verification)}
        chargeToken={null}
        eventNames={[]}
        problem={null}
        revisionOf={revisionOf(listing)}
      />,
      { private: true },
    );
  });

  return router;
}
