import type { Selectable } from 'kysely';
import type { SkillsDirectoryTable } from '../schema';
import type { SkillsDirectoryItem } from '../../lib/skills/item';

export type SkillRow = Pick<
  Selectable<SkillsDirectoryTable>,
  | 'provider'
  | 'external_id'
  | 'name'
  | 'description'
  | 'repository_url'
  | 'github_owner'
  | 'github_repo'
  | 'source_url'
  | 'version'
  | 'skill_md_content'
  | 'tags'
  | 'stars'
>;

/** The columns toDirectoryItem needs, for selects. */
export const SKILL_ROW_COLUMNS = [
  'provider',
  'external_id',
  'name',
  'description',
  'repository_url',
  'github_owner',
  'github_repo',
  'source_url',
  'version',
  'skill_md_content',
  'tags',
  'stars',
] as const;

export function toDirectoryItem(row: SkillRow): SkillsDirectoryItem {
  return {
    provider: row.provider,
    externalId: row.external_id,
    name: row.name,
    description: row.description,
    repositoryUrl: row.repository_url,
    githubOwner: row.github_owner,
    githubRepo: row.github_repo,
    sourceUrl: row.source_url,
    version: row.version,
    skillMdContent: row.skill_md_content,
    tags: row.tags ?? [],
    stars: row.stars,
  };
}
