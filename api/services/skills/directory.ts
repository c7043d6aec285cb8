import type { Db } from '../../../db/connect';
import { importJsonLines } from '../../../db/skills/import';
import { plainSearch } from '../../../db/skills/search';
import type { Embedder } from '../../../lib/skills/embeddings';
import type { SkillsRefreshInput, SkillsRefreshResult } from '../../../workflows/skills-refresh';
import type { ApiDeps } from '../../deps';
import { ApiError } from '../../errors';
import { startAndWait } from '../shared/start-and-wait';

const REFRESH_WAIT_MS = 5 * 60_000;

/** GET /skills/directory/search: a page of the plain full-text search. */
export async function searchSkillsDirectory(db: Db, q: string, page: { page: number; pageSize: number }) {
  const { items, total } = await plainSearch(db, q, page);
  return { items, meta: { page: page.page, pageSize: page.pageSize, total } };
}

/** POST /admin/skills/import: a chunk of a JSON Lines file imported (`firstLine` numbers its lines in errors). */
export function importSkills(db: Db, embedder: Embedder | null, body: { jsonl: string; firstLine: number }) {
  return importJsonLines(db, body.jsonl, { firstLine: body.firstLine, embedder });
}

/**
 * POST /admin/skills/refresh: the GitHub refresh started now (a refresh already running is joined rather than
 * doubled), waited for when asked, within a bound: with no worker polling, it stays queued and is not finished.
 */
export async function refreshSkillsNow(
  deps: Pick<ApiDeps, 'temporal' | 'config'>,
  body: { repos?: string[]; wait: boolean },
) {
  if (!body.repos && deps.config.skills.githubRepos.length === 0) {
    throw new ApiError(400, 'validation_failed', 'No repositories: set SKILLS_GITHUB_REPOS or pass "repos"');
  }
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
  return outcome.finished
    ? { finished: true as const, ...accepted, result: outcome.result }
    : { finished: false as const, ...accepted };
}
