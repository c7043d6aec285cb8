import { Context } from '@temporalio/activity';
import type { Db } from '../../db/connect';
import { hasHttpSnapshot } from '../../db/repos/page-snapshots';
import type { ExtractionActivities } from '../llm';
import { withHeartbeat } from '../heartbeat';
import type { FetchOutcome, PageActivities } from './index';

export interface FastPathOutcome extends FetchOutcome {
  /** True when the data was extracted too (the page needed no browser). */
  extracted: boolean;
}

/**
 * The static fast path as one activity: fetch → convert → extract, so a page that needs no browser
 * costs one activity round trip through the Temporal server instead of two. A page that needs a
 * browser comes back with `needsBrowser` and the workflow renders it, then extracts separately.
 * A retry after the page was fetched and converted (its snapshot exists) only extracts again: the
 * site is not fetched (nor a proxy request paid) twice.
 */
export function createFastPathActivities(deps: { db: Db; page: PageActivities; extraction: ExtractionActivities }) {
  return {
    async fetchAndExtractPage(jobId: string): Promise<FastPathOutcome> {
      const alreadyConverted = Context.current().info.attempt > 1 && (await hasHttpSnapshot(deps.db, jobId));
      if (!alreadyConverted) {
        const fetched = await withHeartbeat(() => deps.page.fetchPage(jobId));
        if (fetched.needsBrowser) return { ...fetched, extracted: false };
      }
      await deps.extraction.extractPageData(jobId);
      return { needsBrowser: false, reason: 'static content', extracted: true };
    },
  };
}

export type FastPathActivities = ReturnType<typeof createFastPathActivities>;
