import { createHash } from 'node:crypto';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

/** Exactly the contract's SkillsDirectoryItem: the AgentSkillSelection fields plus tags and stars. */
export interface SkillsDirectoryItem {
  provider: string;
  externalId: string;
  name: string;
  description: string | null;
  repositoryUrl: string | null;
  githubOwner: string | null;
  githubRepo: string | null;
  sourceUrl: string | null;
  version: string | null;
  skillMdContent: string | null;
  tags: string[];
  stars: number | null;
}

/** What the catalogue stores per skill: the directory item plus its license (not part of the API item). */
export interface CatalogueItem extends SkillsDirectoryItem {
  license: string | null;
}

export const SKILL_ITEM_FIELDS = [
  'provider',
  'externalId',
  'name',
  'description',
  'repositoryUrl',
  'githubOwner',
  'githubRepo',
  'sourceUrl',
  'version',
  'skillMdContent',
  'tags',
  'stars',
] as const satisfies readonly (keyof SkillsDirectoryItem)[];

export const MAX_SKILL_MD_CHARS = 64_000;
export const MAX_TAGS = 20;

const nullableString = (maxLength: number) => ({ type: ['string', 'null'], maxLength });
const nullableUrl = { type: ['string', 'null'], format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2048 };

/** One JSON Lines record of `import-skills` (the SkillsDirectoryItem shape, plus an optional license). */
export const SkillItemSchema = {
  $id: 'SkillsDirectoryImportItem',
  type: 'object',
  additionalProperties: false,
  required: ['provider', 'externalId', 'name'],
  properties: {
    provider: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' },
    externalId: { type: 'string', minLength: 1, maxLength: 512, pattern: '\\S' },
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
    description: nullableString(8_000),
    repositoryUrl: nullableUrl,
    githubOwner: nullableString(100),
    githubRepo: nullableString(100),
    sourceUrl: nullableUrl,
    version: nullableString(64),
    skillMdContent: nullableString(MAX_SKILL_MD_CHARS),
    tags: { type: 'array', maxItems: MAX_TAGS, items: { type: 'string', minLength: 1, maxLength: 64 } },
    stars: { type: ['integer', 'null'], minimum: 0 },
    license: nullableString(100),
  },
} as const;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validateItem = ajv.compile(SkillItemSchema);

export type ItemCheck = { ok: true; item: CatalogueItem } | { ok: false; message: string };

function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(containsNul);
  return false;
}

/** Validates one record and returns it normalised (trimmed, tags lower-cased and de-duplicated, absent fields null). */
export function checkSkillItem(value: unknown): ItemCheck {
  if (!validateItem(value)) {
    const problems = (validateItem.errors ?? []).map((e) => {
      const at = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '';
      if (e.keyword === 'required') return `${e.params.missingProperty} is required`;
      if (e.keyword === 'additionalProperties')
        return `${at ? `${at}.` : ''}${e.params.additionalProperty} is not a known field`;
      return `${at || 'the record'} ${e.message ?? 'is invalid'}`;
    });
    return { ok: false, message: [...new Set(problems)].join('; ') };
  }
  const record = value as unknown as Record<string, unknown>;
  for (const [key, field] of Object.entries(record)) {
    if (containsNul(field)) return { ok: false, message: `${key} contains a NUL character` };
  }
  return {
    ok: true,
    item: normalizeItem(record as Partial<CatalogueItem> & Pick<CatalogueItem, 'provider' | 'externalId' | 'name'>),
  };
}

const trimmedOrNull = (value: string | null | undefined) => {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
};

export function normalizeTags(tags: readonly string[] | null | undefined): string[] {
  const out: string[] = [];
  for (const tag of tags ?? []) {
    const clean = tag.trim().toLowerCase().replace(/\s+/g, '-');
    if (clean && !out.includes(clean)) out.push(clean);
  }
  return out.slice(0, MAX_TAGS);
}

export function normalizeItem(
  item: Partial<CatalogueItem> & Pick<CatalogueItem, 'provider' | 'externalId' | 'name'>,
): CatalogueItem {
  return {
    provider: item.provider.trim(),
    externalId: item.externalId.trim(),
    name: item.name.trim(),
    description: trimmedOrNull(item.description),
    repositoryUrl: trimmedOrNull(item.repositoryUrl),
    githubOwner: trimmedOrNull(item.githubOwner),
    githubRepo: trimmedOrNull(item.githubRepo),
    sourceUrl: trimmedOrNull(item.sourceUrl),
    version: trimmedOrNull(item.version),
    // SKILL.md keeps its exact text (only an all-blank document counts as absent).
    skillMdContent: item.skillMdContent?.trim() ? item.skillMdContent : null,
    tags: normalizeTags(item.tags),
    stars: item.stars ?? null,
    license: trimmedOrNull(item.license),
  };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Changes whenever any stored field changes; an upsert with the same hash writes nothing. */
export function contentHash(item: CatalogueItem): string {
  return sha256(JSON.stringify([...SKILL_ITEM_FIELDS.map((field) => item[field]), item.license]));
}

const EMBEDDING_CONTENT_CHARS = 4_000;

/** The text an embedding is computed from: what the skill is, not its metadata (stars, URLs). */
export function embeddingText(item: CatalogueItem): string {
  return [
    item.name,
    item.tags.length ? `Tags: ${item.tags.join(', ')}` : '',
    item.description ?? '',
    item.skillMdContent ? item.skillMdContent.slice(0, EMBEDDING_CONTENT_CHARS) : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

export function embeddingHash(model: string, text: string): string {
  return sha256(`${model}\u0000${text}`);
}
