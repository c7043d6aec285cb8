import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';
import type { SocialPlatform } from '../lib/social/platforms';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T = unknown> = ColumnType<T, string, string>;

export type SubscriptionStatus = 'active' | 'inactive';
export type JobKind = 'scrape' | 'agentic' | 'automation' | 'custom-agent' | 'agent-market';
export type JobStatus = 'pending' | 'processing' | 'completed' | 'failed';
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['completed', 'failed'];
/** `revenue`: a provider's share of a market charge (see market_runs). */
export type LedgerEntryKind = 'credit' | 'usage' | 'adjustment' | 'revenue' | 'sale';

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
  /** What the account's own market calls made with this key may spend in all / per calendar month, UTC (migration 0030). */
  budget_total_micros: ColumnType<number | null, number | null | undefined, number | null>;
  budget_monthly_micros: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A console sign-in session (migration 0021): the cookie's token only as its SHA-256. */
export interface SessionsTable {
  id: string;
  user_id: string;
  api_key_id: string;
  token_hash: string;
  csrf_token: string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** oidc-provider's storage (migration 0022). */
export interface OAuthRecordsTable {
  model: string;
  id: string;
  payload: ColumnType<Record<string, unknown>, string, string>;
  grant_id: string | null;
  uid: string | null;
  expires_at: Date | null;
  consumed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** A market grant approved on the consent page (migration 0022). */
export interface OAuthMarketGrantsTable {
  grant_id: string;
  user_id: string;
  entry_id: string;
  client_id: string;
  /** The client's name when the grant was approved (as its registration or metadata document gave it). */
  client_name: string | null;
  /** The sealed market credential (`mcpc1.`) the grant stands for; null once the grant is revoked. */
  credential: string | null;
  /** The id of that credential's market_credentials row (migration 0029; null for an older grant not yet linked). */
  credential_id: string | null;
  /** The name the person gave the device on the consent page (migration 0029), or null. */
  device_name: ColumnType<string | null, string | null | undefined, string | null>;
  /** The consenting browser's user agent (migration 0029), or null. */
  user_agent: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** One issued market credential (db/migrations/0023_market_credentials.ts); never the token or its params. */
export interface MarketCredentialsTable {
  id: string;
  user_id: string;
  entry_id: string;
  api_key_id: string;
  source: 'direct' | 'oauth';
  label: string | null;
  cap_micros: number | null;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** What all the credential's runs may spend together (migration 0028); null: no total budget. */
  budget_total_micros: ColumnType<number | null, number | null | undefined, number | null>;
  /** What its runs opened in one calendar month (UTC) may spend together; null: no monthly budget. */
  budget_monthly_micros: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A review-queue operator's sign-in (migration 0029): the SHA-256 of the cookie's token. */
export interface OperatorSessionsTable {
  token_hash: string;
  /** A hash of the admin token the session was opened with (rotating it ends the session). */
  admin_key: string;
  csrf_token: string;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}

/** One window of a shared request limit (migration 0029, db/repos/rate-limits.ts). */
export interface RateLimitWindowsTable {
  key: string;
  window_start: Date;
  count: number;
}

/** An operator-managed OAuth client (migration 0026). */
export interface OAuthClientsTable {
  client_id: string;
  client_name: string;
  redirect_uris: ColumnType<string[], string, string>;
  /** `none` (a public client, PKCE only), `client_secret_basic` or `client_secret_post`. */
  token_endpoint_auth_method: string;
  /** The sealed client secret of a confidential client (lib/crypto seal, MASTER_KEY), null for a public one. */
  client_secret: string | null;
  created_at: Timestamp;
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
  /** The market run a market debit or revenue credit belongs to. */
  market_run_id: ColumnType<string | null, string | null | undefined, string | null>;
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

type Nullable<T> = ColumnType<T | null, T | null | undefined, T | null>;
type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;

export interface MarketValidationsTable {
  id: string;
  owner_id: string;
  type: 'remote_mcp' | 'openapi';
  source_fingerprint: string;
  status: 'valid' | 'invalid' | 'needs_parameters';
  parameters_required: ColumnType<boolean, boolean | undefined, boolean>;
  required_parameters: ColumnType<unknown[], string | undefined, string>;
  report: Json<Record<string, unknown>>;
  discovery: Json<Record<string, unknown>>;
  created_at: Timestamp;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}

export interface MarketEventVerificationsTable {
  id: string;
  owner_id: string;
  run_id: string;
  source_fingerprint: string;
  event_names: Json<string[]>;
  verified_event_names: ColumnType<string[], string | undefined, string>;
  created_at: Timestamp;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}

export interface MarketVerificationChargesTable {
  run_id: string;
  idempotency_key: string;
  request_hash: string;
  event_name: string;
  result: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface MarketIconsTable {
  id: string;
  owner_id: string;
  content: Buffer;
  byte_size: number;
  width: number;
  height: number;
  sha256: string;
  file_name: string;
  created_at: Timestamp;
}

export type MarketKind = 'mcp' | 'agent';
export type MarketSubmissionStatus = 'draft' | 'pending_review' | 'approved' | 'rejected' | 'disabled';

export interface MarketSubmissionsTable {
  id: string;
  market: MarketKind;
  owner_id: string;
  /** The public id: the first submission's id, shared by its revisions. */
  listing_id: string;
  parent_entry_id: string | null;
  /** The submission the public listing shows (at most one per listing). */
  live: ColumnType<boolean, boolean | undefined, boolean>;
  status: MarketSubmissionStatus;
  slug: string;
  name: string;
  description: string | null;
  icon_url: string | null;
  icon_object_key: string | null;
  search_text: ColumnType<string, string | undefined, string>;
  /** Generated: name A, description B, search_text C. */
  search_document: ColumnType<string, never, never>;
  review_reason: string | null;
  submitted_at: Nullable<Date>;
  reviewed_at: Nullable<Date>;
  approved_at: Nullable<Date>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MarketSlugsTable {
  market: MarketKind;
  slug: string;
  listing_id: string;
  created_at: Timestamp;
}

export interface McpMarketDetailsTable {
  submission_id: string;
  type: 'remote_mcp' | 'openapi';
  source_fingerprint: string;
  validation_id: string;
  event_verification_id: string | null;
  remote_mcp_url: string | null;
  openapi_base_url: string | null;
  openapi_spec: NullableJson<Record<string, unknown>>;
  /** staticConfig sealed with the master key (associated data `mcp-static-config:<submission id>`). */
  static_config_sealed: string;
  required_user_params_schema: Json<Record<string, unknown>>;
  monetization_strategy: 'free' | 'provider_event' | 'tool_call_fixed';
  pricing_events: Json<unknown[]>;
  tools: Json<unknown[]>;
  discovery_cache: Json<Record<string, unknown>>;
  approved_tools: NullableJson<unknown[]>;
  approved_tools_hash: string | null;
}

export type MarketRunStatus = 'open' | 'closed';

export interface MarketRunsTable {
  id: string;
  consumer_id: string;
  provider_id: string;
  /** The entry's public id (listing id). */
  entry_id: string;
  /** The live submission when the run opened. */
  submission_id: string;
  selection_id: string;
  /** The entry's pricing events when the run opened. */
  pricing_events: Json<unknown[]>;
  cap_micros: number | null;
  hold_micros: number;
  charged_micros: ColumnType<number, number | undefined, number>;
  status: ColumnType<MarketRunStatus, MarketRunStatus | undefined, MarketRunStatus>;
  created_at: Timestamp;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  closed_at: Nullable<Date>;
  /** The agent execution (job) of a run opened for a `market_mcps` selection; null for /mcp/{entryId} calls. */
  job_id: ColumnType<string | null, string | null | undefined, string | null>;
  settled_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** When a platform worker started the run's workflow (null: owed; workers/market-run-dispatcher.ts). */
  workflow_started_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** The calls using the run right now (migration 0016). */
  calls_in_flight: ColumnType<number, number | undefined, number>;
  /** When the grace after the run's last call ends (null: no call ended yet). */
  idle_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** Whether later calls of the same selection join this run (a shared run that is not retired). */
  accepts_calls: ColumnType<boolean, boolean | undefined, boolean>;
  /** How long the run stays active after its last call (migration 0024; null: the caller's MARKET_RUN_IDLE_GRACE_SECONDS). */
  idle_grace: ColumnType<unknown, string | null | undefined, string | null>;
  /**
   * The most the run may be charged whatever the wallet holds (migration 0028): the run charge limit, the
   * consumer's cap and budgets, when it opened; what x-service-charge-max-total-usd says. Null: opened before.
   */
  limit_micros: ColumnType<number | null, number | null | undefined, number | null>;
}

/** The rug-pull gate's flag on a live submission (migration 0010). */
export interface McpMarketDriftTable {
  submission_id: string;
  entry_id: string;
  approved_hash: string;
  upstream_hash: string;
  tools: Json<unknown[]>;
  first_detected_at: Timestamp;
  detected_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface MarketRunChargesTable {
  id: string;
  run_id: string;
  idempotency_key: string;
  request_hash: string;
  event_name: string;
  tool_name: string | null;
  requested_count: number;
  charged_count: number;
  unit_price_micros: number;
  total_micros: number;
  commission_micros: number;
  provider_revenue_micros: number;
  result: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

/** A custom-agent run's toolbox (migration 0009). */
export interface CustomAgentRunsTable {
  job_id: string;
  toolbox: Json<unknown[]>;
  notes: ColumnType<string[], string | undefined, string>;
  created_at: Generated<Date>;
}

/** One message of a custom-agent run's conversation with the model. */
export interface CustomAgentMessagesTable {
  job_id: string;
  seq: number;
  message: Json<Record<string, unknown>>;
}

/** One tool invocation of an agent run. */
export interface AgentToolCallsTable {
  job_id: string;
  call_index: number;
  source: string;
  tool: string;
  status: 'completed' | 'error' | 'failed' | 'not_sent';
  started_at: ColumnType<Date, Date | string, Date | string>;
  duration_ms: number;
  cost_micros: ColumnType<number, number | undefined, number>;
  error: string | null;
}

/** An image a tool of an agent run returned, kept for the run's model (migration 0020). */
export interface AgentToolImagesTable {
  id: string;
  job_id: string;
  tool: string;
  /** Its place among the images of the call's answer, from 0. */
  position: number;
  mime_type: string;
  data: Buffer;
  call_index: number | null;
  reply_seq: number | null;
  call_id: string | null;
  task_index: number | null;
  step: number | null;
  created_at: Generated<Date>;
}

export interface AgentMarketDetailsTable {
  submission_id: string;
  price_micros: ColumnType<number, number, number>;
  suggested_llm_provider: string;
  suggested_llm_model: string;
  run_mode: 'template' | 'task';
  allow_task_override: boolean;
  system_prompt_sealed: string;
  prompt_template_sealed: string | null;
  input_schema: Json<Record<string, unknown> | null> | null;
  structured_output: Json<unknown[] | null> | null;
  skills: Json<Record<string, unknown> | null> | null;
  mcp_selections: Json<unknown[]>;
  custom_mcp_selections: Json<unknown[]>;
  selection_params_sealed: string;
}

export interface AgentMarketPurchasesTable {
  id: string;
  listing_id: string;
  consumer_id: string;
  provider_id: string;
  submission_id: string;
  price_micros: ColumnType<number, number, number>;
  commission_micros: ColumnType<number, number, number>;
  provider_revenue_micros: ColumnType<number, number, number>;
  created_at: Timestamp;
}

export interface AgentMarketRunsTable {
  job_id: string;
  listing_id: string;
  submission_id: string;
  consumer_id: string;
  provider_id: string;
  created_at: Timestamp;
}

/** A market tool call waiting for the consumer's input (migration 0019). */
export interface MarketCallContinuationsTable {
  id: string;
  call_id: string;
  run_id: string;
  consumer_id: string;
  entry_id: string;
  selection_id: string;
  tool_name: string;
  upstream_state: string | null;
  release_micros: number;
  close_run: boolean;
  started_at: ColumnType<Date, Date | string, Date | string>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  ended_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface Database {
  market_call_continuations: MarketCallContinuationsTable;
  custom_agent_runs: CustomAgentRunsTable;
  custom_agent_messages: CustomAgentMessagesTable;
  agent_tool_calls: AgentToolCallsTable;
  agent_tool_images: AgentToolImagesTable;
  agent_market_details: AgentMarketDetailsTable;
  agent_market_purchases: AgentMarketPurchasesTable;
  agent_market_runs: AgentMarketRunsTable;
  market_runs: MarketRunsTable;
  market_run_charges: MarketRunChargesTable;
  market_validations: MarketValidationsTable;
  market_event_verifications: MarketEventVerificationsTable;
  market_verification_charges: MarketVerificationChargesTable;
  market_icons: MarketIconsTable;
  market_submissions: MarketSubmissionsTable;
  market_slugs: MarketSlugsTable;
  mcp_market_details: McpMarketDetailsTable;
  mcp_market_drift: McpMarketDriftTable;
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
  sessions: SessionsTable;
  oauth_records: OAuthRecordsTable;
  oauth_market_grants: OAuthMarketGrantsTable;
  market_credentials: MarketCredentialsTable;
  oauth_clients: OAuthClientsTable;
  operator_sessions: OperatorSessionsTable;
  rate_limit_windows: RateLimitWindowsTable;
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
