import { loadConfig } from '../lib/config';
import { migrateToLatest, openDatabase } from './connect';

async function main() {
  const config = loadConfig();
  const db = await openDatabase(config);
  await migrateToLatest(db);
  await db.destroy();
  console.log('migrations applied');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
