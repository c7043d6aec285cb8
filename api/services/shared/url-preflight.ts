import { judgeUrlEntry, type UrlEntryRules } from '../../../lib/net/url-entry';
import type { NetworkPolicy } from '../../../lib/net/ssrf';
import { ApiError, badRequest } from '../../errors';

/**
 * Refuses at the door what the network core would refuse anyway without DNS (lib/net/url-entry.ts): literal
 * internal addresses and localhost names, and, with `requireHttps`, plain http to a host NETWORK_ALLOWLIST does
 * not open (answered 400 `insecureCode`). Names are resolved and checked again at every connection.
 */
export function preflightUrl(
  field: string,
  value: string,
  policy: NetworkPolicy,
  rules: UrlEntryRules = {},
  insecureCode = 'insecure_url',
): void {
  const refusal = judgeUrlEntry(value, policy, rules);
  if (!refusal) return;
  const path = `body/${field}`;
  if (refusal.code === 'insecure')
    throw new ApiError(400, insecureCode, `${field} must be an https:// URL`, [{ path, message: 'must use https' }]);
  if (refusal.code === 'blocked')
    throw badRequest(`${field} points to an address this service will not connect to`, [
      { path, message: refusal.reason ?? refusal.message },
    ]);
  throw badRequest(`${field} ${refusal.code === 'bad_scheme' ? 'must be an http(s) URL' : refusal.message}`, [
    { path, message: refusal.message },
  ]);
}
