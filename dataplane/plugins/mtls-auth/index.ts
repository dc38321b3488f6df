/**
 * mtls-auth: the caller is the client certificate of the TLS connection. The listener asks for
 * one wherever a route of the snapshot carries this plugin, and never refuses a handshake for
 * it: this plugin answers instead, 401 without a certificate or with one its chain (tls/client-chain.ts:
 * the plugin's CA bundle and CRLs) does not verify, 403 when verified but no consumer lists its
 * identity. A route without the plugin on the same listener is served as before. The verdict
 * is kept per connection and per certificate (a resumed session presents the same leaf), until
 * the certificate expires and at most a minute; a new snapshot starts afresh (new CRLs).
 */
import type { X509Certificate } from 'node:crypto';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';
import { HEADER_VALUE } from '../../config/http-grammar.ts';
import type { ErrorCode } from '../../errors/codes.ts';
import { answerProblem } from '../../pipeline/answer.ts';
import type { Consumer, RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { readBundle } from '../../config/pem.ts';
import { chainProblem, peerChain, type TrustStore } from '../../tls/client-chain.ts';
import { parseCrl } from '../../config/crl.ts';
import { type MtlsAuthConfig, manifest } from './manifest.ts';

type Verdict =
  | { consumer: Consumer; xfcc: string; until: number }
  | { code: ErrorCode; detail: string; until: number };

const CACHE_MS = 60_000;
const CACHE_ENTRIES = 10_000;
export const XFCC = 'x-forwarded-client-cert';

const fromSecret = (what: string, s: { value?: string }): Buffer => {
  if (!s.value) throw new Error(`mtls-auth: the ${what} has no resolved value`);
  return Buffer.from(s.value, 'base64');
};

export default definePlugin(manifest, {
  create(config) {
    const anchors = readBundle(fromSecret('caBundle', config.caBundle).toString('utf8'));
    if (anchors.length === 0) throw new Error('mtls-auth: the caBundle holds no PEM certificate');
    const store: TrustStore = {
      anchors,
      crls: (config.crls ?? []).map((c, i) => {
        try {
          return parseCrl(fromSecret(`crls[${i}]`, c));
        } catch (err) {
          throw new Error(`mtls-auth: crls[${i}]: ${(err as Error).message}`);
        }
      }),
    };
    const identity = config.identity ?? 'subjectCN';
    const consumers =
      config.consumers && new Map(config.consumers.flatMap((c) => c.values.map((v) => [v, c.name])));
    const forward = config.forwardClientCert && (config.forwardClientCert.header ?? XFCC).toLowerCase();
    const byConnection = new WeakMap<object, Verdict>();
    const byCertificate = new Map<string, Verdict>();

    const judge = (peer: DetailedPeerCertificate): Verdict => {
      const now = Date.now();
      const chain = peerChain(peer);
      const leaf = chain[0];
      const until = Math.min(leaf.validToDate.getTime(), now + CACHE_MS);
      const problem = chainProblem(leaf, chain.slice(1), store, new Date(now));
      if (problem !== null) return { code: 'SLC_ERR_CLIENT_CERT_MISSING', detail: problem, until };
      const sha256 = leaf.fingerprint256.replaceAll(':', '').toLowerCase();
      const value = identityOf(leaf, identity, sha256);
      if (value === undefined)
        return { code: 'SLC_ERR_CLIENT_CERT_FORBIDDEN', detail: `the certificate has no ${identity}`, until };
      const name = consumers === undefined ? value : consumers.get(value);
      if (name === undefined)
        return {
          code: 'SLC_ERR_CLIENT_CERT_FORBIDDEN',
          detail: 'the certificate is not allowed here',
          until,
        };
      return {
        consumer: { id: name, credentialId: sha256, source: 'mtls', claims: { identity: value, sha256 } },
        xfcc: forward ? xfccOf(leaf, sha256) : '',
        until,
      };
    };

    const onRequest = (ctx: RequestContext) => {
      if (forward) delete ctx.headers[forward];
      const socket = ctx.req.socket as TLSSocket;
      let verdict = byConnection.get(socket);
      if (verdict === undefined || verdict.until <= Date.now()) {
        // The leaf alone first (an X509Certificate computes only the fingerprint asked for, where
        // getPeerCertificate() decodes every field): it finds a verdict; the chain only to judge anew.
        const leaf =
          typeof socket.getPeerX509Certificate === 'function' ? socket.getPeerX509Certificate() : undefined;
        if (leaf === undefined)
          return answerProblem(ctx, 'SLC_ERR_CLIENT_CERT_MISSING', {
            detail: 'a client certificate is required (over TLS)',
          });
        const fingerprint = leaf.fingerprint256;
        verdict = byCertificate.get(fingerprint);
        if (verdict === undefined || verdict.until <= Date.now()) {
          verdict = judge(socket.getPeerCertificate(true));
          if (byCertificate.size >= CACHE_ENTRIES) byCertificate.delete(byCertificate.keys().next().value!);
          byCertificate.set(fingerprint, verdict);
        }
        byConnection.set(socket, verdict);
      }
      if ('code' in verdict) return answerProblem(ctx, verdict.code, { detail: verdict.detail });
      ctx.consumer = verdict.consumer;
      if (forward && verdict.xfcc !== '') ctx.headers[forward] = verdict.xfcc;
    };
    const hooks = { onRequest };
    return { bind: () => hooks };
  },
});

/** Type:value pairs of a subjectAltName ("DNS:a, URI:b"; Node JSON-quotes values that hold ", "). */
function sans(x: X509Certificate): [string, string][] {
  const out: [string, string][] = [];
  for (const m of (x.subjectAltName ?? '').matchAll(/([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g))
    out.push([m[1], m[2].startsWith('"') ? (JSON.parse(m[2]) as string) : m[2]]);
  return out;
}

function identityOf(
  x: X509Certificate,
  identity: MtlsAuthConfig['identity'],
  sha256: string,
): string | undefined {
  if (identity === 'sha256') return sha256;
  if (identity === 'subjectCN' || identity === undefined) return /^CN=(.+)$/m.exec(x.subject)?.[1];
  const type = identity === 'sanURI' ? 'URI' : identity === 'sanDNS' ? 'DNS' : 'email';
  return sans(x).find(([t]) => t === type)?.[1];
}

/** Envoy's X-Forwarded-Client-Cert element: Hash, Subject (RFC 2253 order), URI and DNS SANs; unsafe values left out. */
function xfccOf(x: X509Certificate, sha256: string): string {
  const quote = (v: string) => `"${v.replace(/["\\]/g, '\\$&')}"`;
  const parts = [`Hash=${sha256}`, `Subject=${quote(x.subject.split('\n').reverse().join(','))}`];
  for (const [type, value] of sans(x))
    if (type === 'URI' || type === 'DNS')
      parts.push(`${type}=${/[,;="]/.test(value) ? quote(value) : value}`);
  return parts.filter((p) => HEADER_VALUE.test(p)).join(';');
}
