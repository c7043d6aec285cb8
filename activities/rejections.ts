import { ApplicationFailure } from '@temporalio/activity';

/** A failure that retrying cannot fix (bad target, missing adapter): the job fails with this message. */
export function rejectScrape(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'ScrapeRejected');
}
