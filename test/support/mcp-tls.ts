import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A throw-away certificate authority and a server certificate it signed for 127.0.0.1/localhost,
 * generated with `openssl` at test time (no key is ever committed). Clients trust the CA either
 * through NODE_EXTRA_CA_CERTS (read by Node at start, so in a child process) or explicitly.
 */
export interface TestCertificates {
  /** PEM of the CA certificate, and a file holding it (for NODE_EXTRA_CA_CERTS). */
  caPem: string;
  caFile: string;
  /** PEM key and certificate of the server (SAN IP:127.0.0.1, DNS:localhost). */
  key: string;
  cert: string;
  cleanup: () => void;
}

export function createTestCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tools-tls-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) =>
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Platform Test Private CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(
    file('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  );
  return {
    caPem: readFileSync(file('ca.pem'), 'utf8'),
    caFile: file('ca.pem'),
    key: readFileSync(file('server.key'), 'utf8'),
    cert: readFileSync(file('server.pem'), 'utf8'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A self-signed server certificate (its own issuer) for `subjectAltName` (e.g. `DNS:localhost,IP:127.0.0.1`),
 * written as `<name>.key` / `<name>.pem` into `dir`; trusted only by a client told to trust it.
 */
export function createSelfSignedCertificate(
  dir: string,
  name: string,
  subjectAltName: string,
): { key: Buffer; cert: Buffer; certPath: string } {
  const keyPath = path.join(dir, `${name}.key`);
  const certPath = path.join(dir, `${name}.pem`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-addext',
      `subjectAltName=${subjectAltName}`,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyPath), cert: readFileSync(certPath), certPath };
}
