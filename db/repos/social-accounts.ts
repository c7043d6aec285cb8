import { randomUUID } from 'node:crypto';
import type { Selectable, Updateable } from 'kysely';
import type { Db } from '../connect';
import type { SocialAccountsTable, SocialPlatform } from '../schema';
import { seal, unseal } from '../../lib/crypto';

export type SocialAccountRow = Selectable<SocialAccountsTable>;

/** The contract's SocialAccount: never credentials, never the session. */
export function toSocialAccount(row: SocialAccountRow) {
  return {
    id: row.id,
    userId: row.user_id,
    platform: row.platform,
    name: row.name,
    isActive: row.is_active,
    validationStatus: row.validation_status,
    validationMessage: row.validation_message,
    lastValidatedAt: row.last_validated_at ? new Date(row.last_validated_at).toISOString() : null,
    meta: row.meta,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

const credentialsAad = (id: string) => `social-credentials:${id}`;
const sessionAad = (id: string) => `social-session:${id}`;

export function sealCredentials(masterKey: Buffer, accountId: string, credentials: object): string {
  return seal(masterKey, JSON.stringify(credentials), credentialsAad(accountId));
}

export function unsealCredentials<T>(masterKey: Buffer, row: Pick<SocialAccountRow, 'id' | 'credentials_sealed'>): T {
  return JSON.parse(unseal(masterKey, row.credentials_sealed, credentialsAad(row.id))) as T;
}

export function sealSession(masterKey: Buffer, accountId: string, session: unknown | null): string | null {
  return session === null ? null : seal(masterKey, JSON.stringify(session), sessionAad(accountId));
}

export function unsealSession<T>(masterKey: Buffer, row: Pick<SocialAccountRow, 'id' | 'session_sealed'>): T | null {
  return row.session_sealed ? (JSON.parse(unseal(masterKey, row.session_sealed, sessionAad(row.id))) as T) : null;
}

export async function insertValidatedAccount(
  db: Db,
  masterKey: Buffer,
  input: {
    userId: string;
    platform: SocialPlatform;
    name: string;
    isActive: boolean;
    credentials: object;
    meta: Record<string, unknown>;
    session: unknown | null;
  },
): Promise<SocialAccountRow> {
  const id = randomUUID();
  return db
    .insertInto('social_accounts')
    .values({
      id,
      user_id: input.userId,
      platform: input.platform,
      name: input.name,
      is_active: input.isActive,
      validation_status: 'valid',
      validation_message: null,
      last_validated_at: new Date(),
      meta: JSON.stringify(input.meta),
      credentials_sealed: sealCredentials(masterKey, id, input.credentials),
      session_sealed: sealSession(masterKey, id, input.session),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findAccount(db: Db, userId: string, id: string) {
  return db
    .selectFrom('social_accounts')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export function listAccounts(db: Db, userId: string, platform?: SocialPlatform) {
  let query = db.selectFrom('social_accounts').selectAll().where('user_id', '=', userId);
  if (platform) query = query.where('platform', '=', platform);
  return query.orderBy('created_at').execute();
}

/** The account, which must exist and be the user's (an agent run acting with it). */
export function getAccount(db: Db, userId: string, id: string) {
  return db
    .selectFrom('social_accounts')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
}

/** The user's accounts on a platform, oldest first: all of them, or those of `accountIds`. */
export function listAccountsOf(
  db: Db,
  userId: string,
  platform: SocialPlatform,
  accountIds: readonly string[] | 'all',
) {
  let query = db
    .selectFrom('social_accounts')
    .selectAll()
    .where('user_id', '=', userId)
    .where('platform', '=', platform);
  if (accountIds !== 'all') query = query.where('id', 'in', accountIds);
  return query.orderBy('created_at').execute();
}

/** The ids of the user's accounts on a platform. */
export function listAccountIds(db: Db, userId: string, platform: SocialPlatform) {
  return db
    .selectFrom('social_accounts')
    .select(['id', 'platform'])
    .where('user_id', '=', userId)
    .where('platform', '=', platform)
    .execute();
}

/** Keeps a fresh platform session (sealed) on the account. */
export async function saveAccountSession(db: Db, id: string, sessionSealed: string | null): Promise<void> {
  await db
    .updateTable('social_accounts')
    .set({ session_sealed: sessionSealed, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

export function updateAccount(db: Db, userId: string, id: string, changes: Updateable<SocialAccountsTable>) {
  return db
    .updateTable('social_accounts')
    .set(changes)
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteAccount(db: Db, userId: string, id: string): Promise<void> {
  await db.deleteFrom('social_accounts').where('id', '=', id).where('user_id', '=', userId).execute();
}
