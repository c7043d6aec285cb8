/**
 * A hosted fixed-price call in two statements (issue 26): the acquire and the settlement, where it was three.
 *
 * - acquire_market_run(..., p_credential, p_api_key, p_credential_source, p_credential_issued): as migration
 *   0024's, and first, when p_credential is given, the check of the presented credential that the hosted
 *   endpoint made in a statement of its own on every request (db/repos/market-credentials.ts
 *   findCredentialUse): its API key live (not rotated: 'key_rotated'), the credential not revoked
 *   ('credential_revoked'), both read in this statement, never remembered, so a revocation still takes effect
 *   at the next call. A credential issued before credentials were recorded (migration 0023) is recorded at
 *   its first use, and last_used_at is written at most once a minute, as before. Without p_credential (agents,
 *   a plain API key, a request whose credential was checked on its own) nothing changes.
 * - settle_market_call(...) (same arguments as migration 0016's): the same checks, rows and answers, fewer
 *   writes — the run's total and the end of the call's use of it in one update of the run row (two before),
 *   and each ledger entry inserted once with its balance after (apply_ledger_entry inserts and then updates
 *   it; its replay of a known key never applies to a settlement, whose keys derive from a fresh charge id).
 *   post_market_charge's check of the amounts is kept, before anything is locked.
 * - open_holds_micros(user): the same query in PL/pgSQL, so that its plan is kept by the session (a SQL
 *   function that cannot be inlined is planned at every call; the acquire calls it for every fixed-price call).
 *
 * These versions were created here; the current text of each function lives in db/functions/<name>.sql,
 * applied after the versioned migrations (db/functions/README.md); older versions are in the git history.
 */
export async function up(): Promise<void> {}

export async function down(): Promise<void> {}
