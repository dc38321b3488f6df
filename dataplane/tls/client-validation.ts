/**
 * Client certificate validation on a Gateway HTTPS port (table listeners' clientValidation,
 * from the Gateway's spec.tls.frontend): the port asks every client for a certificate, and once
 * the handshake is done the chain is verified against the port's CA bundle the way mtls-auth
 * verifies it (client-chain.ts). AllowValidOnly: a connection without a certificate
 * that verifies is closed before a request is read; AllowInsecureFallback: served anyway (the
 * back end decides). After the handshake, not in it: Node's verification would need the CA on
 * every SNI context and could not tell the client why; closed at once, the client's request
 * fails as it would on a refused handshake (under TLS 1.3 a client learns of a refused
 * certificate only when it reads, too).
 */
import type { TLSSocket } from 'node:tls';
import type { ClientValidation } from '../config/route-table.ts';
import { readBundle } from '../config/pem.ts';
import { chainProblem, peerChain, type TrustStore } from './client-chain.ts';

export interface PortClientValidation {
  store: TrustStore;
  mode: ClientValidation['mode'];
}

/** The parsed form of a port's validation (the table's validation made sure the bundle parses). */
export function portClientValidation(v: ClientValidation | undefined): PortClientValidation | null {
  return v === undefined ? null : { store: { anchors: readBundle(v.caBundle), crls: [] }, mode: v.mode };
}

/** Null when the connection may be served, else why not (for the debug log). */
export function refusal(socket: TLSSocket, v: PortClientValidation | null): string | null {
  if (v === null || v.mode === 'AllowInsecureFallback') return null;
  const chain = peerChain(socket.getPeerCertificate(true));
  if (chain.length === 0) return 'no client certificate';
  return chainProblem(chain[0], chain.slice(1), v.store);
}
