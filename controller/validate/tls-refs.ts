/**
 * ResolvedRefs for a GatewayRoute's spec.tls: each entry names a Secret of type
 * kubernetes.io/tls in the route's namespace whose tls.crt (PEM chain, leaf first) and tls.key
 * parse, fit each other, and cover every host listed. What resolves becomes the route's
 * certificates in the model (hosts lower-case); anything else is a diagnostic naming the field.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { RouteTls } from '../api/gateway-route.ts';
import type { Secret } from '../api/index.ts';
import { keyOf, type ObjectRef } from '../source/resource-set.ts';
import type { Diagnostic } from './diagnostic.ts';
import { secretValue } from './secret-refs.ts';

export const TLS_SECRET_TYPE = 'kubernetes.io/tls';

export interface ModelCertificate {
  /** Index in spec.tls. */
  index: number;
  secretName: string;
  /** Lower-case, as written (a set: compile sorts). */
  hosts: string[];
  cert: string;
  key: string;
}

export function resolveTlsRefs(
  ref: ObjectRef,
  tls: readonly RouteTls[] | undefined,
  secrets: ReadonlyMap<string, Secret>,
): { certificates: ModelCertificate[]; diagnostics: Diagnostic[] } {
  const certificates: ModelCertificate[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const [index, entry] of (tls ?? []).entries()) {
    const at = `spec.tls[${index}]`;
    const name = `${ref.namespace}/${entry.secretName}`;
    const problem = (field: string, reason: Diagnostic['reason'], message: string): void => {
      diagnostics.push({ object: ref, field, condition: 'ResolvedRefs', reason, message });
    };
    const secret = secrets.get(keyOf(ref.namespace, entry.secretName));
    if (secret === undefined) {
      problem(`${at}.secretName`, 'SecretNotFound', `Secret ${name} not found`);
      continue;
    }
    if (secret.type !== TLS_SECRET_TYPE) {
      problem(
        `${at}.secretName`,
        'InvalidCertificateRef',
        `Secret ${name} has type ${secret.type ?? 'Opaque'}, not ${TLS_SECRET_TYPE}`,
      );
      continue;
    }
    const pem = (key: string): string | undefined => {
      const value = secretValue(secret, key);
      if (typeof value !== 'string') return value.toString('utf8');
      problem(`${at}.secretName`, 'InvalidCertificateRef', value.replace('%s', name));
      return undefined;
    };
    const cert = pem('tls.crt');
    const key = pem('tls.key');
    if (cert === undefined || key === undefined) continue;
    const parsed = parsePair(cert, key);
    if (typeof parsed === 'string') {
      problem(`${at}.secretName`, 'InvalidCertificateRef', `Secret ${name}: ${parsed}`);
      continue;
    }
    const hosts = entry.hosts.map((h) => h.toLowerCase());
    let covered = true;
    hosts.forEach((host, j) => {
      if (covers(parsed, host)) return;
      covered = false;
      problem(
        `${at}.hosts[${j}]`,
        'InvalidCertificateRef',
        `the certificate of Secret ${name} does not cover ${host} (it names ${parsed.subjectAltName ?? parsed.subject})`,
      );
    });
    if (covered) certificates.push({ index, secretName: entry.secretName, hosts, cert, key });
  }
  return { certificates, diagnostics };
}

/** The leaf certificate, or why the pair cannot be served. */
function parsePair(cert: string, key: string): X509Certificate | string {
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (err) {
    return `tls.crt is not a PEM certificate (${(err as Error).message})`;
  }
  try {
    if (!leaf.checkPrivateKey(createPrivateKey(key)))
      return 'tls.key is not the key of the certificate in tls.crt';
  } catch (err) {
    return `tls.key is not a PEM private key (${(err as Error).message})`;
  }
  return leaf;
}

/** Whether the certificate is valid for a host: a name it matches, or for "*.suffix" its own "*.suffix". */
function covers(leaf: X509Certificate, host: string): boolean {
  if (!host.startsWith('*.')) return leaf.checkHost(host) !== undefined;
  const names = (leaf.subjectAltName ?? '').split(', ');
  return names.some((n) => n.toLowerCase() === `dns:${host}`);
}
