import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('plans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('monthly_operation_limit', 'integer', (c) => c.notNull().check(sql`monthly_operation_limit >= 0`))
    .addColumn('automation_limit', 'integer', (c) => c.notNull().check(sql`automation_limit >= 0`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db
    .insertInto('plans')
    .values([
      { id: 'starter', name: 'Starter', monthly_operation_limit: 1000, automation_limit: 3 },
      { id: 'pro', name: 'Pro', monthly_operation_limit: 20000, automation_limit: 25 },
    ])
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('webhook_secret_sealed', 'text', (c) => c.notNull())
    .addColumn('router_api_key_sealed', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute();

  await db.schema
    .createTable('subscriptions')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('plan_id', 'text', (c) => c.notNull().references('plans.id'))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'inactive')`))
    .addColumn('monthly_operation_limit', 'integer', (c) => c.notNull().check(sql`monthly_operation_limit >= 0`))
    .addColumn('automation_limit', 'integer', (c) => c.notNull().check(sql`automation_limit >= 0`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('wallets')
    .addColumn('user_id', 'uuid', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('balance_micros', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('ledger_entries')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('credit', 'usage', 'adjustment')`))
    .addColumn('amount_micros', 'bigint', (c) => c.notNull())
    .addColumn('balance_after_micros', 'bigint', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
    .addColumn('job_id', 'uuid')
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('ledger_entries_user_idx').on('ledger_entries').columns(['user_id', 'id']).execute();

  await db.schema
    .createTable('monthly_usage')
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('operations', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('monthly_usage_pk', ['user_id', 'period'])
    .execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('pending', 'processing', 'completed', 'failed')`),
    )
    .addColumn('request', 'jsonb', (c) => c.notNull())
    .addColumn('result', 'jsonb')
    .addColumn('error', 'text')
    .addColumn('logs', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('webhook_url', 'text')
    .addColumn('sealed_secrets', 'text')
    .addColumn('workflow_id', 'text', (c) => c.notNull().unique())
    .addColumn('idempotency_key', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('jobs_user_kind_idx').on('jobs').columns(['user_id', 'kind', 'created_at']).execute();
  await db.schema
    .createIndex('jobs_idempotency_idx')
    .on('jobs')
    .columns(['user_id', 'kind', 'idempotency_key'])
    .unique()
    .where(sql.ref('idempotency_key'), 'is not', null)
    .execute();

  await db.schema
    .createTable('system_logs')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('job_id', 'uuid')
    .addColumn('log_message', 'text', (c) => c.notNull())
    .addColumn('executed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('system_logs_user_idx').on('system_logs').columns(['user_id', 'id']).execute();

  await db.schema
    .createTable('agent_transactions')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('job_id', 'uuid')
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('agent_name', 'text', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('payload', 'jsonb')
    .addColumn('cost_micros', 'bigint', (c) => c.notNull().check(sql`cost_micros >= 0`))
    .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
    .addColumn('executed_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('agent_transactions_user_idx')
    .on('agent_transactions')
    .columns(['user_id', 'id'])
    .execute();

  await db.schema
    .createTable('page_snapshots')
    .addColumn('job_id', 'uuid', (c) => c.primaryKey().references('jobs.id').onDelete('cascade'))
    .addColumn('final_url', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer', (c) => c.notNull())
    .addColumn('rendered_with', 'text', (c) => c.notNull().check(sql`rendered_with in ('http', 'browser')`))
    .addColumn('markdown', 'text', (c) => c.notNull())
    .addColumn('metadata', 'jsonb', (c) => c.notNull())
    .addColumn('data', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('job_usage')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('job_id', 'uuid', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('usage_key', 'text', (c) => c.notNull().unique())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('llm', 'browser', 'captcha', 'proxy')`))
    .addColumn('model', 'text')
    .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('quantity', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('cost_micros', 'bigint', (c) => c.notNull().check(sql`cost_micros >= 0`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('job_usage_job_idx').on('job_usage').column('job_id').execute();
}
