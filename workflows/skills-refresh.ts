import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { SkillsActivities } from '../activities/skills';
import type { RepositoryRefreshSummary } from '../activities/skills/refresh';

export interface SkillsRefreshInput {
  /** Repositories to refresh; by default the worker's SKILLS_GITHUB_REPOS. */
  repos?: string[];
}

export interface SkillsRefreshResult {
  repos: ({ repo: string; ok: true; summary: RepositoryRefreshSummary } | { repo: string; ok: false; error: string })[];
  embeddingsBackfilled: number;
  embeddingsError?: string;
}

const skills = proxyActivities<SkillsActivities>({
  startToCloseTimeout: '10m',
  retry: {
    initialInterval: '5s',
    backoffCoefficient: 2,
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['InvalidRepository', 'GithubRepositoryUnavailable'],
  },
});

/** Refreshes the skills directory from GitHub, one repository at a time; one failing repository does not stop the others. */
export async function skillsRefreshWorkflow(input: SkillsRefreshInput = {}): Promise<SkillsRefreshResult> {
  const repos = input.repos?.length ? input.repos : await skills.listSkillsRepos();
  const result: SkillsRefreshResult = { repos: [], embeddingsBackfilled: 0 };
  for (const repo of repos) {
    try {
      result.repos.push({ repo, ok: true, summary: await skills.refreshSkillsRepo({ repo }) });
    } catch (err) {
      const cause = err instanceof ApplicationFailure ? err : ((err as { cause?: unknown }).cause ?? err);
      result.repos.push({ repo, ok: false, error: cause instanceof Error ? cause.message : String(cause) });
    }
  }
  try {
    result.embeddingsBackfilled = (await skills.backfillSkillEmbeddings()).embedded;
  } catch (err) {
    // Items without embeddings still answer plain and full-text search; the next refresh tries again.
    const cause = (err as { cause?: unknown }).cause ?? err;
    result.embeddingsError = cause instanceof Error ? cause.message : String(cause);
  }
  return result;
}
