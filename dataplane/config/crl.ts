/**
 * Certificate revocation lists (RFC 5280 §5), read as far as the mtls-auth plugin needs: the
 * revoked serial numbers, nextUpdate, and the signed part with its signature, so a CRL counts
 * only for the CA whose key verifies it. Node reads certificates (X509Certificate) but not
 * CRLs, and no ASN.1 library is installed: this is the small DER walk RFC 5280 §5.1 lays out.
 * Anything it cannot read throws. The mtls-auth manifest's check reads each CRL with it (at
 * the controller and the data plane's door), hence its place in the contract (config/).
 */
import { type KeyObject, verify } from 'node:crypto';

export interface Crl {
  /** Serial numbers, upper-case hex without leading zeros. */
  revoked: Set<string>;
  nextUpdate: Date | null;
  /** Whether `issuerKey` signed this CRL. */
  signedBy(issuerKey: KeyObject): boolean;
}

interface Tlv {
  tag: number;
  /** The whole element (tag, length, content). */
  start: number;
  /** Its content. */
  from: number;
  end: number;
}

function tlv(b: Buffer, at: number): Tlv {
  const tag = b[at];
  let len = b[at + 1];
  let from = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new Error('CRL: unsupported DER length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[from + i];
    from += n;
  }
  const end = from + len;
  if (tag === undefined || end > b.length) throw new Error('CRL: truncated DER');
  return { tag, start: at, from, end };
}

function children(b: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.from; at < parent.end; ) {
    const t = tlv(b, at);
    out.push(t);
    at = t.end;
  }
  return out;
}

/** Signature algorithm OIDs (DER content, hex) → the digest crypto.verify takes (null: Ed25519). */
const DIGESTS: Record<string, string | null> = {
  '2a864886f70d01010b': 'sha256',
  '2a864886f70d01010c': 'sha384',
  '2a864886f70d01010d': 'sha512',
  '2a8648ce3d040302': 'sha256',
  '2a8648ce3d040303': 'sha384',
  '2a8648ce3d040304': 'sha512',
  '2b6570': null,
};

const SEQUENCE = 0x30;
const INTEGER = 0x02;
const UTC_TIME = 0x17;
const GENERALIZED_TIME = 0x18;

export const normalizeSerial = (hex: string): string => hex.toUpperCase().replace(/^0+(?=.)/, '');

function time(b: Buffer, t: Tlv): Date {
  const s = b.toString('latin1', t.from, t.end);
  const m = (
    t.tag === UTC_TIME
      ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/
      : /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/
  ).exec(s);
  if (!m) throw new Error('CRL: unreadable time');
  let year = Number(m[1]);
  if (t.tag === UTC_TIME) year += year < 50 ? 2000 : 1900;
  return new Date(Date.UTC(year, Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
}

/** A CRL in PEM ("X509 CRL") or DER. */
export function parseCrl(input: Buffer): Crl {
  const text = input.toString('latin1');
  const pem = /-----BEGIN X509 CRL-----([^-]+)-----END X509 CRL-----/.exec(text);
  const der = pem ? Buffer.from(pem[1].replace(/\s+/g, ''), 'base64') : input;
  const outer = tlv(der, 0);
  const [tbs, alg, sig] = outer.tag === SEQUENCE ? children(der, outer) : [];
  if (tbs?.tag !== SEQUENCE || alg?.tag !== SEQUENCE || sig?.tag !== 0x03)
    throw new Error('CRL: not a CertificateList');
  const oid = children(der, alg)[0];
  const digest = DIGESTS[der.toString('hex', oid.from, oid.end)];
  if (digest === undefined) throw new Error('CRL: unsupported signature algorithm');
  const fields = children(der, tbs);
  let i = fields[0]?.tag === INTEGER ? 1 : 0; // version
  i += 2; // signature, issuer
  if (fields[i] === undefined || (fields[i].tag !== UTC_TIME && fields[i].tag !== GENERALIZED_TIME))
    throw new Error('CRL: no thisUpdate');
  i++;
  let nextUpdate: Date | null = null;
  if (fields[i] !== undefined && (fields[i].tag === UTC_TIME || fields[i].tag === GENERALIZED_TIME))
    nextUpdate = time(der, fields[i++]);
  const revoked = new Set<string>();
  if (fields[i]?.tag === SEQUENCE)
    for (const entry of children(der, fields[i])) {
      const serial = children(der, entry)[0];
      if (serial?.tag !== INTEGER) throw new Error('CRL: an entry without a serial number');
      revoked.add(normalizeSerial(der.toString('hex', serial.from, serial.end)));
    }
  const signed = der.subarray(tbs.start, tbs.end);
  const signature = der.subarray(sig.from + 1, sig.end); // after the unused-bits byte
  return {
    revoked,
    nextUpdate,
    signedBy: (key) => {
      try {
        return verify(digest, signed, key, signature);
      } catch {
        return false;
      }
    },
  };
}
