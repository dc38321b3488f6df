/**
 * A client certificate's chain, verified in the plugin against the plugin's own CA bundle:
 * the listener asks every client for a certificate but trusts none itself (no `ca` on its
 * contexts), so routes with different CAs share one listener and each plugin decides for its
 * routes. From the leaf, each certificate must be issued (checkIssued) and signed (verify) by
 * an intermediate the client sent (a CA) or by a certificate of the bundle, which ends the
 * chain; every certificate on the way must be within its validity, and not listed by a CRL
 * that its issuer signed (a CRL past its nextUpdate fails closed). The leaf, when it names
 * extended key usages, must allow clientAuth.
 */
import { X509Certificate } from 'node:crypto';
import { type Crl, normalizeSerial } from './crl.ts';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const MAX_DEPTH = 8;

export interface TrustStore {
  anchors: readonly X509Certificate[];
  crls: readonly Crl[];
}

/** Every certificate of a PEM bundle. */
export function readBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

/** Null when the chain is good, else why not (words, no certificate data). */
export function chainProblem(
  leaf: X509Certificate,
  sent: readonly X509Certificate[],
  store: TrustStore,
  now = new Date(),
): string | null {
  const usages = leaf.keyUsage;
  if (usages !== undefined && !usages.includes(CLIENT_AUTH))
    return 'the certificate is not for client authentication';
  let current = leaf;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (current.validFromDate > now) return 'the certificate is not yet valid';
    if (current.validToDate < now) return 'the certificate has expired';
    const anchor = store.anchors.find((a) => issues(a, current));
    const issuer = anchor ?? sent.find((c) => c.ca && c !== current && issues(c, current));
    if (issuer === undefined) return 'the certificate is not issued by a trusted CA';
    const revoked = revocation(current, issuer, store.crls, now);
    if (revoked !== null) return revoked;
    if (anchor !== undefined) return anchor.validToDate < now ? 'the CA certificate has expired' : null;
    current = issuer;
  }
  return 'the certificate chain is too long';
}

const issues = (issuer: X509Certificate, cert: X509Certificate): boolean =>
  cert.checkIssued(issuer) && cert.verify(issuer.publicKey);

function revocation(
  cert: X509Certificate,
  issuer: X509Certificate,
  crls: readonly Crl[],
  now: Date,
): string | null {
  for (const crl of crls) {
    if (!crl.signedBy(issuer.publicKey)) continue;
    if (crl.nextUpdate !== null && crl.nextUpdate < now) return "the issuer's CRL has expired";
    if (crl.revoked.has(normalizeSerial(cert.serialNumber))) return 'the certificate is revoked';
  }
  return null;
}
