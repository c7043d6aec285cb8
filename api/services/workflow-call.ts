// Kept for the market's files (branch t35-market) until they import the new path; the lead removes it after the merge.
export { startAndWait, type WaitBound, type WorkflowCallOutcome } from './shared/start-and-wait';
