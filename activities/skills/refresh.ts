import type { Db } from '../../db/connect';
import { deleteMissingFromRepository, upsertItems } from '../../db/skills/catalogue';
import type { Embedder } from '../../lib/skills/embeddings';
import { listRepositorySkills, type GithubSourceOptions } from '../../lib/skills/github';

export interface RepositoryRefreshSummary {
  repo: string;
  branch: string;
  found: number;
  inserted: number;
  updated: number;
  unchanged: number;
  deleted: number;
  failed: { path: string; error: string }[];
  embedded: number;
  embeddingError?: string;
}

/** Lists one repository and brings its catalogue items up to date. */
export async function refreshRepository(
  db: Db,
  options: GithubSourceOptions,
  spec: string,
  embedder: Embedder | null,
): Promise<RepositoryRefreshSummary> {
  const listing = await listRepositorySkills(options, spec);
  // Two folders can declare the same externalId only through odd paths; keep the first.
  const seen = new Set<string>();
  const items = listing.items.filter((i) => !seen.has(i.externalId) && seen.add(i.externalId));
  const result = await upsertItems(db, items, embedder);
  const summary: RepositoryRefreshSummary = {
    repo: `${listing.owner}/${listing.repo}`,
    branch: listing.branch,
    found: items.length,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    deleted: 0,
    failed: [...listing.failed],
    embedded: result.embedded,
    ...(result.embeddingError ? { embeddingError: result.embeddingError } : {}),
  };
  result.outcomes.forEach((outcome, i) => {
    if (typeof outcome === 'string') summary[outcome]++;
    else summary.failed.push({ path: items[i].externalId, error: outcome.error });
  });
  if (listing.complete && listing.failed.length === 0) {
    summary.deleted = await deleteMissingFromRepository(
      db,
      listing.owner,
      listing.repo,
      items.map((i) => i.externalId),
    );
  }
  return summary;
}
