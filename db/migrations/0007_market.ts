import { type Kysely, sql } from 'kysely';

/**
 * The market's provider side (tool market now; the agent market adds its own details table).
 *
 * - market_validations: a discovered and validated source, owned by the caller, expiring after 24 h.
 *   Discovery parameters are never stored.
 * - market_event_verifications (+ market_verification_charges): verification runs proving a
 *   provider's events before a provider_event submission; charges are idempotent per run and key.
 * - market_icons: PNG icons, stored under their uploader.
 * - market_submissions: the entries of both markets and their review state. `listing_id` is the
 *   public id (the first submission's id; revisions share it); `live` marks the one submission the
 *   public listing shows (at most one per listing). `search_document` is the listing's full text:
 *   name (A), description (B), `search_text` (C: tool names for the tool market).
 * - market_slugs: slug reservations, unique per market; a slug belongs to one listing.
 * - mcp_market_details: what a tool-market submission holds beyond the common columns;
 *   `static_config_sealed` is AES-256-GCM under MASTER_KEY; `approved_tools` and its hash are the
 *   snapshot taken at approval.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('market_validations')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('remote_mcp', 'openapi')`))
    .addColumn('source_fingerprint', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('valid', 'invalid', 'needs_parameters')`))
    .addColumn('parameters_required', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('required_parameters', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('report', 'jsonb', (c) => c.notNull())
    .addColumn('discovery', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('market_validations_owner_idx')
    .on('market_validations')
    .columns(['owner_id', 'source_fingerprint'])
    .execute();

  await db.schema
    .createTable('market_event_verifications')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('run_id', 'uuid', (c) => c.notNull().unique())
    .addColumn('source_fingerprint', 'text', (c) => c.notNull())
    .addColumn('event_names', 'jsonb', (c) => c.notNull())
    .addColumn('verified_event_names', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('market_event_verifications_owner_idx')
    .on('market_event_verifications')
    .column('owner_id')
    .execute();

  await db.schema
    .createTable('market_verification_charges')
    .addColumn('run_id', 'uuid', (c) => c.notNull().references('market_event_verifications.run_id').onDelete('cascade'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('event_name', 'text', (c) => c.notNull())
    .addColumn('result', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('market_verification_charges_pkey', ['run_id', 'idempotency_key'])
    .execute();

  await db.schema
    .createTable('market_icons')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('content', 'bytea', (c) => c.notNull())
    .addColumn('byte_size', 'integer', (c) => c.notNull())
    .addColumn('width', 'integer', (c) => c.notNull())
    .addColumn('height', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('market_icons_owner_idx').on('market_icons').column('owner_id').execute();

  await db.schema
    .createTable('market_submissions')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('market', 'text', (c) => c.notNull().check(sql`market in ('mcp', 'agent')`))
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('listing_id', 'uuid', (c) => c.notNull())
    .addColumn('parent_entry_id', 'uuid', (c) => c.references('market_submissions.id'))
    .addColumn('live', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('draft', 'pending_review', 'approved', 'rejected', 'disabled')`),
    )
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('icon_url', 'text')
    .addColumn('icon_object_key', 'uuid')
    .addColumn('search_text', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('search_document', sql`tsvector`, (c) =>
      c
        .generatedAlwaysAs(
          sql`setweight(to_tsvector('english', coalesce(name, '')), 'A')
            || setweight(to_tsvector('english', coalesce(description, '')), 'B')
            || setweight(to_tsvector('english', coalesce(search_text, '')), 'C')`,
        )
        .stored(),
    )
    .addColumn('review_reason', 'text')
    .addColumn('submitted_at', 'timestamptz')
    .addColumn('reviewed_at', 'timestamptz')
    .addColumn('approved_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('market_submissions_owner_idx')
    .on('market_submissions')
    .columns(['market', 'owner_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('market_submissions_status_idx')
    .on('market_submissions')
    .columns(['market', 'status', 'created_at'])
    .execute();
  await db.schema.createIndex('market_submissions_listing_idx').on('market_submissions').column('listing_id').execute();
  await sql`create unique index market_submissions_one_live_idx on market_submissions (listing_id) where live`.execute(
    db,
  );
  await sql`create index market_submissions_search_idx on market_submissions using gin (search_document)`.execute(db);

  await db.schema
    .createTable('market_slugs')
    .addColumn('market', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('listing_id', 'uuid', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('market_slugs_pkey', ['market', 'slug'])
    .execute();

  await db.schema
    .createTable('mcp_market_details')
    .addColumn('submission_id', 'uuid', (c) => c.primaryKey().references('market_submissions.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('remote_mcp', 'openapi')`))
    .addColumn('source_fingerprint', 'text', (c) => c.notNull())
    .addColumn('validation_id', 'uuid', (c) => c.notNull())
    .addColumn('event_verification_id', 'uuid')
    .addColumn('remote_mcp_url', 'text')
    .addColumn('openapi_base_url', 'text')
    .addColumn('openapi_spec', 'jsonb')
    .addColumn('static_config_sealed', 'text', (c) => c.notNull())
    .addColumn('required_user_params_schema', 'jsonb', (c) => c.notNull())
    .addColumn('monetization_strategy', 'text', (c) =>
      c.notNull().check(sql`monetization_strategy in ('free', 'provider_event', 'tool_call_fixed')`),
    )
    .addColumn('pricing_events', 'jsonb', (c) => c.notNull())
    .addColumn('tools', 'jsonb', (c) => c.notNull())
    .addColumn('discovery_cache', 'jsonb', (c) => c.notNull())
    .addColumn('approved_tools', 'jsonb')
    .addColumn('approved_tools_hash', 'text')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'mcp_market_details',
    'market_slugs',
    'market_submissions',
    'market_icons',
    'market_verification_charges',
    'market_event_verifications',
    'market_validations',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
