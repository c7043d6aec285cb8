import type Router from '@koa/router';
import { importJsonLines } from '../../db/skills/import';
import { AdminSkillsImportRequest, AdminSkillsRefreshRequest } from '../../lib/schemas/skills';
import { embedderFromConfig } from '../../lib/skills/embeddings';
import type { SkillsRefreshInput, SkillsRefreshResult } from '../../workflows/skills-refresh';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { startAndWait } from '../services/shared/start-and-wait';
import { parseBody } from '../validation';

const REFRESH_WAIT_MS = 5 * 60_000;

/**
 * The skills directory's operator routes, on the admin router (prefix /admin, ADMIN_TOKEN): JSON Lines import
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
      {
        workflowType: 'skillsRefreshWorkflow',
        workflowId: 'skills-directory-refresh-now',
        taskQueue: deps.config.taskQueues.platform,
        args: [{ repos: body.repos } satisfies SkillsRefreshInput],
      },
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
