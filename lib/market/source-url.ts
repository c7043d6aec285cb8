import { isIP } from 'node:net';
import { checkAddress, classifyAddress, normalizeHostname, type NetworkPolicy } from '../net/ssrf';
import { ruleBroken } from './errors';

/** True when NETWORK_ALLOWLIST opens this host (by name, or as a non-public address inside an allowed range). */
export function isAllowlistedHost(hostname: string, policy: NetworkPolicy): boolean {
  const host = normalizeHostname(hostname);
  if (policy.hostnames.has(host)) return true;
  return isIP(host) !== 0 && classifyAddress(host) !== 'public' && checkAddress(host, host, policy).allowed;
}

/**
 * Market sources (remote MCP endpoints, OpenAPI documents and base URLs) are HTTPS: a plain-http
 * URL is refused with 400 insecure_url unless NETWORK_ALLOWLIST opens its host (development, tests).
 * URLs carrying user:password are refused too: credentials belong in params or staticConfig.
 */
export function requireSecureSourceUrl(value: string, field: string, policy: NetworkPolicy): void {
  const url = new URL(value);
  if (url.username || url.password) throw ruleBroken('credentials_in_url', `${field} must not carry a user name or password; pass them as params`, `body/${field}`);
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && isAllowlistedHost(url.hostname, policy)) return;
  throw ruleBroken('insecure_url', `${field} must be an https:// URL`, `body/${field}`);
}
