import { dnsServersResolver, type DnsServer } from './dns';
import { parseNetworkAllowlist, withResolver, type NetworkPolicy } from './ssrf';

/** The parts of the configuration the SSRF guard reads. */
export interface NetworkPolicyConfig {
  /** NETWORK_ALLOWLIST: hostnames, IPs and CIDR ranges opened beyond the public internet. */
  networkAllowlist: string | undefined;
  /** DNS_SERVERS: when set, every name the guard checks is resolved by these servers only. */
  dnsServers: readonly DnsServer[];
}

/**
 * The one place the SSRF guard's policy is built from configuration: what NETWORK_ALLOWLIST opens (plus
 * `extraHosts`, e.g. the operator's own platform hosts), resolving names through DNS_SERVERS when set and the
 * system resolver otherwise. Every lookup made for a user URL (scrapes, the browser's routed requests, tool and
 * market discovery, webhooks) goes through the policy's resolver.
 */
export function networkPolicyFromConfig(
  config: NetworkPolicyConfig,
  extraHosts: readonly string[] = [],
): NetworkPolicy {
  const policy = parseNetworkAllowlist([config.networkAllowlist, ...extraHosts].filter(Boolean).join(','));
  return withResolver(policy, config.dnsServers.length > 0 ? dnsServersResolver(config.dnsServers) : undefined);
}
