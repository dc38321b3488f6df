/**
 * A client certificate's chain, verified against a CA bundle of our own, never by node:tls:
 * the listeners ask clients for a certificate but trust none themselves (no `ca` on their
 * contexts), so the mtls-auth plugin verifies against each instance's bundle (routes with
 * different CAs share one listener) and a Gateway port against its spec.tls.frontend bundle
 * (client-validation.ts). From the leaf, each certificate must be issued (checkIssued) and signed (verify) by
 * an intermediate the client sent (a CA) or by a certificate of the bundle, which ends the
 * chain; every certificate on the way must be within its validity, and not listed by a CRL
 * that its issuer signed (a CRL past its nextUpdate fails closed). The leaf, when it names
 * extended key usages, must allow clientAuth.
 */
import { X509Certificate } from 'node:crypto';
import type { DetailedPeerCertificate } from 'node:tls';
import { type Crl, normalizeSerial } from '../config/crl.ts';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const MAX_DEPTH = 8;

export interface TrustStore {
  anchors: readonly X509Certificate[];
  crls: readonly Crl[];
}

/** The chain a TLS peer sent, leaf first (getPeerCertificate(true)); empty without a certificate. */
export function peerChain(peer: DetailedPeerCertificate): X509Certificate[] {
  const chain: X509Certificate[] = [];
  for (let c: DetailedPeerCertificate | undefined = peer; c?.raw && chain.length < 10; ) {
    chain.push(new X509Certificate(c.raw));
    const next: DetailedPeerCertificate | undefined = c.issuerCertificate;
    c = next === c ? undefined : next;
  }
  return chain;
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
