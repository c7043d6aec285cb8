import { discoverTools } from '../../../lib/tools/discovery';
import { ToolSourceError } from '../../../lib/tools/errors';
import { parseDnsServers } from '../../../lib/net/dns';
import { networkPolicyFromConfig } from '../../../lib/net/policy';

/**
 * Runs one discovery in a process of its own and prints `{ok, result}` or `{ok: false, code}` as JSON:
 * NODE_EXTRA_CA_CERTS is read by Node only at start, so the HTTPS tests use a child process to prove
 * that the tool runtime trusts a private CA given that way. Argument: the ToolSourceSpec as JSON;
 * EXTRA_CA (optional): a PEM passed to the runtime explicitly as well.
 */
async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]);
  // Names resolve only through DNS_SERVERS; unset, through the loopback discard port, where no server answers.
  const policy = networkPolicyFromConfig({
    networkAllowlist: process.env.NETWORK_ALLOWLIST ?? '127.0.0.1,localhost',
    dnsServers: parseDnsServers(process.env.DNS_SERVERS ?? '127.0.0.1:9'),
  });
  try {
    const result = await discoverTools(spec, { policy, extraCa: process.env.EXTRA_CA || undefined });
    process.stdout.write(JSON.stringify({ ok: true, result }));
  } catch (error) {
    if (!(error instanceof ToolSourceError)) throw error;
    process.stdout.write(JSON.stringify({ ok: false, code: error.code, message: error.message }));
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
