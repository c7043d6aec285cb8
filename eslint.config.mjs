// The layout of docs/architecture.md ("Rooms and arrows") as rules, so it is enforced rather than remembered:
// each room imports only the rooms below it, workflow code stays deterministic (no Node built-ins, no
// client, no I/O: activity types and @temporalio/workflow only), and no promise is left floating.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importPlugin from 'eslint-plugin-import';

/**
 * The rooms, and the rooms each may import from (docs/architecture.md "Rooms and arrows"; a room with no
 * entry has no rule). Change an arrow here and in that table together: test/docs/architecture-map.test.ts
 * compares them.
 */
const ROOMS = ['lib', 'db', 'activities', 'workflows', 'api', 'web', 'workers', 'scripts', 'test', 'bench'];
const MAY_IMPORT = {
  lib: ['lib'],
  db: ['lib', 'db'],
  activities: ['lib', 'db', 'activities'],
  // Workflows: values from their own modules only; types from activities, lib and db (`import type`,
  // checked in the workflow block below).
  workflows: ['workflows', 'activities', 'lib', 'db'],
  // The API starts workflows by name with their input types (`import type` only, checked below).
  api: ['lib', 'db', 'api', 'workflows'],
  web: ['lib', 'db', 'web', 'api/services'],
};

const zones = Object.entries(MAY_IMPORT).map(([room, allowed]) => ({
  target: `./${room}`,
  from: ROOMS.filter(
    (other) => !allowed.includes(other) && other !== room && !allowed.some((a) => a.startsWith(`${other}/`)),
  ).map((other) => `./${other}`),
  message: `${room}/ may import only from ${allowed.join(', ')} (docs/architecture.md: imports point one way).`,
}));
// web/ may reach into api/services but no other part of api/.
zones.push({
  target: './web',
  from: './api',
  except: ['./services'],
  message: 'web/ may import api/services only (docs/architecture.md).',
});
// The pages are served by the API's Koa process: api/app.ts (its composition) mounts web/, and nothing else in api/ imports it.
const apiZone = zones.find((zone) => zone.target === './api');
apiZone.from = apiZone.from.filter((from) => from !== './web');
zones.push({
  target: './api/**/!(app).ts',
  from: './web',
  message: 'Only api/app.ts (the HTTP composition) mounts web/ (docs/architecture.md).',
});

/** The API starts workflows by name: their types only. */
const workflowTypesOnly = {
  group: ['../workflows', '../workflows/**', '../../workflows', '../../workflows/**', '../../../workflows/**'],
  allowTypeImports: true,
  message: 'The API starts workflows by name: import their input and result types only (import type).',
};
/** Entry points reach the database through a service: the repositories' types only. */
const repositoryTypesOnly = {
  group: ['**/db/repos', '**/db/repos/**'],
  allowTypeImports: true,
  message:
    'An entry point (route, MCP handler, page) calls a service of api/services/<capability>/ and imports only types from db/repos (docs/architecture.md, application layer).',
};

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

export default tseslint.config(
  { ignores: ['node_modules/**', 'test/support/fixtures/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { import: importPlugin },
    settings: { 'import/resolver': { typescript: { project: './tsconfig.json' }, node: true } },
    rules: {
      'import/no-restricted-paths': ['error', { zones }],
      '@typescript-eslint/no-floating-promises': 'error',
      // Project conventions the recommended sets disagree with:
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-require-imports': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
      'no-control-regex': 'off',
    },
  },
  {
    // The Temporal TypeScript samples' rule: workflow code runs in a deterministic sandbox, so no Node
    // built-ins and no client/worker/activity packages; activities are reached through proxies, so only
    // their types are imported.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({
              name,
              message: 'Workflow code cannot use Node built-ins (the sandbox is deterministic); do it in an activity.',
            })),
            ...['@temporalio/client', '@temporalio/worker', '@temporalio/activity', '@temporalio/testing'].map(
              (name) => ({
                name,
                message: 'Workflow code imports @temporalio/workflow only.',
              }),
            ),
          ],
          patterns: [
            {
              group: ['../activities', '../activities/**'],
              allowTypeImports: true,
              message: 'Workflows reach activities through proxyActivities: import their types only (import type).',
            },
            {
              group: ['../db', '../db/**'],
              allowTypeImports: true,
              message: 'Workflows do no I/O: import database types only (import type).',
            },
            {
              group: ['../lib', '../lib/**'],
              allowTypeImports: true,
              message: 'Workflow code is its own: import types only from lib/ (import type).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['api/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [workflowTypesOnly] }],
    },
  },
  {
    // The entry points (routes, MCP handlers, pages) call a service of api/services/<capability>/, the one door of
    // each capability; they read the repositories' types only (docs/architecture.md, "application layer").
    files: ['api/routes/**/*.ts', 'api/mcp/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [workflowTypesOnly, repositoryTypesOnly] }],
    },
  },
  {
    files: ['web/**/*.ts', 'web/**/*.tsx'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [repositoryTypesOnly] }],
    },
  },
  {
    // Repositories hold SQL: they never run the market's call logic (the relay and its steps), whose types they store.
    files: ['db/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/lib/market/tool-call', '**/lib/market/relay', '**/lib/market/relay/**'],
              allowTypeImports: true,
              message:
                'db/ holds SQL only: it may store the call logic types, never run it (docs/architecture.md, application layer).',
            },
          ],
        },
      ],
    },
  },
);
