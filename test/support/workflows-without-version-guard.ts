// customAgentWorkflow without its patched() guard: every run on the one agent loop. Bundled by
// test/agent-loop-versions.test.ts to show the recorded pre-loop histories cannot replay on it, so
// the guard is what keeps those runs going.
export { customAgentRun as customAgentWorkflow } from '../../workflows/custom-agent';
