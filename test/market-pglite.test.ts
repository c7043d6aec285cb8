import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { migrateToLatest, openDatabase, type Db } from '../db/connect';
import { createUser } from '../db/repos/users';
import { recordValidation } from '../db/repos/market-validations';
import { createEventVerification, recordVerificationCharge } from '../db/repos/market-event-verifications';
import { insertIcon, readIcon } from '../db/repos/market-icons';
import { createRevision, createSubmission, reviewSubmission, submitForReview } from '../db/repos/market-submissions';
import { findPublicMcpEntry, mcpDetailsWriter, mcpMarketHooks, searchPublicMcpEntries } from '../db/repos/market-mcp';
import { prepareMcpSubmission } from '../lib/market/mcp-submission';
import { PUBLIC_ONLY_POLICY } from '../lib/net/ssrf';
import { weatherTools } from './support/market';

/** The market's SQL on embedded PGlite (what `npm start` uses without DATABASE_URL). */
describe('tool market storage on PGlite', function () {
  let dir: string;
  let db: Db;
  const masterKey = randomBytes(32);

  before(async function () {
    this.timeout(120_000);
    dir = mkdtempSync(path.join(os.tmpdir(), 'market-pglite-'));
    db = await openDatabase({ databaseUrl: null, dataDir: dir });
    await migrateToLatest(db);
  });

  after(async function () {
    await db?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores validations, submissions, reviews, revisions, search, icons and verification charges', async function () {
    this.timeout(120_000);
    const { userId } = await createUser(db, masterKey, { email: 'provider@example.com' });
    const url = 'https://mcp.weather.example/mcp';
    const validation = await recordValidation(db, { ownerId: userId, source: { type: 'remote_mcp', url }, discovery: { title: 'W', description: null, tools: weatherTools(), params: [] } });
    assert.equal(validation.status, 'valid');

    const prepared = prepareMcpSubmission(
      { validationId: validation.id, sourceFingerprint: validation.sourceFingerprint, type: 'remote_mcp', name: 'Lighthouse weather', remoteMcpUrl: url, monetizationStrategy: 'free', staticConfig: { k: 'v' } },
      { validation, verification: null, iconOwned: false, policy: PUBLIC_ONLY_POLICY, now: new Date() },
      (key) => key,
    );
    const fields = { ...prepared, iconUrl: null, iconObjectKey: null };
    const id = await createSubmission(db, { market: 'mcp', ownerId: userId, fields, writeDetails: mcpDetailsWriter(masterKey, prepared) });
    await submitForReview(db, 'mcp', userId, id);
    const hooks = mcpMarketHooks(masterKey);
    await reviewSubmission(db, { market: 'mcp', id, action: 'approve' }, hooks);
    const revision = await createRevision(db, 'mcp', userId, id, hooks);
    await submitForReview(db, 'mcp', userId, revision);
    const approved = await reviewSubmission(db, { market: 'mcp', id: revision, action: 'approve' }, hooks);
    assert.equal(approved.listingId, id);
    assert.equal((await findPublicMcpEntry(db, id))!.id, revision);
    const found = await searchPublicMcpEntries(db, { q: 'lighthouse forec' }, { page: 1, pageSize: 10 });
    assert.deepEqual(found.rows.map((r) => r.listingId), [id]);
    assert.equal(found.total, 1);

    const image = new PNG({ width: 16, height: 16 });
    const bytes = PNG.sync.write(image);
    const icon = await insertIcon(db, { ownerId: userId, content: bytes, width: 16, height: 16, fileName: 'a.png' });
    assert.ok((await readIcon(db, icon.id))!.content.equals(bytes));

    const verification = await createEventVerification(db, { ownerId: userId, sourceFingerprint: validation.sourceFingerprint, eventNames: ['a', 'b'], ttlMs: 60_000 });
    const result = () => ({ ok: true });
    const charged = await recordVerificationCharge(db, { runId: verification.runId, idempotencyKey: 'k', requestHash: 'h', eventName: 'a', result });
    assert.equal(charged.kind, 'recorded');
    assert.equal((await recordVerificationCharge(db, { runId: verification.runId, idempotencyKey: 'k', requestHash: 'h', eventName: 'a', result })).kind, 'replayed');
    assert.equal((await recordVerificationCharge(db, { runId: verification.runId, idempotencyKey: 'k', requestHash: 'other', eventName: 'a', result })).kind, 'conflict');
    assert.equal((await recordVerificationCharge(db, { runId: verification.runId, idempotencyKey: 'k2', requestHash: 'h', eventName: 'zzz', result })).kind, 'unknown_event');
  });
});
