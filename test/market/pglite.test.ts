import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { migrateToLatest, openDatabase, type Db } from '../../db/connect';
import { createUser } from '../../db/repos/users';
import { recordValidation } from '../../db/repos/market-validations';
import { createEventVerification, recordVerificationCharge } from '../../db/repos/market-event-verifications';
import { insertIcon, readIcon } from '../../db/repos/market-icons';
import { createRevision, createSubmission, reviewSubmission, submitForReview } from '../../db/repos/market-submissions';
import {
  findPublicMcpEntry,
  mcpDetailsWriter,
  mcpMarketHooks,
  searchPublicMcpEntries,
} from '../../db/repos/market-mcp';
import { prepareMcpSubmission } from '../../lib/market/mcp-submission';
import { PUBLIC_ONLY_POLICY } from '../../lib/net/ssrf';
import { closeMarketRun, chargeMarketRun, openMarketRun } from '../../db/repos/market-runs';
import { getWalletSummary } from '../../db/repos/ledger';
import { findLedgerProblems } from '../support/ledger-reconciliation';
import { weatherTools } from '../support/market';

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
    const validation = await recordValidation(db, {
      ownerId: userId,
      source: { type: 'remote_mcp', url },
      discovery: { title: 'W', description: null, tools: weatherTools(), params: [] },
    });
    assert.equal(validation.status, 'valid');

    const prepared = prepareMcpSubmission(
      {
        validationId: validation.id,
        sourceFingerprint: validation.sourceFingerprint,
        type: 'remote_mcp',
        name: 'Lighthouse weather',
        remoteMcpUrl: url,
        monetizationStrategy: 'free',
        pricingEvents: [],
        staticConfig: { k: 'v' },
      },
      { validation, verification: null, iconOwned: false, policy: PUBLIC_ONLY_POLICY, now: new Date() },
      (key) => key,
    );
    const fields = { ...prepared, iconUrl: null, iconObjectKey: null };
    const id = await createSubmission(db, {
      market: 'mcp',
      ownerId: userId,
      fields,
      writeDetails: mcpDetailsWriter(masterKey, prepared),
    });
    await submitForReview(db, 'mcp', userId, id);
    const hooks = mcpMarketHooks(masterKey);
    await reviewSubmission(db, { market: 'mcp', id, action: 'approve' }, hooks);
    const revision = await createRevision(db, 'mcp', userId, id, hooks);
    await submitForReview(db, 'mcp', userId, revision);
    const approved = await reviewSubmission(db, { market: 'mcp', id: revision, action: 'approve' }, hooks);
    assert.equal(approved.listingId, id);
    assert.equal((await findPublicMcpEntry(db, id))!.id, revision);
    const found = await searchPublicMcpEntries(db, { q: 'lighthouse forec' }, { page: 1, pageSize: 10 });
    assert.deepEqual(
      found.rows.map((r) => r.listingId),
      [id],
    );
    assert.equal(found.total, 1);

    const image = new PNG({ width: 16, height: 16 });
    const bytes = PNG.sync.write(image);
    const icon = await insertIcon(db, { ownerId: userId, content: bytes, width: 16, height: 16, fileName: 'a.png' });
    assert.ok((await readIcon(db, icon.id))!.content.equals(bytes));

    const verification = await createEventVerification(db, {
      ownerId: userId,
      sourceFingerprint: validation.sourceFingerprint,
      eventNames: ['a', 'b'],
      ttlMs: 60_000,
    });
    const result = () => ({ ok: true });
    const charged = await recordVerificationCharge(db, {
      runId: verification.runId,
      idempotencyKey: 'k',
      requestHash: 'h',
      eventName: 'a',
      result,
    });
    assert.equal(charged.kind, 'recorded');
    assert.equal(
      (
        await recordVerificationCharge(db, {
          runId: verification.runId,
          idempotencyKey: 'k',
          requestHash: 'h',
          eventName: 'a',
          result,
        })
      ).kind,
      'replayed',
    );
    assert.equal(
      (
        await recordVerificationCharge(db, {
          runId: verification.runId,
          idempotencyKey: 'k',
          requestHash: 'other',
          eventName: 'a',
          result,
        })
      ).kind,
      'conflict',
    );
    assert.equal(
      (
        await recordVerificationCharge(db, {
          runId: verification.runId,
          idempotencyKey: 'k2',
          requestHash: 'h',
          eventName: 'zzz',
          result,
        })
      ).kind,
      'unknown_event',
    );
  });

  it('opens market runs, charges them once per key and releases their holds', async function () {
    this.timeout(60_000);
    const provider = await createUser(db, masterKey, { email: 'events@example.com' });
    const consumer = await createUser(db, masterKey, { email: 'consumer@example.com', creditMicros: 2_000_000 });
    const url = 'https://mcp.events.example/mcp';
    const validation = await recordValidation(db, {
      ownerId: provider.userId,
      source: { type: 'remote_mcp', url },
      discovery: { title: 'E', description: null, tools: weatherTools(), params: [] },
    });
    const created = await createEventVerification(db, {
      ownerId: provider.userId,
      sourceFingerprint: validation.sourceFingerprint,
      eventNames: ['page.scraped'],
      ttlMs: 60_000,
    });
    const proven = await recordVerificationCharge(db, {
      runId: created.runId,
      idempotencyKey: 'v',
      requestHash: 'h',
      eventName: 'page.scraped',
      result: () => ({}),
    });
    assert.equal(proven.kind, 'recorded');
    const prepared = prepareMcpSubmission(
      {
        validationId: validation.id,
        sourceFingerprint: validation.sourceFingerprint,
        eventVerificationId: created.id,
        type: 'remote_mcp',
        name: 'Event pages',
        remoteMcpUrl: url,
        monetizationStrategy: 'provider_event',
        pricingEvents: [{ eventName: 'page.scraped', unitPriceUsd: 0.25 }],
      },
      {
        validation,
        verification: proven.kind === 'recorded' ? proven.verification : null,
        iconOwned: false,
        policy: PUBLIC_ONLY_POLICY,
        now: new Date(),
      },
      (key) => key,
    );
    const id = await createSubmission(db, {
      market: 'mcp',
      ownerId: provider.userId,
      fields: { ...prepared, iconUrl: null, iconObjectKey: null },
      writeDetails: mcpDetailsWriter(masterKey, prepared),
    });
    await submitForReview(db, 'mcp', provider.userId, id);
    await reviewSubmission(db, { market: 'mcp', id, action: 'approve' }, mcpMarketHooks(masterKey));

    const opened = await openMarketRun(db, {
      consumerId: consumer.userId,
      entryId: id,
      selectionId: 'cred-1',
      capMicros: 600_000,
      ttlMs: 60_000,
      limitMicros: 1_000_000,
      chargeTokenKey: randomBytes(32),
    });
    assert.equal(opened.outcome, 'opened');
    if (opened.outcome !== 'opened') return;
    assert.equal((await getWalletSummary(db, consumer.userId)).availableMicros, 1_400_000);
    const request = {
      runId: opened.run.id,
      providerId: provider.userId,
      entryId: id,
      idempotencyKey: 'k',
      requestHash: 'h',
      eventName: 'page.scraped',
      count: 5,
      toolName: null,
      commissionRate: 0.2,
    };
    const charged = await chargeMarketRun(db, request);
    assert.equal(charged.kind, 'recorded');
    if (charged.kind === 'recorded')
      assert.deepEqual(
        [charged.result.chargedCount, charged.result.totalChargedUsd, charged.result.providerRevenueUsd],
        [2, 0.5, 0.4],
      );
    assert.equal((await chargeMarketRun(db, request)).kind, 'replayed');
    assert.equal((await chargeMarketRun(db, { ...request, requestHash: 'other' })).kind, 'conflict');
    assert.deepEqual(await closeMarketRun(db, opened.run.id), {
      closed: true,
      releasedMicros: 100_000,
      chargedMicros: 500_000,
    });
    assert.deepEqual(await getWalletSummary(db, consumer.userId), {
      balanceMicros: 1_500_000,
      heldMicros: 0,
      availableMicros: 1_500_000,
    });
    assert.equal((await getWalletSummary(db, provider.userId)).balanceMicros, 400_000);
    assert.deepEqual(await findLedgerProblems(db), []);
  });
});
