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
    const parsed = tlsPair(secret, name);
    if (typeof parsed === 'string') {
      problem(`${at}.secretName`, 'InvalidCertificateRef', parsed);
      continue;
    }
    const { cert, key, leaf } = parsed;
    const hosts = entry.hosts.map((h) => h.toLowerCase());
    let covered = true;
    hosts.forEach((host, j) => {
      if (covers(leaf, host)) return;
      covered = false;
      problem(
        `${at}.hosts[${j}]`,
        'InvalidCertificateRef',
        `the certificate of Secret ${name} does not cover ${host} (it names ${leaf.subjectAltName ?? leaf.subject})`,
      );
    });
    if (covered) certificates.push({ index, secretName: entry.secretName, hosts, cert, key });
  }
  return { certificates, diagnostics };
}

/**
 * A kubernetes.io/tls Secret's PEM pair and its leaf, or why it cannot be served (the message
 * names the Secret as `name`). Shared with Gateway listeners' certificateRefs.
 */
export function tlsPair(
  secret: Secret,
  name: string,
): { cert: string; key: string; leaf: X509Certificate } | string {
  if (secret.type !== TLS_SECRET_TYPE)
    return `Secret ${name} has type ${secret.type ?? 'Opaque'}, not ${TLS_SECRET_TYPE}`;
  const cert = secretValue(secret, 'tls.crt');
  if (typeof cert === 'string') return cert.replace('%s', name);
  const key = secretValue(secret, 'tls.key');
  if (typeof key === 'string') return key.replace('%s', name);
  const leaf = parsePair(cert.toString('utf8'), key.toString('utf8'));
  if (typeof leaf === 'string') return `Secret ${name}: ${leaf}`;
  return { cert: cert.toString('utf8'), key: key.toString('utf8'), leaf };
}

/** The DNS names a certificate is valid for (subjectAltName), lower-case. */
export function dnsNames(leaf: X509Certificate): string[] {
  return (leaf.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.toLowerCase().startsWith('dns:'))
    .map((n) => n.slice(4).toLowerCase());
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
