import type { Migration, MigrationProvider } from 'kysely';
import * as foundation from './0001_foundation';

const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
