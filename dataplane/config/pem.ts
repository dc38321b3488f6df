/**
 * PEM certificate bundles (CA bundles of client certificate validation): read by the contract's
 * validation of a table, by the mtls-auth plugin and by Gateway HTTPS ports alike.
 */
import { X509Certificate } from 'node:crypto';

/** Every certificate of a PEM bundle (throws when one does not parse). */
export function readBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

/** Whether a PEM bundle holds certificates, all of which parse. */
export function usableBundle(pem: string): boolean {
  try {
    return readBundle(pem).length > 0;
  } catch {
    return false;
  }
}
