import Router from '@koa/router';
import type { Context } from 'koa';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
import type { AuthenticatedUser } from '../../db/repos/users';
import { aiSearch } from '../services/skills-ai-search';
import { embedderFromConfig, serviceLlmClient } from '../../lib/skills/embeddings';
import { importJsonLines } from '../../db/skills/import';
import { plainSearch } from '../../db/skills/search';
import type { SkillsRefreshInput, SkillsRefreshResult } from '../../workflows/skills-refresh';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { AdminSkillsImportRequest, AdminSkillsRefreshRequest, SkillsSearchQuery, type SkillsSearchParams } from '../../lib/schemas/skills';
import { parseBody, parseQuery } from '../validation';

const REFRESH_WAIT_MS = 5 * 60_000;

/** The skills directory: plain full-text search and AI search (see lib/skills). */
export function skillsRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const ai = {
    db: deps.db,
    llm: serviceLlmClient(deps.config, 30_000),
    embedder: embedderFromConfig(deps.config),
    model: deps.config.skills.aiModel,
    prices: deps.config.modelPrices,
    rerank: deps.config.skills.rerank,
  };

  router.get('/skills/directory/search', async (ctx: Context) => {
    const { q, page, pageSize } = parseQuery<SkillsSearchParams>(SkillsSearchQuery, ctx.query);
    const { items, total } = await plainSearch(deps.db, q, { page, pageSize });
    ctx.body = { items, meta: { page, pageSize, total } };
  });

  router.get('/skills/directory/ai-search', async (ctx: Context) => {
    const user = ctx.state.user as AuthenticatedUser;
    const { q, page, pageSize } = parseQuery<SkillsSearchParams>(SkillsSearchQuery, ctx.query);
    ctx.body = await aiSearch(ai, { userId: user.userId, q, page, pageSize, requestId: String(ctx.state.requestId) });
  });

  return router;
}

/**
 * Operator routes, registered on the admin router (prefix /admin, ADMIN_TOKEN): JSON Lines import
 * (the CLI sends a file in chunks under the body limit) and an immediate GitHub refresh.
 */
export function registerSkillsAdminRoutes(router: Router, deps: ApiDeps): void {
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
    let handle;
    try {
      handle = await deps.temporal.workflow.start('skillsRefreshWorkflow', {
        taskQueue: deps.config.taskQueues.platform,
        workflowId: 'skills-directory-refresh-now',
        args: [{ repos: body.repos } satisfies SkillsRefreshInput],
        // A refresh already running is joined rather than doubled.
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      });
    } catch (err) {
      throw new ApiError(503, 'service_unavailable', `The workflow engine is unavailable: ${(err as Error).message}`, undefined, { 'Retry-After': '5' });
    }
    const accepted = { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
    // `wait` is bounded: with no worker polling, the refresh stays queued and the answer is 202 after all.
    let timer: NodeJS.Timeout | undefined;
    const result = body.wait
      ? await Promise.race([
          handle.result() as Promise<SkillsRefreshResult>,
          new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), REFRESH_WAIT_MS))),
        ]).finally(() => clearTimeout(timer))
      : null;
    if (!result) {
      ctx.status = 202;
      ctx.body = accepted;
      return;
    }
    ctx.body = { ...accepted, result };
  });
}
