// Every patch id of the workflows, in one place. A change to what a running workflow does is a patch
// (the workflow asks `patched` with its id): runs begun before it replay the path they recorded, runs begun
// after take the new one. Each id is listed in docs/operations.md ("Workflow versions") with what old and new
// runs do, and how a patch is removed (`deprecatePatch`, then nothing), and in docs/architecture.md;
// test/docs/workflow-patches.test.ts and test/docs/architecture-map.test.ts check both.

/**
 * scrapeWorkflow: a static page is fetched and extracted in one activity (before: fetchPage, renderPage,
 * extractPageData).
 */
export const STATIC_FAST_PATH_ONE_ACTIVITY = 'static-fast-path-one-activity';

/**
 * The one agent loop: custom agents run it (before, customAgentWorkflow was a loop of its own,
 * workflows/custom-agent-v1.ts), and a tool call's record says what the model reads of it (before, the
 * loop composed it: legacyToolCallOutcome in workflows/agent-selection-tools.ts). Asked by
 * customAgentWorkflow and at the start of every agent loop.
 */
export const ONE_AGENT_LOOP = 'one-agent-loop';

/**
 * A selection-tool call recorded with the call (one callAgentTool activity, where the call was callTool
 * and then recordAgentToolCall). Asked at each call sent (on the one agent loop only): the calls a run sent
 * before it replay the two activities they recorded, and its calls from then on take the one (its marker
 * is in the history before the first of them).
 */
export const TOOL_CALL_RECORDED_WITH_CALL = 'tool-call-recorded-with-call';

/** marketRunWorkflow: runs that record this marker settle once idle (before it, they slept until their token expired). */
export const MARKET_RUN_SETTLES_WHEN_IDLE = 'market-run-settles-when-idle';

/** marketRunWorkflow (settling when idle): runs that record this marker continue as new after `checksPerExecution` looks at their run. */
export const MARKET_RUN_CONTINUES_AS_NEW = 'market-run-continues-as-new';
