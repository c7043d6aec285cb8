import { createHash } from 'node:crypto';
import type { Db } from '../../../db/connect';
import { createOperatorSession, endOperatorSession, findOperatorSession } from '../../../db/repos/operator-sessions';
import type { Config } from '../../../lib/config';

/**
 * The review queue's operator sessions: opened with ADMIN_TOKEN, stored as the SHA-256 of their token
 * (db/repos/operator-sessions.ts), bound to a hash of the admin token so rotating it ends them all.
 */
interface OperatorDeps {
  db: Db;
  config: Pick<Config, 'adminToken' | 'web'>;
}

/** A hash of the admin token: what an operator session is bound to. */
const adminKey = (adminToken: string) =>
  createHash('sha256').update(`console-operator:${adminToken}`).digest('base64url');

/** Opens an operator session for WEB_SESSION_IDLE_MINUTES: its token (for the cookie), CSRF token and end. */
export function openOperatorSession(deps: OperatorDeps) {
  return createOperatorSession(deps.db, {
    adminKey: adminKey(deps.config.adminToken),
    ttlMs: deps.config.web.sessionIdleMs,
  });
}

/** The operator session a cookie's token opens: live, and opened with the current admin token; else null. */
export function liveOperatorSession(deps: OperatorDeps, token: string) {
  return findOperatorSession(deps.db, token, adminKey(deps.config.adminToken));
}

/** Ends an operator session on the server (a copy of its cookie is refused from now on). */
export function closeOperatorSession(db: Db, token: string): Promise<void> {
  return endOperatorSession(db, token);
}
