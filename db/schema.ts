import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { SocialPlatform } from '../lib/social/platforms';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T = unknown> = ColumnType<T, string, string>;

export type SubscriptionStatus = 'active' | 'inactive';
export type JobKind = 'scrape' | 'agentic' | 'automation';
export type JobStatus = 'pending' | 'processing' | 'completed' | 'failed';
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['completed', 'failed'];
export type LedgerEntryKind = 'credit' | 'usage' | 'adjustment';

export interface PlansTable {
  id: string;
  name: string;
  monthly_operation_limit: number;
  automation_limit: number;
  created_at: Timestamp;
}

export interface UsersTable {
  id: string;
  email: string;
  webhook_secret_sealed: string;
  router_api_key_sealed: string | null;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  key_hash: string;
  key_prefix: string;
  created_at: Timestamp;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface SubscriptionsTable {
  user_id: string;
  plan_id: string;
  status: SubscriptionStatus;
  monthly_operation_limit: number;
  automation_limit: number;
  updated_at: Timestamp;
}

export interface WalletsTable {
  user_id: string;
  balance_micros: number;
  updated_at: Timestamp;
}

export interface LedgerEntriesTable {
  id: Generated<number>;
  user_id: string;
  kind: LedgerEntryKind;
  amount_micros: number;
  balance_after_micros: number;
  idempotency_key: string;
  job_id: string | null;
  description: string;
  created_at: Timestamp;
}

export interface MonthlyUsageTable {
  user_id: string;
  period: string;
  operations: number;
}

export interface JobsTable {
  id: string;
  user_id: string;
  kind: JobKind;
  status: JobStatus;
  request: Json<Record<string, unknown>>;
  result: Json<Record<string, unknown> | null> | null;
  error: string | null;
  logs: ColumnType<string[], string[] | undefined, string[]>;
  webhook_url: string | null;
  /** Request secrets (cookies, ...) sealed with the master key; `request` holds them masked. */
  sealed_secrets: string | null;
  workflow_id: string;
  /** What starts the job's workflow (set at admission, migration 0005); null for jobs whose workflow creates them. */
  workflow_type: ColumnType<string | null, string | null | undefined, string | null>;
  workflow_task_queue: ColumnType<string | null, string | null | undefined, string | null>;
  workflow_args: ColumnType<unknown[] | null, string | null | undefined, string | null>;
  idempotency_key: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The amount of the wallet reserved for one job; open while `released_at` is null. */
export interface JobHoldsTable {
  job_id: string;
  user_id: string;
  amount_micros: number;
  settled_micros: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: Timestamp;
  released_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface SystemLogsTable {
  id: Generated<number>;
  user_id: string | null;
  job_id: string | null;
  log_message: string;
  executed_at: Timestamp;
}

export interface AgentTransactionsTable {
  id: Generated<number>;
  job_id: string | null;
  user_id: string;
  agent_name: string;
  result: string | null;
  payload: Json<Record<string, unknown> | null> | null;
  cost_micros: number;
  idempotency_key: string;
  executed_at: Timestamp;
}

export type RenderedWith = 'http' | 'browser';
export interface PageMetadata {
  title: string | null;
  description: string | null;
  language: string | null;
  links: { url: string; text: string }[];
}

export interface PageSnapshotsTable {
  job_id: string;
  final_url: string;
  status_code: number;
  rendered_with: RenderedWith;
  markdown: string;
  metadata: Json<PageMetadata>;
  data: Json<unknown> | null;
  created_at: Timestamp;
}

export type UsageKind = 'llm' | 'browser' | 'captcha' | 'proxy';

export interface JobUsageTable {
  id: Generated<number>;
  job_id: string;
  usage_key: string;
  kind: UsageKind;
  model: string | null;
  prompt_tokens: ColumnType<number, number | undefined, number>;
  completion_tokens: ColumnType<number, number | undefined, number>;
  quantity: ColumnType<number, number | undefined, number>;
  cost_micros: number;
  created_at: Timestamp;
}

export interface AgentAction {
  name: string;
  args: Record<string, unknown>;
}

export interface AgentOutcome {
  action: string;
  ok: boolean;
  message: string;
}

export interface AgentStepsTable {
  id: Generated<number>;
  job_id: string;
  task_index: number;
  step: number;
  url: string;
  /** The observation exactly as the model saw it (secret values masked). */
  observation: string;
  screenshot: string | null;
  goal: string | null;
  actions: Json<AgentAction[]>;
  outcomes: Json<AgentOutcome[]>;
  created_at: Timestamp;
}

export interface AgentCheckpointsTable {
  job_id: string;
  /** URL and storage state (cookies, local storage) sealed with the master key. */
  sealed_state: string;
  updated_at: Timestamp;
}

export interface AgentTaskResultsTable {
  job_id: string;
  task_index: number;
  result: Json<AgentTaskResult>;
}

export interface AgentTaskResult {
  task: string;
  success: boolean;
  answer: string | null;
  data: unknown;
  steps: number;
}

export type { SocialPlatform };
export type ValidationStatus = 'valid' | 'invalid' | 'unchecked';

export interface SocialAccountsTable {
  id: string;
  user_id: string;
  platform: SocialPlatform;
  name: string;
  is_active: boolean;
  validation_status: ValidationStatus;
  validation_message: string | null;
  last_validated_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  meta: Json<Record<string, unknown>>;
  /** Platform credentials sealed with the master key; never returned. */
  credentials_sealed: string;
  /** A reusable upstream session (microblog web login), sealed. */
  session_sealed: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type AutomationType = 'forum-agent' | 'microblog-agent' | 'custom-agent';

export interface AutomationsTable {
  id: string;
  user_id: string;
  name: string;
  cron: string;
  timezone: string | null;
  automation_type: AutomationType;
  /** The request with secrets masked: what responses show. */
  payload: Json<Record<string, unknown>>;
  /** Inline credentials and other secrets of the payload, sealed. */
  secrets_sealed: string | null;
  schedule_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SkillsDirectoryTable {
  provider: string;
  external_id: string;
  name: string;
  description: string | null;
  repository_url: string | null;
  github_owner: string | null;
  github_repo: string | null;
  source_url: string | null;
  version: string | null;
  skill_md_content: string | null;
  tags: ColumnType<string[], string[] | undefined, string[]>;
  stars: number | null;
  license: string | null;
  content_hash: string;
  /** `vector` with pgvector, else `real[]` of a unit vector (see migration 0004); written through SQL casts. */
  embedding: ColumnType<unknown, unknown, unknown>;
  embedding_model: string | null;
  embedding_hash: string | null;
  /** Generated: weighted name A, tags B, description C, SKILL.md D. */
  search_document: ColumnType<string, never, never>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  skills_directory: SkillsDirectoryTable;
  social_accounts: SocialAccountsTable;
  automations: AutomationsTable;
  agent_steps: AgentStepsTable;
  agent_checkpoints: AgentCheckpointsTable;
  agent_task_results: AgentTaskResultsTable;
  page_snapshots: PageSnapshotsTable;
  job_usage: JobUsageTable;
  plans: PlansTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  subscriptions: SubscriptionsTable;
  wallets: WalletsTable;
  ledger_entries: LedgerEntriesTable;
  monthly_usage: MonthlyUsageTable;
  jobs: JobsTable;
  job_holds: JobHoldsTable;
  system_logs: SystemLogsTable;
  agent_transactions: AgentTransactionsTable;
}

export type Job = Selectable<JobsTable>;
export type NewJob = Insertable<JobsTable>;
export type JobHold = Selectable<JobHoldsTable>;
export type JobUpdate = Updateable<JobsTable>;
export type SystemLog = Selectable<SystemLogsTable>;
export type AgentTransaction = Selectable<AgentTransactionsTable>;
export type Subscription = Selectable<SubscriptionsTable>;
