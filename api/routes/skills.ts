import Router from '@koa/router';
import { aiSearch } from '../services/skills-ai-search';
import { embedderFromConfig, serviceLlmClient } from '../../lib/skills/embeddings';
import { importJsonLines } from '../../db/skills/import';
import { plainSearch } from '../../db/skills/search';
import type { SkillsRefreshInput, SkillsRefreshResult } from '../../workflows/skills-refresh';
import type { AppState, UserState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { AdminSkillsImportRequest, AdminSkillsRefreshRequest, SkillsSearchQuery, type SkillsSearchParams } from '../../lib/schemas/skills';
import { parseBody, parseQuery } from '../validation';
import { startAndWait } from '../services/workflow-call';

const REFRESH_WAIT_MS = 5 * 60_000;

/** The skills directory: plain full-text search and AI search (see lib/skills). */
export function skillsRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();
  const ai = {
    db: deps.db,
    llm: serviceLlmClient(deps.config, 30_000),
    embedder: embedderFromConfig(deps.config),
    model: deps.config.skills.aiModel,
    prices: deps.config.modelPrices,
    rerank: deps.config.skills.rerank,
  };

  router.get('/skills/directory/search', async (ctx) => {
    const { q, page, pageSize } = parseQuery<SkillsSearchParams>(SkillsSearchQuery, ctx.query);
    const { items, total } = await plainSearch(deps.db, q, { page, pageSize });
    ctx.body = { items, meta: { page, pageSize, total } };
  });

  router.get('/skills/directory/ai-search', async (ctx) => {
    const user = ctx.state.user;
    const { q, page, pageSize } = parseQuery<SkillsSearchParams>(SkillsSearchQuery, ctx.query);
    ctx.body = await aiSearch(ai, { userId: user.userId, q, page, pageSize, requestId: ctx.state.requestId });
  });

  return router;
}

/**
 * Operator routes, registered on the admin router (prefix /admin, ADMIN_TOKEN): JSON Lines import
 * (the CLI sends a file in chunks under the body limit) and an immediate GitHub refresh.
 */
export function registerSkillsAdminRoutes(router: Router<AppState>, deps: ApiDeps): void {
  const embedder = embedderFromConfig(deps.config);

  router.post('/skills/import', async (ctx) => {
    const body = parseBody<{ jsonl: string; firstLine: number }>(AdminSkillsImportRequest, ctx.state.body);
    ctx.body = await importJsonLines(deps.db, body.jsonl, { firstLine: body.firstLine, embedder });
  });

  router.post('/skills/refresh', async (ctx) => {
    const body = parseBody<{ repos?: string[]; wait: boolean }>(AdminSkillsRefreshRequest, ctx.state.body ?? {});
    if (!body.repos && deps.config.skills.githubRepos.length === 0) {
      throw new ApiError(400, 'validation_failed', 'No repositories: set SKILLS_GITHUB_REPOS or pass "repos"');
    }
    // A refresh already running is joined rather than doubled. `wait` is bounded: with no worker polling, the
    // refresh stays queued and the answer is 202 after all.
    const outcome = await startAndWait<SkillsRefreshResult>(
      deps.temporal,
      { workflowType: 'skillsRefreshWorkflow', workflowId: 'skills-directory-refresh-now', taskQueue: deps.config.taskQueues.platform, args: [{ repos: body.repos } satisfies SkillsRefreshInput] },
      { waitMs: body.wait ? REFRESH_WAIT_MS : 0, join: true },
    );
    const accepted = { workflowId: outcome.workflowId, runId: outcome.runId };
    if (!outcome.finished) {
      ctx.status = 202;
      ctx.body = accepted;
      return;
    }
    ctx.body = { ...accepted, result: outcome.result };
  });
}
