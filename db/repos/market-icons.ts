import { createHash, randomUUID } from 'node:crypto';
import type { Db } from '../connect';

export interface StoredIcon {
  id: string;
  width: number;
  height: number;
  byteSize: number;
}

export async function insertIcon(
  db: Db,
  input: { ownerId: string; content: Buffer; width: number; height: number; fileName: string },
): Promise<StoredIcon> {
  const id = randomUUID();
  await db
    .insertInto('market_icons')
    .values({
      id,
      owner_id: input.ownerId,
      content: input.content,
      byte_size: input.content.length,
      width: input.width,
      height: input.height,
      sha256: createHash('sha256').update(input.content).digest('hex'),
      file_name: input.fileName,
    })
    .execute();
  return { id, width: input.width, height: input.height, byteSize: input.content.length };
}

export async function iconBelongsTo(db: Db, ownerId: string, id: string): Promise<boolean> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
  return !!(await db
    .selectFrom('market_icons')
    .select('id')
    .where('id', '=', id)
    .where('owner_id', '=', ownerId)
    .executeTakeFirst());
}

/** The bytes of an icon, for serving (icons are public once uploaded: their ids are unguessable). */
export async function readIcon(db: Db, id: string): Promise<{ content: Buffer; sha256: string } | null> {
  const row = await db.selectFrom('market_icons').select(['content', 'sha256']).where('id', '=', id).executeTakeFirst();
  return row ? { content: Buffer.from(row.content), sha256: row.sha256 } : null;
}
