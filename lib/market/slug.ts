import { ruleBroken } from './errors';

export const MAX_SLUG_LENGTH = 64;

/**
 * Slugs are lower-case [a-z0-9-]: accents are stripped (é → e), every other run of characters
 * becomes one hyphen, hyphens at the ends are dropped, and the result is cut to 64 characters.
 */
export function normaliseSlug(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG_LENGTH)
    .replace(/-+$/, '');
}

/** The slug given, or derived from the name when omitted; 400 invalid_slug when nothing usable is left. */
export function slugFor(given: string | null | undefined, name: string): string {
  const slug = normaliseSlug(given ?? name);
  if (!slug) {
    throw ruleBroken(
      'invalid_slug',
      given
        ? `The slug "${given}" has no letters or digits`
        : 'The name has no letters or digits to derive a slug from; send a slug',
      given ? 'body/slug' : 'body/name',
    );
  }
  return slug;
}
