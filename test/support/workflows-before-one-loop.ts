// The workflows of an "old" worker: customAgentWorkflow as it was before the one agent loop
// (workflows/custom-agent-v1.ts, which the recorded histories in test/fixtures/workflow-histories/
// replay on, proving it is that code). Bundled by test/agent-loop-versions.test.ts.
export { customAgentWorkflowV1 as customAgentWorkflow } from '../../workflows/custom-agent-v1';
