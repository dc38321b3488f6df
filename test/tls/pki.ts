/**
 * Test certificates made by the openssl CLI in a temp dir: one CA and leaves signed by it (SAN
 * DNS names), as PEM strings and files. Each call makes a fresh CA, so two runs never trust each other.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Leaf {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

export interface Pki {
  dir: string;
  ca: string;
  caFile: string;
  /** A leaf for these DNS names (the first is the CN), signed by the CA. */
  leaf(name: string, dnsNames: string[]): Leaf;
  remove(): void;
}

export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-pki-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  makeCaFiles(ssl, 'Sluice Test CA');
  return {
    dir,
    ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    caFile: join(dir, 'ca.crt'),
    leaf(name, dnsNames) {
      const base = name.replace(/[^a-z0-9.-]/gi, '_');
      ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${base}.key`);
      ssl('req', '-new', '-key', `${base}.key`, '-subj', `/CN=${dnsNames[0]}`, '-out', `${base}.csr`);
      writeFileSync(
        join(dir, `${base}.ext`),
        `subjectAltName=${dnsNames.map((d) => `DNS:${d}`).join(',')}\nextendedKeyUsage=serverAuth\n`,
      );
      ssl(
        'x509',
        '-req',
        '-in',
        `${base}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '2',
        '-sha256',
        '-extfile',
        `${base}.ext`,
        '-out',
        `${base}.crt`,
      );
      const certFile = join(dir, `${base}.crt`);
      const keyFile = join(dir, `${base}.key`);
      return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A fresh CA in the folder `ssl` runs in: an EC P-256 key (ca.key) and its certificate (ca.crt) named `cn`. */
export function makeCaFiles(ssl: (...args: string[]) => unknown, cn: string): void {
  ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key');
  ssl(
    'req',
    '-x509',
    '-new',
    '-key',
    'ca.key',
    '-sha256',
    '-days',
    '2',
    '-subj',
    `/CN=${cn}`,
    '-out',
    'ca.crt',
  );
}
