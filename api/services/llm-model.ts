// Kept for the market's files (branch t35-market) until they import the new path; the lead removes it after the merge.
export { assertLlmModel } from './shared/assert-llm-model';
