import { randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { WebContext, WebState } from '../context';
import { accountSummary } from '../../api/services/account/account-summary';
import { automationsOverview } from '../../api/services/automations/automations-overview';
import {
  findListingsByName,
  issueEntryCredential,
  listEntryCredentials,
  listingsInUse,
  revokeEntryCredential,
  type ListingChoice,
  updateCredentialBudgets,
} from '../../api/services/market/credentials';
import { publicOrigin } from '../../api/services/shared/public-urls';
import { findPublicMcpEntry } from '../../api/services/market/reads';
import { MarketRuleError } from '../../lib/market/errors';
import type { SourceParamValues } from '../../lib/tools/types';
import { ownJob, ownJobsPage, recentJobs } from '../../api/services/jobs/own-jobs';
import type { JobKind, JobStatus } from '../../db/schema';
import { usageOverview } from '../../api/services/account/usage-overview';
import { liveSessionCount, signInWithApiKey, signOut } from '../../api/services/account/console-sessions';
import { usdToWholeMicros } from '../../lib/money';
import type { WebSession } from '../../db/repos/sessions';
import { requireFormToken, requireSameOrigin } from '../csrf';
import type { WebDeps } from '../deps';
import { readForm } from '../forms';
import { pageNotFound, sendFragment, sendPage } from '../page';
import { ConsoleHomePage } from '../pages/console-home';
import { AutomationsPage } from '../pages/automations';
import {
  CredentialsPage,
  ListingResults,
  type CredentialEntry,
  type CredentialParamField,
  type CredentialsView,
} from '../pages/credentials';
import { ConnectionsPage } from '../pages/connections';
import { ApiKeyPage } from '../pages/api-key';
import { apiKeyBudgets, updateApiKeyBudgets } from '../../api/services/account/api-key-budgets';
import { connectedApps, revokeConnectedApp } from '../../api/services/oauth/connections';
import { RunPage } from '../pages/run';
import { RUN_KINDS, RUN_STATUSES, RunsPage } from '../pages/runs';
import { SignInPage } from '../pages/sign-in';
import { UsagePage } from '../pages/usage';
import { streamRunEvents } from '../run-events';
import {
  clearCookie,
  currentSession,
  readCookie,
  sessionLifetimes,
  setCookie,
  signedIn as signedInOrRedirect,
  SESSION_COOKIE,
  SIGN_IN_COOKIE,
} from '../session';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SIGN_IN_FORM_SECONDS = 3_600;
const RECENT_RUNS = 25;
/** The usage page's window (days, today included) and its transactions per page. */
const USAGE_DAYS = 30;
const TRANSACTIONS_PAGE_SIZE = 20;
const RUNS_PAGE_SIZE = 50;
const CREDENTIALS_PAGE_SIZE = 50;
const AUTOMATIONS_PAGE_SIZE = 20;
const AUTOMATION_LAST_RUNS = 5;
const AUTOMATION_NEXT_FIRES = 3;

/** A `?page=` value: a whole number from 1, else the first page. */
function pageNumber(raw: unknown): number {
  const page = Number(raw ?? '1');
  return Number.isInteger(page) && page >= 1 && page <= 100_000 ? page : 1;
}

/** One query value among the allowed ones, else null (an unknown filter value shows everything, as "every"). */
function oneOf<T extends string>(raw: unknown, allowed: readonly T[]): T | null {
  return typeof raw === 'string' && (allowed as readonly string[]).includes(raw) ? (raw as T) : null;
}

/** The run's workflow in the Temporal Web UI (for operators). */
export function temporalUiLink(config: WebDeps['config'], workflowId: string): string {
  return `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.temporalNamespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** The fields of a credential form, from an entry's requiredUserParamsSchema (flat values only, by its rules). */
function credentialFields(schema: Record<string, unknown> | null | undefined): CredentialParamField[] {
  const properties = (schema?.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set(Array.isArray(schema?.required) ? (schema.required as string[]) : []);
  return Object.entries(properties).map(([name, property]) => {
    const type = ['number', 'integer', 'boolean'].includes(property?.type as string)
      ? (property.type as 'number' | 'integer' | 'boolean')
      : 'string';
    return {
      name,
      type,
      required: required.has(name),
      secret: property?.writeOnly === true || property?.format === 'password',
      description: typeof property?.description === 'string' ? property.description : '',
      options: Array.isArray(property?.enum) ? property.enum.map(String) : null,
    };
  });
}

/** A credential form's values as the API takes them: numbers as numbers, checkboxes as booleans, empty fields left out. */
function credentialParams(fields: CredentialParamField[], form: URLSearchParams): SourceParamValues {
  const params: SourceParamValues = {};
  for (const field of fields) {
    const raw = form.get(`param.${field.name}`);
    if (field.type === 'boolean') {
      params[field.name] = raw === 'true';
      continue;
    }
    if (raw === null || raw === '') continue;
    const number = Number(raw.trim());
    params[field.name] = field.type === 'string' || raw.trim() === '' || !Number.isFinite(number) ? raw : number;
  }
  return params;
}

/** Where to go after signing in: a console or market page, or an OAuth authorization's consent page (never another site). */
function safeNext(raw: unknown): string | null {
  return typeof raw === 'string' &&
    !raw.includes('..') &&
    (/^\/(console|market)(\/[A-Za-z0-9_.-]+)*$/.test(raw) || /^\/oauth\/interaction\/[A-Za-z0-9_-]+$/.test(raw))
    ? raw
    : null;
}

/**
 * A budgets form's amounts (BudgetsForm: a credential's, or the API key's): an empty field is no budget; an amount
 * that is not a positive whole number of micro-USD (at most 1,000,000 USD) is the problem shown, never rounded.
 */
function budgetsForm(form: URLSearchParams): { monthly: number | null; total: number | null; problem?: string } {
  const amount = (name: string, what: string): number | null | string => {
    const text = (form.get(name) ?? '').trim();
    if (text === '') return null;
    const usd = Number(text);
    return (usdToWholeMicros(usd) ?? 0) > 0 && usd <= 1_000_000
      ? usd
      : `The ${what} must be a positive amount of USD in whole micro-USD (at most 6 decimals, at most 1000000), or empty for none.`;
  };
  const monthly = amount('budgetMonthly', 'monthly budget');
  const total = amount('budgetTotal', 'total budget');
  if (typeof monthly === 'string') return { monthly: null, total: null, problem: monthly };
  if (typeof total === 'string') return { monthly: null, total: null, problem: total };
  return { monthly, total };
}

function seeOther(ctx: WebContext, url: string): void {
  ctx.status = 303;
  ctx.redirect(url);
}

/**
 * The console: sign-in with an API key into a server-side session, the account's home (money and
 * recent runs) and a page per run with live logs. Every POST passes the Origin/Sec-Fetch-Site check
 * and brings back its form's token.
 */
export function consoleRoutes(deps: WebDeps): Router {
  const router = new Router<WebState>({ prefix: '/console' });
  const lifetimes = sessionLifetimes(deps.config);

  /** The session, or a redirect to the sign-in page (which then comes back here). */
  const signedIn = (ctx: WebContext) => signedInOrRedirect(ctx, deps);

  async function signInPage(ctx: WebContext, next: string | null, problem: string | null, status = 200) {
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
      recentJobs(deps.db, session.user.userId, RECENT_RUNS),
      liveSessionCount(deps.db, session.user.userId, lifetimes),
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
    const signedInWith = await signInWithApiKey(deps.db, apiKey, lifetimes);
    if (!signedInWith)
      return signInPage(ctx, next, 'That API key is not valid (or has been rotated). Check it and try again.', 401);
    const { token } = signedInWith;
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
        await signOut(deps.db, session, everywhere);
      }
      clearCookie(ctx, SESSION_COOKIE);
      seeOther(ctx, '/console/sign-in');
    });
  }

  router.get('/usage', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const pageNumber = Number(ctx.query.page ?? '1');
    const page = {
      page: Number.isInteger(pageNumber) && pageNumber >= 1 && pageNumber <= 100_000 ? pageNumber : 1,
      pageSize: TRANSACTIONS_PAGE_SIZE,
    };
    const view = await usageOverview(deps.db, session.user, { days: USAGE_DAYS, page });
    await sendPage(ctx, <UsagePage view={view} />, { private: true });
  });

  /** The account's OAuth grants (issue 25): which client may call which listing; each revocable. */
  router.get('/connections', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const rows = await connectedApps(deps, session.user.userId);
    await sendPage(ctx, <ConnectionsPage email={session.user.email} csrfToken={session.csrfToken} rows={rows} />, {
      private: true,
    });
  });

  router.post('/connections/:grantId/revoke', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    const session = await signedIn(ctx);
    if (!session) return;
    requireFormToken(form.get('csrf'), session.csrfToken);
    const grantId = String(ctx.params.grantId);
    // Another account's grant is exactly as absent as one that never existed.
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(grantId) || !(await revokeConnectedApp(deps, session.user.userId, grantId)))
      throw pageNotFound('You have no connected app with this id.');
    seeOther(ctx, '/console/connections');
  });

  /** The API key of the session (never its value) and its budgets for the account's own market calls. */
  router.get('/api-key', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const saved = ctx.query.saved === '1';
    await sendPage(
      ctx,
      <ApiKeyPage
        email={session.user.email}
        csrfToken={session.csrfToken}
        apiKey={await apiKeyBudgets(deps.db, session.user.userId, session.apiKeyId)}
        notice={
          saved ? { saved: true, message: "This key's budgets are saved: its next call is bounded by them." } : null
        }
      />,
      { private: true },
    );
  });

  /** Sets the session's API key's budgets (the service PATCH /account/api-key calls). */
  router.post('/api-key/budgets', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    const session = await signedIn(ctx);
    if (!session) return;
    requireFormToken(form.get('csrf'), session.csrfToken);
    const { monthly, total, problem } = budgetsForm(form);
    if (problem) {
      await sendPage(
        ctx,
        <ApiKeyPage
          email={session.user.email}
          csrfToken={session.csrfToken}
          apiKey={await apiKeyBudgets(deps.db, session.user.userId, session.apiKeyId)}
          notice={{ saved: false, message: problem }}
        />,
        { status: 400, private: true },
      );
      return;
    }
    await updateApiKeyBudgets(deps.db, session.user.userId, session.apiKeyId, {
      budgetMonthlyUsd: monthly,
      budgetTotalUsd: total,
    });
    seeOther(ctx, '/console/api-key?saved=1#api-key-budgets-heading');
  });

  const ownRun = async (ctx: WebContext, session: WebSession) => {
    const id = String(ctx.params.id);
    const job = UUID.test(id) ? await ownJob(deps.db, session.user.userId, id.toLowerCase()) : undefined;
    // Another account's run is exactly as absent as one that never existed.
    if (!job) throw pageNotFound('You have no run with this id.');
    return job;
  };

  router.get('/runs', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const filter = {
      kind: oneOf<JobKind>(ctx.query.kind, RUN_KINDS),
      status: oneOf<JobStatus>(ctx.query.status, RUN_STATUSES),
    };
    const page = { page: pageNumber(ctx.query.page), pageSize: RUNS_PAGE_SIZE };
    const { rows, total } = await ownJobsPage(
      deps.db,
      session.user.userId,
      { kind: filter.kind ?? undefined, status: filter.status ?? undefined },
      page,
    );
    await sendPage(
      ctx,
      <RunsPage
        view={{
          email: session.user.email,
          filter,
          rows,
          page: page.page,
          totalPages: Math.ceil(total / page.pageSize),
          total,
        }}
      />,
      { private: true },
    );
  });

  router.get('/automations', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const page = { page: pageNumber(ctx.query.page), pageSize: AUTOMATIONS_PAGE_SIZE };
    const { items, total } = await automationsOverview(deps, session.user.userId, page, AUTOMATION_LAST_RUNS);
    await sendPage(
      ctx,
      <AutomationsPage
        view={{
          email: session.user.email,
          items,
          page: page.page,
          totalPages: Math.ceil(total / page.pageSize),
          total,
          lastRunsShown: AUTOMATION_LAST_RUNS,
          nextFireTimesShown: AUTOMATION_NEXT_FIRES,
        }}
      />,
      { private: true },
    );
  });

  async function credentialEntry(id: string): Promise<CredentialEntry | null> {
    const entry = UUID.test(id) ? await findPublicMcpEntry(deps.db, id.toLowerCase()) : undefined;
    if (!entry) return null;
    const schema = entry.requiredUserParamsSchema ?? {};
    return { entryId: entry.listingId, name: entry.name, schema, fields: credentialFields(schema) };
  }

  const credentialsView = async (
    session: WebSession,
    changes: Partial<CredentialsView>,
    page = 1,
  ): Promise<CredentialsView> => {
    const listed = await listEntryCredentials(deps.db, session.user.userId, {
      page,
      pageSize: CREDENTIALS_PAGE_SIZE,
    });
    // The chooser of the listing a new credential is for: shown when no entry is chosen yet.
    const choosing = !changes.entry && !changes.issued;
    const used = choosing ? await listingsInUse(deps.db, session.user.userId) : [];
    return {
      email: session.user.email,
      csrfToken: session.csrfToken,
      entryQuery: '',
      entry: null,
      values: {},
      cap: '',
      budgetTotal: '',
      budgetMonthly: '',
      label: '',
      problem: null,
      issued: null,
      revoked: null,
      listings: { q: '', used, found: null },
      budgets: null,
      list: { rows: listed.credentials, page, totalPages: listed.meta.totalPages },
      ...changes,
    };
  };

  /** A search of live listings by name for the chooser (`?q=`): null when nothing is asked. */
  const foundListings = async (raw: unknown): Promise<{ q: string; found: ListingChoice[] | null }> => {
    const q = typeof raw === 'string' ? raw.trim().slice(0, 200) : '';
    return { q, found: q ? await findListingsByName(deps.db, q) : null };
  };

  router.get('/credentials', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const entryQuery = typeof ctx.query.entry === 'string' ? ctx.query.entry.trim() : '';
    const entry = entryQuery ? await credentialEntry(entryQuery) : null;
    if (entryQuery && !entry) throw pageNotFound('No live tool-market entry has this id.');
    const page = pageNumber(ctx.query.page);
    const revoked =
      typeof ctx.query.revoked === 'string' && UUID.test(ctx.query.revoked)
        ? `Credential ${ctx.query.revoked.toLowerCase()} is revoked: requests made with it are refused.`
        : null;
    const budgets =
      typeof ctx.query.budgets === 'string' && UUID.test(ctx.query.budgets)
        ? {
            credentialId: ctx.query.budgets.toLowerCase(),
            saved: true,
            message: `The budgets of credential ${ctx.query.budgets.toLowerCase()} are saved: its next call is bounded by them.`,
          }
        : null;
    const view = await credentialsView(session, { entryQuery, entry, revoked, budgets }, page);
    const search = await foundListings(ctx.query.q);
    await sendPage(ctx, <CredentialsPage view={{ ...view, listings: { ...view.listings, ...search } }} />, {
      private: true,
    });
  });

  /** The chooser's search results alone, which htmx swaps into the credentials page as the person types. */
  router.get('/credentials/listings', async (ctx) => {
    const session = await currentSession(ctx, deps);
    if (!session) {
      await sendFragment(ctx, <p role="alert">Your session has ended: sign in again.</p>, { status: 401 });
      return;
    }
    const search = await foundListings(ctx.query.q);
    await sendFragment(ctx, <ListingResults q={search.q} found={search.found} />);
  });

  /** Revokes one of the account's credentials (the service DELETE /mcp-market/credentials/{id} calls). */
  router.post('/credentials/revoke/:credentialId', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    const session = await signedIn(ctx);
    if (!session) return;
    requireFormToken(form.get('csrf'), session.csrfToken);
    const id = String(ctx.params.credentialId);
    if (!UUID.test(id)) throw pageNotFound('You have no credential with this id.');
    try {
      await revokeEntryCredential(deps, session.user.userId, id.toLowerCase());
    } catch (err) {
      // Another account's credential is exactly as absent as one that never existed.
      if ((err as { status?: unknown }).status === 404) throw pageNotFound('You have no credential with this id.');
      throw err;
    }
    seeOther(ctx, `/console/credentials?revoked=${id.toLowerCase()}#list-heading`);
  });

  /** Sets one of the account's credentials' budgets (the service PATCH /mcp-market/credentials/{id} calls). */
  router.post('/credentials/budgets/:credentialId', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    const session = await signedIn(ctx);
    if (!session) return;
    requireFormToken(form.get('csrf'), session.csrfToken);
    const id = String(ctx.params.credentialId);
    if (!UUID.test(id)) throw pageNotFound('You have no credential with this id.');
    const credentialId = id.toLowerCase();
    const { monthly, total, problem } = budgetsForm(form);
    if (problem) {
      await sendPage(
        ctx,
        <CredentialsPage
          view={await credentialsView(session, { budgets: { credentialId, saved: false, message: problem } })}
        />,
        { status: 400, private: true },
      );
      return;
    }
    try {
      await updateCredentialBudgets(deps.db, session.user.userId, credentialId, {
        budgetMonthlyUsd: monthly,
        budgetTotalUsd: total,
      });
    } catch (err) {
      // Another account's credential is exactly as absent as one that never existed.
      if ((err as { status?: unknown }).status === 404) throw pageNotFound('You have no credential with this id.');
      throw err;
    }
    if (form.get('back') === 'connections') return seeOther(ctx, '/console/connections');
    seeOther(ctx, `/console/credentials?budgets=${credentialId}#credential-${credentialId}`);
  });

  router.post('/credentials/:entryId', async (ctx) => {
    requireSameOrigin(ctx, deps.config);
    const form = await readForm(ctx);
    const session = await signedIn(ctx);
    if (!session) return;
    requireFormToken(form.get('csrf'), session.csrfToken);
    const entry = await credentialEntry(String(ctx.params.entryId));
    if (!entry) throw pageNotFound('No live tool-market entry has this id.');
    const capText = (form.get('cap') ?? '').trim();
    const budgetTotal = (form.get('budgetTotal') ?? '').trim();
    const budgetMonthly = (form.get('budgetMonthly') ?? '').trim();
    const label = (form.get('label') ?? '').trim();
    const values = Object.fromEntries(
      entry.fields.filter((f) => !f.secret).map((f) => [f.name, form.get(`param.${f.name}`) ?? '']),
    );
    const refuse = async (problem: string) =>
      sendPage(
        ctx,
        <CredentialsPage
          view={await credentialsView(session, {
            entry,
            values,
            cap: capText,
            budgetTotal,
            budgetMonthly,
            label,
            problem,
          })}
        />,
        { status: 400, private: true },
      );
    const cap = capText === '' ? undefined : Number(capText);
    if (cap !== undefined && (!((usdToWholeMicros(cap) ?? 0) > 0) || cap > 1_000_000))
      return refuse(
        'The limit per run must be a positive amount of USD in whole micro-USD (at most 6 decimals, at most 1000000), or empty.',
      );
    const budget = (text: string, what: string) => {
      if (text === '') return { usd: undefined };
      const usd = Number(text);
      return (usdToWholeMicros(usd) ?? 0) > 0 && usd <= 1_000_000
        ? { usd }
        : {
            problem: `The ${what} must be a positive amount of USD in whole micro-USD (at most 6 decimals, at most 1000000), or empty.`,
          };
    };
    const monthly = budget(budgetMonthly, 'monthly budget');
    const total = budget(budgetTotal, 'total budget');
    if (monthly.problem) return refuse(monthly.problem);
    if (total.problem) return refuse(total.problem);
    if (label.length > 100) return refuse('The label must be at most 100 characters.');
    try {
      const issued = await issueEntryCredential(deps, {
        userId: session.user.userId,
        apiKeyId: async () => session.apiKeyId,
        entryId: entry.entryId,
        params: credentialParams(entry.fields, form),
        maxTotalUsdPerRun: cap,
        budgetMonthlyUsd: monthly.usd,
        budgetTotalUsd: total.usd,
        label,
        apiOrigin: publicOrigin(ctx, deps.config),
      });
      await sendPage(ctx, <CredentialsPage view={await credentialsView(session, { entry, issued })} />, {
        status: 201,
        private: true,
      });
    } catch (err) {
      const status = (err as { status?: unknown }).status;
      if ((err instanceof MarketRuleError || err instanceof Error) && status === 400)
        return refuse((err as Error).message);
      throw err;
    }
  });

  router.get('/runs/:id', async (ctx) => {
    const session = await signedIn(ctx);
    if (!session) return;
    const job = await ownRun(ctx, session);
    await sendPage(
      ctx,
      <RunPage job={job} email={session.user.email} temporalUrl={temporalUiLink(deps.config, job.workflow_id)} />,
      { private: true },
    );
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
