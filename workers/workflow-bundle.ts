import { writeFile } from 'node:fs/promises';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

const WORKFLOWS_PATH = require.resolve('../workflows');

/** The workflows of this repository bundled for the Temporal worker's sandbox (webpack; a few seconds). */
export async function bundleWorkflows(): Promise<{ code: string }> {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  return { code };
}

/** Bundles the workflows into `file` (WORKFLOW_BUNDLE_PATH's format: the bundle's code). */
export async function writeWorkflowBundle(file: string): Promise<void> {
  await writeFile(file, (await bundleWorkflows()).code);
}

/** What a worker runs: a bundle given in memory, else the one at WORKFLOW_BUNDLE_PATH, else workflows/ bundled at start. */
export function workflowSource(
  given: { code: string } | undefined,
  bundlePath: string | null,
): { workflowBundle: { code: string } | { codePath: string } } | { workflowsPath: string } {
  if (given) return { workflowBundle: given };
  if (bundlePath) return { workflowBundle: { codePath: bundlePath } };
  return { workflowsPath: WORKFLOWS_PATH };
}
