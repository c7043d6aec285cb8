import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { writeWorkflowBundle } from '../workers/workflow-bundle';

/**
 * `npm run bundle:workflows [FILE]`: bundles the workflows once (default dist/workflow-bundle.js), so worker
 * processes started with WORKFLOW_BUNDLE_PATH=FILE load it instead of bundling at every start.
 */
async function main() {
  const file = path.resolve(process.argv[2] ?? 'dist/workflow-bundle.js');
  await mkdir(path.dirname(file), { recursive: true });
  await writeWorkflowBundle(file);
  console.log(`wrote ${file}; start workers with WORKFLOW_BUNDLE_PATH=${file}`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
