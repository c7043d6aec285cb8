import { isIP } from 'node:net';

import { unbracketHost } from './host';
import { checkAddress, classifyAddress, normalizeHostname, type NetworkPolicy } from './ssrf';

/**
 * The one entry check for a user-supplied destination, without DNS or connection: the API runs it when a URL is
 * submitted (scrape and webhook URLs, tool and market sources) and the transport runs it again at every hop of
 * every request, so "https unless allowlisted" answers the same at submission and at call time. Names are resolved
 * and checked by the SSRF guard at every connection; this only refuses what needs no lookup.
 */
export interface UrlEntryRules {
  /** Plain http only to hosts NETWORK_ALLOWLIST opens (tool and market sources, market webhooks). */
  requireHttps?: boolean;
  /** Refuse a URL that carries a user name or password (market sources: credentials belong in params). */
  refuseCredentials?: boolean;
}

/** Why a URL is refused, checked in this order: the URL itself, its scheme, credentials, plain http, a literal internal address. */
export type UrlRefusalCode = 'invalid_url' | 'bad_scheme' | 'credentials_in_url' | 'insecure' | 'blocked';

export interface UrlRefusal {
  code: UrlRefusalCode;
  message: string;
  /** For `blocked`: the SSRF guard's reason (e.g. "127.0.0.1 is a loopback address and is not in the network allowlist"). */
  reason?: string;
}

/**
 * Whether NETWORK_ALLOWLIST opens this host: by name, or (an IP literal) as a non-public address inside an
 * allowed range. The allowlist opens addresses beyond the public internet; a public address is reachable
 * anyway and is not "opened" by it, and a cloud metadata address is never opened.
 */
export function isAllowlistedHost(hostname: string, policy: NetworkPolicy): boolean {
  const host = normalizeHostname(hostname);
  if (policy.hostnames.has(host)) return true;
  return isIP(host) !== 0 && classifyAddress(host) !== 'public' && checkAddress(host, host, policy).allowed;
}

/** The first rule the URL breaks, or null when it may be tried (the SSRF guard still checks every address it resolves to). */
export function judgeUrlEntry(
  value: string | URL,
  policy: NetworkPolicy,
  rules: UrlEntryRules = {},
): UrlRefusal | null {
  let url: URL;
  try {
    url = typeof value === 'string' ? new URL(value) : value;
  } catch {
    return { code: 'invalid_url', message: 'is not a valid URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { code: 'bad_scheme', message: `Only http: and https: URLs can be fetched, got ${url.protocol}` };
  }
  if (rules.refuseCredentials && (url.username || url.password)) {
    return { code: 'credentials_in_url', message: 'must not carry a user name or password' };
  }
  if (rules.requireHttps && url.protocol === 'http:' && !isAllowlistedHost(url.hostname, policy)) {
    return {
      code: 'insecure',
      message: `${url.origin} uses plain http; only https is allowed (except for hosts in NETWORK_ALLOWLIST)`,
    };
  }
  const host = unbracketHost(url.hostname);
  const literal = isIP(host) ? host : /^localhost\.?$|\.localhost\.?$/i.test(host) ? '127.0.0.1' : null;
  if (literal === null) return null;
  const verdict = checkAddress(literal, host, policy);
  if (verdict.allowed) return null;
  return { code: 'blocked', message: `Refused to connect to ${host}: ${verdict.reason}`, reason: verdict.reason };
}
