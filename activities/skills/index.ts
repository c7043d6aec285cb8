import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import type { Config } from '../../lib/config';
import { backfillEmbeddings } from '../../db/skills/catalogue';
import { embedderFromConfig } from '../../lib/skills/embeddings';
import { GithubApiError } from '../../lib/skills/github';
import { refreshRepository, type RepositoryRefreshSummary } from './refresh';

export function createSkillsActivities({ db, config }: { db: Db; config: Config }) {
  const github = { apiBase: config.skills.githubApiBase, token: config.skills.githubToken };
  return {
    /** The repositories this worker is configured to follow (SKILLS_GITHUB_REPOS). */
    async listSkillsRepos(): Promise<string[]> {
      return config.skills.githubRepos;
    },

    /** Lists one repository's SKILL.md folders and upserts them; a missing repository is not retried. */
    async refreshSkillsRepo(input: { repo: string }): Promise<RepositoryRefreshSummary> {
      if (!/^[\w.-]+\/[\w.-]+$/.test(input.repo))
        throw ApplicationFailure.nonRetryable(`"${input.repo}" is not owner/repo`, 'InvalidRepository');
      try {
        return await refreshRepository(db, github, input.repo, embedderFromConfig(config));
      } catch (err) {
        // 403 is often GitHub's rate limit, which a later attempt can pass.
        if (err instanceof GithubApiError && (err.status === 401 || err.status === 404)) {
          throw ApplicationFailure.nonRetryable(err.message, 'GithubRepositoryUnavailable');
        }
        throw err;
      }
    },

    /** Embeds items that have none for the configured model (imported while embeddings were unavailable). */
    async backfillSkillEmbeddings(): Promise<{ embedded: number }> {
      const embedder = embedderFromConfig(config);
      if (!embedder) return { embedded: 0 };
      return { embedded: await backfillEmbeddings(db, embedder) };
    },
  };
}

export type SkillsActivities = ReturnType<typeof createSkillsActivities>;
