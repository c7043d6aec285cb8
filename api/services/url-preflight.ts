import { isIP } from 'node:net';
import { unbracketHost } from '../../lib/net/host';
import { checkAddress, type NetworkPolicy } from '../../lib/net/ssrf';
import { badRequest } from '../errors';

/**
 * Refuses at the door what the SSRF guard would refuse anyway without DNS: literal internal
 * addresses and localhost names. Names are resolved and checked again at every connection.
 */
export function preflightUrl(field: string, value: string, policy: NetworkPolicy): void {
  const { hostname } = new URL(value);
  const host = unbracketHost(hostname);
  const literal = isIP(host) ? host : /^localhost\.?$|\.localhost\.?$/i.test(host) ? '127.0.0.1' : null;
  if (literal === null) return;
  const verdict = checkAddress(literal, host, policy);
  if (!verdict.allowed) throw badRequest(`${field} points to an address this service will not connect to`, [{ path: `body/${field}`, message: verdict.reason }]);
}
