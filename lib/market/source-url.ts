import type { NetworkPolicy } from '../net/ssrf';
import { judgeUrlEntry } from '../net/url-entry';
import { ruleBroken } from './errors';

/**
 * Market sources (remote MCP endpoints, OpenAPI documents and base URLs) are HTTPS: a plain-http
 * URL is refused with 400 insecure_url unless NETWORK_ALLOWLIST opens its host (development, tests),
 * by the same entry check the transport applies at call time (lib/net/url-entry.ts).
 * URLs carrying user:password are refused too: credentials belong in params or staticConfig.
 * A literal internal address is left to the SSRF guard (discovery and validation refuse it).
 */
export function requireSecureSourceUrl(value: string, field: string, policy: NetworkPolicy): void {
  const refusal = judgeUrlEntry(value, policy, { requireHttps: true, refuseCredentials: true });
  if (!refusal || refusal.code === 'blocked') return;
  if (refusal.code === 'credentials_in_url')
    throw ruleBroken(
      'credentials_in_url',
      `${field} must not carry a user name or password; pass them as params`,
      `body/${field}`,
    );
  throw ruleBroken('insecure_url', `${field} must be an https:// URL`, `body/${field}`);
}
