/**
 * A client-certificate CA made by the openssl CLI (`openssl ca`, so it keeps the index a CRL is
 * made from): leaves for clientAuth with a CN and SANs, an expired leaf (dates in the past), a
 * revoked leaf, and the CA's CRL. Each call makes a fresh CA, so two never trust each other.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCaFiles } from '../tls/pki.ts';

export interface ClientLeaf {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

export interface ClientPki {
  ca: string;
  leaf(cn: string, sans?: string[], dates?: { start: string; end: string }): ClientLeaf;
  revoke(leaf: ClientLeaf): void;
  /** The CA's current CRL (PEM). */
  crl(): string;
  remove(): void;
}

const CONFIG = `
[ca]
default_ca = ca
[ca]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
default_days = 2
default_crl_days = 2
policy = any
unique_subject = no
copy_extensions = none
[any]
commonName = supplied
[client]
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
`;

export function makeClientPki(name = 'Sluice Client CA'): ClientPki {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-client-pki-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  writeFileSync(join(dir, 'ca.cnf'), CONFIG);
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '1000\n');
  makeCaFiles(ssl, name);
  let n = 0;
  return {
    ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    leaf(cn, sans = [], dates) {
      const base = `leaf${n++}`;
      ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${base}.key`);
      ssl('req', '-new', '-key', `${base}.key`, '-subj', `/CN=${cn}`, '-out', `${base}.csr`);
      writeFileSync(
        join(dir, `${base}.ext`),
        `[client]\nbasicConstraints = CA:FALSE\nextendedKeyUsage = clientAuth\n${sans.length ? `subjectAltName = ${sans.join(',')}\n` : ''}`,
      );
      ssl(
        'ca',
        '-batch',
        '-config',
        'ca.cnf',
        '-cert',
        'ca.crt',
        '-keyfile',
        'ca.key',
        '-extfile',
        `${base}.ext`,
        '-extensions',
        'client',
        '-notext',
        '-in',
        `${base}.csr`,
        '-out',
        `${base}.crt`,
        ...(dates ? ['-startdate', dates.start, '-enddate', dates.end] : []),
      );
      const certFile = join(dir, `${base}.crt`);
      const keyFile = join(dir, `${base}.key`);
      return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
    },
    revoke(leaf) {
      ssl('ca', '-config', 'ca.cnf', '-cert', 'ca.crt', '-keyfile', 'ca.key', '-revoke', leaf.certFile);
    },
    crl() {
      ssl('ca', '-config', 'ca.cnf', '-cert', 'ca.crt', '-keyfile', 'ca.key', '-gencrl', '-out', 'ca.crl');
      return readFileSync(join(dir, 'ca.crl'), 'utf8');
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** An mtls-auth plugin instance trusting `ca`, as the controller resolves it (the bundle's `value`). */
export const mtlsPlugin = (name: string, ca: ClientPki, extra: Record<string, unknown> = {}) => ({
  id: `plugin/test/${name}`,
  name: 'mtls-auth' as const,
  config: {
    caBundle: { secretKeyRef: { name: 'ca', key: 'pem' }, value: Buffer.from(ca.ca).toString('base64') },
    ...extra,
  },
  source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
});
