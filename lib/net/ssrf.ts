import { promises as dnsPromises, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

import { unbracketHost } from './host';

export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'unique-local'
  | 'cgnat'
  | 'link-local'
  | 'site-local'
  | 'metadata'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmark'
  | 'reserved'
  | 'invalid';

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

export interface IpNetwork {
  readonly cidr: string;
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

export interface NetworkPolicy {
  readonly hostnames: ReadonlySet<string>;
  readonly networks: readonly IpNetwork[];
  /**
   * How names are resolved for the guard's checks (and so for the connections, which use the checked addresses):
   * the DNS_SERVERS resolver when configured (see networkPolicyFromConfig), the system resolver when absent.
   */
  readonly resolver?: Resolver;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export class SsrfBlockedError extends Error {
  readonly code = 'ssrf_blocked' as const;
  readonly host: string;
  readonly reason: string;

  constructor(host: string, reason: string) {
    super(`Refused to connect to ${host}: ${reason}`);
    this.name = 'SsrfBlockedError';
    this.host = host;
    this.reason = reason;
  }
}

interface ParsedAddress {
  family: 4 | 6;
  bytes: Uint8Array;
}

function parseIPv4(text: string): Uint8Array {
  return Uint8Array.from(text.split('.'), Number);
}

function parseIPv6(text: string): Uint8Array {
  const bytes = new Uint8Array(16);
  const toGroups = (part: string): number[] => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const piece of part.split(':')) {
      if (piece.includes('.')) {
        const [a, b, c, d] = parseIPv4(piece);
        groups.push((a << 8) | b, (c << 8) | d);
      } else {
        groups.push(parseInt(piece, 16));
      }
    }
    return groups;
  };
  const gap = text.indexOf('::');
  const head = toGroups(gap === -1 ? text : text.slice(0, gap));
  const tail = gap === -1 ? [] : toGroups(text.slice(gap + 2));
  const groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  groups.forEach((group, index) => {
    bytes[index * 2] = group >> 8;
    bytes[index * 2 + 1] = group & 0xff;
  });
  return bytes;
}

function parseAddress(input: string): ParsedAddress | null {
  const text = unbracketHost(input);
  const family = isIP(text);
  if (family === 4) return { family: 4, bytes: parseIPv4(text) };
  if (family === 6) return { family: 6, bytes: parseIPv6(text.replace(/%.*$/, '')) };
  return null;
}

function parseNetwork(cidr: string): IpNetwork | null {
  const slash = cidr.indexOf('/');
  const address = parseAddress(slash === -1 ? cidr : cidr.slice(0, slash));
  if (!address) return null;
  const maxPrefix = address.family === 4 ? 32 : 128;
  const prefixText = slash === -1 ? String(maxPrefix) : cidr.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  if (prefix > maxPrefix) return null;
  const bytes = address.bytes.map((byte, index) => byte & maskByte(prefix, index));
  return {
    cidr: `${formatAddress({ family: address.family, bytes })}/${prefix}`,
    family: address.family,
    bytes,
    prefix,
  };
}

function maskByte(prefix: number, byteIndex: number): number {
  const bits = Math.min(8, Math.max(0, prefix - byteIndex * 8));
  return (0xff << (8 - bits)) & 0xff;
}

function formatAddress(address: ParsedAddress): string {
  if (address.family === 4) return address.bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((address.bytes[i] << 8) | address.bytes[i + 1]).toString(16));
  return groups.join(':');
}

function networkContains(network: IpNetwork, address: ParsedAddress): boolean {
  if (network.family !== address.family) return false;
  return network.bytes.every((byte, index) => (address.bytes[index] & maskByte(network.prefix, index)) === byte);
}

function network(cidr: string): IpNetwork {
  const parsed = parseNetwork(cidr);
  if (!parsed) throw new Error(`Bad built-in network ${cidr}`);
  return parsed;
}

const METADATA_ADDRESSES: readonly IpNetwork[] = [
  '169.254.169.254', // AWS, GCP, Azure, OCI, DigitalOcean, ...
  '169.254.170.2', // AWS ECS task credentials
  '169.254.170.23', // AWS EKS pod identity
  '100.100.100.200', // Alibaba Cloud
  '168.63.129.16', // Azure WireServer
  'fd00:ec2::254', // AWS IMDS over IPv6
  'fd00:ec2::23', // AWS EKS pod identity over IPv6
].map(network);

const IPV4_RANGES: ReadonlyArray<readonly [IpNetwork, AddressClass]> = (
  [
    ['0.0.0.0/8', 'unspecified'],
    ['10.0.0.0/8', 'private'],
    ['100.64.0.0/10', 'cgnat'],
    ['127.0.0.0/8', 'loopback'],
    ['169.254.0.0/16', 'link-local'],
    ['172.16.0.0/12', 'private'],
    ['192.0.0.0/24', 'reserved'],
    ['192.0.2.0/24', 'documentation'],
    ['192.88.99.0/24', 'reserved'],
    ['192.168.0.0/16', 'private'],
    ['198.18.0.0/15', 'benchmark'],
    ['198.51.100.0/24', 'documentation'],
    ['203.0.113.0/24', 'documentation'],
    ['224.0.0.0/4', 'multicast'],
    ['255.255.255.255/32', 'broadcast'],
    ['240.0.0.0/4', 'reserved'],
  ] as const
).map(([cidr, addressClass]) => [network(cidr), addressClass] as const);

type IPv6Rule = { range: IpNetwork; addressClass: AddressClass } | { range: IpNetwork; embeddedIPv4At: number };

const IPV6_RULES: readonly IPv6Rule[] = [
  { range: network('::/128'), addressClass: 'unspecified' },
  { range: network('::1/128'), addressClass: 'loopback' },
  { range: network('::ffff:0:0/96'), embeddedIPv4At: 12 }, // IPv4-mapped
  { range: network('::ffff:0:0:0/96'), embeddedIPv4At: 12 }, // IPv4-translated (SIIT)
  { range: network('::/96'), embeddedIPv4At: 12 }, // IPv4-compatible (deprecated)
  { range: network('64:ff9b::/96'), embeddedIPv4At: 12 }, // NAT64 well-known prefix
  { range: network('64:ff9b:1::/48'), addressClass: 'private' }, // NAT64 local-use
  { range: network('100::/64'), addressClass: 'reserved' }, // discard-only
  { range: network('2001:2::/48'), addressClass: 'benchmark' },
  { range: network('2001:db8::/32'), addressClass: 'documentation' },
  { range: network('2001::/23'), addressClass: 'reserved' }, // IETF protocol assignments, incl. Teredo
  { range: network('2002::/16'), embeddedIPv4At: 2 }, // 6to4
  { range: network('3fff::/20'), addressClass: 'documentation' },
  { range: network('fc00::/7'), addressClass: 'unique-local' },
  { range: network('fe80::/10'), addressClass: 'link-local' },
  { range: network('fec0::/10'), addressClass: 'site-local' },
  { range: network('ff00::/8'), addressClass: 'multicast' },
  { range: network('2000::/3'), addressClass: 'public' },
];

function classifyParsed(address: ParsedAddress): AddressClass {
  if (METADATA_ADDRESSES.some((metadata) => networkContains(metadata, address))) return 'metadata';
  if (address.family === 4) {
    return IPV4_RANGES.find(([range]) => networkContains(range, address))?.[1] ?? 'public';
  }
  const rule = IPV6_RULES.find(({ range }) => networkContains(range, address));
  if (!rule) return 'reserved';
  if ('addressClass' in rule) return rule.addressClass;
  const start = rule.embeddedIPv4At;
  return classifyParsed({ family: 4, bytes: address.bytes.slice(start, start + 4) });
}

export function classifyAddress(ip: string): AddressClass {
  const parsed = parseAddress(ip);
  return parsed ? classifyParsed(parsed) : 'invalid';
}

/** ::ffff:a.b.c.d connects to a.b.c.d, so allowlist matching treats it as that IPv4 address. */
function unmapIPv4(address: ParsedAddress): ParsedAddress {
  const isMapped =
    address.family === 6 &&
    address.bytes.subarray(0, 10).every((b) => b === 0) &&
    address.bytes[10] === 0xff &&
    address.bytes[11] === 0xff;
  return isMapped ? { family: 4, bytes: address.bytes.slice(12) } : address;
}

export function normalizeHostname(hostname: string): string {
  return unbracketHost(hostname).toLowerCase().replace(/\.$/, '');
}

export function checkAddress(ip: string, hostname: string, policy: NetworkPolicy): AddressVerdict {
  const parsed = parseAddress(ip);
  if (!parsed) return { allowed: false, reason: `${JSON.stringify(ip)} is not an IP address` };
  const addressClass = classifyParsed(parsed);
  if (addressClass === 'metadata')
    return { allowed: false, reason: `${ip} is a cloud metadata address (always refused)` };
  if (addressClass === 'public') return { allowed: true };
  const candidate = unmapIPv4(parsed);
  const allowlisted =
    policy.hostnames.has(normalizeHostname(hostname)) ||
    policy.networks.some((allowed) => networkContains(allowed, candidate));
  if (allowlisted) return { allowed: true };
  return { allowed: false, reason: `${ip} is a ${addressClass} address and is not in the network allowlist` };
}

const HOSTNAME_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

function parseHostnameEntry(entry: string): string | null {
  const hostname = normalizeHostname(entry);
  if (hostname.length === 0 || hostname.length > 253) return null;
  const labels = hostname.split('.');
  if (!labels.every((label) => HOSTNAME_LABEL.test(label))) return null;
  if (/^\d+$/.test(labels[labels.length - 1])) return null;
  return hostname;
}

export const PUBLIC_ONLY_POLICY: NetworkPolicy = Object.freeze({ hostnames: new Set<string>(), networks: [] });

/** Parses a comma-separated list of hostnames, IP addresses and CIDR ranges, e.g. `localhost,127.0.0.0/8,::1`. */
export function parseNetworkAllowlist(value: string | undefined): NetworkPolicy {
  const hostnames = new Set<string>();
  const networks: IpNetwork[] = [];
  for (const rawEntry of (value ?? '').split(',')) {
    const entry = rawEntry.trim();
    if (entry === '') continue;
    const looksLikeAddress = entry.includes('/') || entry.includes(':') || /^[\d.]+$/.test(entry);
    if (looksLikeAddress) {
      const parsed = parseNetwork(entry);
      if (!parsed) throw new Error(`Invalid network allowlist entry "${entry}": expected an IP address or CIDR range`);
      networks.push(parsed);
      continue;
    }
    const hostname = parseHostnameEntry(entry);
    if (!hostname)
      throw new Error(`Invalid network allowlist entry "${entry}": expected a hostname, IP address or CIDR range`);
    hostnames.add(hostname);
  }
  return Object.freeze({ hostnames, networks: Object.freeze(networks) });
}

export const systemResolver: Resolver = async (hostname) => {
  const addresses = await dnsPromises.lookup(hostname, { all: true });
  return addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

/** The resolver a policy names, else the system's. */
export function resolverOf(policy: NetworkPolicy): Resolver {
  return policy.resolver ?? systemResolver;
}

/** The same policy resolving names with `resolver` (tests, and networkPolicyFromConfig). */
export function withResolver(policy: NetworkPolicy, resolver: Resolver | undefined): NetworkPolicy {
  return resolver ? Object.freeze({ ...policy, resolver }) : policy;
}

function notFoundError(hostname: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
}

/**
 * Resolves `hostname` (IP literals skip DNS) and checks every address; refuses the whole name if any
 * address is disallowed. Connect only to the addresses returned.
 */
export async function resolveAllowedAddresses(
  hostname: string,
  policy: NetworkPolicy,
  resolver: Resolver = resolverOf(policy),
): Promise<ResolvedAddress[]> {
  const host = unbracketHost(hostname);
  const literalFamily = isIP(host);
  if (literalFamily !== 0) {
    const verdict = checkAddress(host, host, policy);
    if (!verdict.allowed) throw new SsrfBlockedError(host, verdict.reason);
    return [{ address: host, family: literalFamily === 6 ? 6 : 4 }];
  }
  const addresses = await resolver(host);
  if (addresses.length === 0) throw notFoundError(host);
  for (const { address } of addresses) {
    const verdict = checkAddress(address, host, policy);
    if (!verdict.allowed) throw new SsrfBlockedError(host, `it resolves to ${verdict.reason}`);
  }
  return addresses.map(({ address, family }) => ({ address, family }));
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

function requestedFamily(options: LookupOptions | number | undefined): 0 | 4 | 6 {
  const family = typeof options === 'number' ? options : options?.family;
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

/**
 * A `dns.lookup`-compatible function for the `lookup` option of `http.request`/`net.connect`: the address it
 * hands back is the address it checked, so there is no DNS-rebinding window between check and connect.
 */
export function createGuardedLookup(policy: NetworkPolicy, resolver: Resolver = resolverOf(policy)): LookupFunction {
  return (
    hostname: string,
    optionsOrCallback: LookupOptions | number | LookupCallback,
    maybeCallback?: LookupCallback,
  ) => {
    const callback = typeof optionsOrCallback === 'function' ? optionsOrCallback : maybeCallback;
    const options = typeof optionsOrCallback === 'function' ? undefined : optionsOrCallback;
    if (!callback) throw new TypeError('lookup requires a callback');
    const wantsAll = typeof options === 'object' && options.all === true;
    const family = requestedFamily(options);
    resolveAllowedAddresses(hostname, policy, resolver).then(
      (addresses) => {
        const usable = addresses.filter((address) => family === 0 || address.family === family);
        if (usable.length === 0) return callback(notFoundError(hostname), wantsAll ? [] : '');
        if (wantsAll)
          return callback(
            null,
            usable.map(({ address, family: f }) => ({ address, family: f })),
          );
        callback(null, usable[0].address, usable[0].family);
      },
      (error: NodeJS.ErrnoException) => callback(error, wantsAll ? [] : ''),
    );
  };
}

/** Pre-flight check for user-supplied URLs: http(s) only, and every resolved address must be allowed. */
export async function assertUrlAllowed(
  url: string | URL,
  policy: NetworkPolicy,
  resolver: Resolver = resolverOf(policy),
): Promise<void> {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new SsrfBlockedError(
      parsed.hostname || parsed.protocol,
      `scheme ${parsed.protocol} is not allowed (only http: and https:)`,
    );
  }
  await resolveAllowedAddresses(parsed.hostname, policy, resolver);
}
