import { Resolver as DnsResolver } from 'node:dns/promises';
import { isIP } from 'node:net';

import type { ResolvedAddress, Resolver } from './ssrf';

/** What `dns.lookup` (and the DNS_SERVERS resolver) fail with for a name that does not exist or has no address. */
export const HOST_NOT_FOUND: ReadonlySet<string> = new Set(['ENOTFOUND', 'EAI_NODATA', 'EAI_NONAME']);

/** One DNS server of DNS_SERVERS: an IP address and a port (53 unless given). */
export interface DnsServer {
  address: string;
  port: number;
}

/**
 * Parses DNS_SERVERS: comma-separated `ip`, `ip:port`, `[ipv6]` or `[ipv6]:port` entries (a bare IPv6 address takes
 * no port). Names are refused: the servers that resolve names cannot themselves need resolving.
 */
export function parseDnsServers(value: string | undefined | null): DnsServer[] {
  const servers: DnsServer[] = [];
  for (const raw of (value ?? '').split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const match =
      /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry) ??
      (isIP(entry) === 6 ? [entry, entry, undefined] : /^([^:]+)(?::(\d{1,5}))?$/.exec(entry));
    const address = match?.[1];
    const port = match?.[2] === undefined ? 53 : Number(match[2]);
    if (!address || isIP(address) === 0)
      throw new Error(`"${entry}" is not an IP address (expected ip, ip:port or [ipv6]:port)`);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`"${entry}" has a port outside 1-65535`);
    servers.push({ address, port });
  }
  return servers;
}

/** How `setServers` takes a server: a port other than 53 needs the `ip:port` / `[ipv6]:port` form. */
function serverString({ address, port }: DnsServer): string {
  if (port === 53) return address;
  return isIP(address) === 6 ? `[${address}]:${port}` : `${address}:${port}`;
}

/** "Does not exist" answers: the name is not there, or has no address. Anything else is the DNS service's trouble. */
const NO_SUCH_NAME = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME', 'NXDOMAIN']);

function lookupError(hostname: string, code: 'ENOTFOUND' | 'EAI_AGAIN', detail?: string): NodeJS.ErrnoException {
  const reason = detail ? ` (${detail})` : '';
  return Object.assign(new Error(`getaddrinfo ${code} ${hostname}${reason}`), { code, hostname });
}

/**
 * A Resolver that asks only the given DNS servers (A and AAAA records), never /etc/resolv.conf or /etc/hosts.
 * Its failures read like `dns.lookup`'s: ENOTFOUND when the name does not exist or has no address, EAI_AGAIN when
 * the servers could not answer (timeout, refusal, SERVFAIL). `localhost` and `*.localhost` are loopback without a
 * query (RFC 6761), as the system resolver's hosts file has them.
 */
export function dnsServersResolver(
  servers: readonly DnsServer[],
  options: { timeoutMs?: number; tries?: number } = {},
): Resolver {
  if (servers.length === 0) throw new Error('dnsServersResolver needs at least one server');
  const resolver = new DnsResolver({ timeout: options.timeoutMs ?? 2_000, tries: options.tries ?? 2 });
  resolver.setServers(servers.map(serverString));
  return async (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) {
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    }
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
    const addresses: ResolvedAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
    ];
    if (addresses.length > 0) return addresses;
    const codes = [v4, v6].map((r) =>
      r.status === 'rejected' ? String((r.reason as NodeJS.ErrnoException)?.code ?? 'EUNKNOWN') : 'ENODATA',
    );
    if (codes.every((code) => NO_SUCH_NAME.has(code))) throw lookupError(name, 'ENOTFOUND');
    throw lookupError(
      name,
      'EAI_AGAIN',
      codes.find((code) => !NO_SUCH_NAME.has(code)),
    );
  };
}
