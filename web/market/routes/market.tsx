import Router from '@koa/router';
import type { WebContext, WebState } from '../../context';
import { marketToolsViewer } from '../../../api/services/market/agent-tools';
import {
  agentEntryView,
  mayRunAgent,
  searchAgentMarket,
  searchToolMarket,
  toolEntryView,
} from '../../../api/services/market/catalog';
import { marketMcpUrl, publicOrigin } from '../../../api/services/shared/public-urls';
import { POISONING_CODES, type ValidationReport } from '../../../lib/market/validation-report';
import { uploadedIconUrl } from '../../components/listing';
import type { WebDeps } from '../../deps';
import { agentPaidOf, parseMarketQuery, toolStrategyOf } from '../market-query';
import { pageNotFound, sendPage } from '../../page';
import { AgentListingPage } from '../pages/agent-listing';
import { MarketPage, type AgentCard, type Results, type ToolCard } from '../pages/market';
import { ToolListingPage } from '../pages/tool-listing';
import { currentSession } from '../../session';
import {
  findEmails,
  findPublicAgent,
  findPublicMcpEntry,
  findValidationReports,
} from '../../../api/services/market/reads';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Listing URLs are built for the page's own origin: icons load from it (CSP img-src 'self'). */
const iconUrl = (key: string) => uploadedIconUrl(key)!;

/** How a listing names its provider: the domain of the provider account's email (the account has no public name). */
async function providerNames(deps: WebDeps, ownerIds: string[]): Promise<Map<string, string>> {
  const emails = await findEmails(deps.db, ownerIds);
  return new Map(
    [...emails].map(([id, email]) => [id, `An account at ${email.split('@')[1] ?? 'an undisclosed domain'}`]),
  );
}

/** What the listing shows of its validation: the score, and the notes and scan findings about the tools it lists (or the whole source). */
function validationSummary(report: ValidationReport, listed: Set<string>) {
  const issues = report.issues.filter((issue) => !issue.tool || listed.has(issue.tool));
  return {
    qualityScore: report.qualityScore,
    issues,
    scanFindings: issues.filter((issue) => (POISONING_CODES as readonly string[]).includes(issue.code)),
  };
}

/** The public pages of both markets: the catalogue and one page per listing (no sign-in; crawlable; no script). */
export function marketRoutes(deps: WebDeps): Router {
  const router = new Router<WebState>();

  const signedInAs = async (ctx: WebContext) => (await currentSession(ctx, deps))?.user.email ?? null;

  router.get('/market', async (ctx) => {
    const query = parseMarketQuery(ctx.query);
    const single = query.market !== 'all';
    const page = { page: single ? query.page : 1, pageSize: single ? 24 : 6 };
    const bounds = {
      q: query.q || undefined,
      minPriceMicros: query.minMicros,
      maxPriceMicros: query.maxMicros,
      sort: query.sort,
    };

    let tools: Results<ToolCard> | null = null;
    const strategy = toolStrategyOf(query.pricing);
    if (query.market !== 'agents' && strategy !== null) {
      const { rows, total } = await searchToolMarket(deps.db, { ...bounds, monetizationStrategy: strategy }, page);
      const reports = await findValidationReports(
        deps.db,
        rows.map((row) => row.validationId),
      );
      tools = {
        total,
        pageSize: page.pageSize,
        cards: rows.map((row) => ({
          entry: toolEntryView(row, iconUrl),
          iconUrl: uploadedIconUrl(row.iconObjectKey),
          qualityScore: reports.get(row.validationId)?.report.qualityScore ?? null,
        })),
      };
    }

    let agents: Results<AgentCard> | null = null;
    const paid = agentPaidOf(query.pricing);
    if (query.market !== 'tools' && paid !== null) {
      const { rows, total } = await searchAgentMarket(deps.db, { ...bounds, paid }, page);
      agents = {
        total,
        pageSize: page.pageSize,
        cards: rows.map((row) => ({
          entry: agentEntryView(row, iconUrl, false, []),
          iconUrl: uploadedIconUrl(row.iconObjectKey),
        })),
      };
    }
    const email = await signedInAs(ctx);
    await sendPage(ctx, <MarketPage query={query} tools={tools} agents={agents} signedInAs={email} />, {
      private: !!email,
    });
  });

  router.get('/market/tools/:id', async (ctx) => {
    const id = String(ctx.params.id);
    const entry = UUID.test(id) ? await findPublicMcpEntry(deps.db, id.toLowerCase()) : null;
    if (!entry) throw pageNotFound('No tool-market listing has this address: it may have been withdrawn.');
    const [reports, providers] = await Promise.all([
      findValidationReports(deps.db, [entry.validationId]),
      providerNames(deps, [entry.ownerId]),
    ]);
    const report = reports.get(entry.validationId)?.report;
    const view = toolEntryView(entry, iconUrl);
    const email = await signedInAs(ctx);
    await sendPage(
      ctx,
      <ToolListingPage
        signedInAs={email}
        listing={{
          entry: view,
          iconUrl: uploadedIconUrl(entry.iconObjectKey),
          providerName: providers.get(entry.ownerId) ?? 'Unknown',
          validation: report ? validationSummary(report, new Set(view.tools.map((tool) => tool.toolName))) : null,
          connect: {
            name: entry.slug,
            url: marketMcpUrl(deps.config, publicOrigin(ctx, deps.config), entry.listingId),
          },
        }}
      />,
      { private: !!email },
    );
  });

  router.get('/market/agents/:id', async (ctx) => {
    const id = String(ctx.params.id);
    const agent = UUID.test(id) ? await findPublicAgent(deps.db, id.toLowerCase()) : null;
    if (!agent) throw pageNotFound('No agent-market listing has this address: it may have been withdrawn.');
    const session = await currentSession(ctx, deps);
    const [providers, marketTools, purchased] = await Promise.all([
      providerNames(deps, [agent.ownerId]),
      marketToolsViewer(deps.db)(agent.mcpSelections),
      session ? mayRunAgent(deps.db, agent, session.user.userId) : false,
    ]);
    await sendPage(
      ctx,
      <AgentListingPage
        signedInAs={session?.user.email ?? null}
        listing={{
          entry: agentEntryView(agent, iconUrl, purchased, marketTools),
          iconUrl: uploadedIconUrl(agent.iconObjectKey),
          providerName: providers.get(agent.ownerId) ?? 'Unknown',
        }}
      />,
      { private: !!session },
    );
  });

  return router;
}
