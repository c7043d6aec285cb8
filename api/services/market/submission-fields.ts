import type { CoreFields } from '../../../db/repos/market-submissions';

/** The common columns of a prepared submission (either market). */
export const submissionCoreFields = (prepared: CoreFields): CoreFields => ({
  slug: prepared.slug,
  name: prepared.name,
  description: prepared.description,
  // An uploaded icon is addressed by its key; its URL is built when shown.
  iconUrl: prepared.iconObjectKey ? null : prepared.iconUrl,
  iconObjectKey: prepared.iconObjectKey,
  searchText: prepared.searchText,
});
