/**
 * Who the client is, by address. Without trusted proxies it is the socket peer. Behind trusted
 * proxies it is the first hop, read from the right of X-Forwarded-For (or, without it, of
 * Forwarded's for= elements), that is not itself a trusted proxy: every hop to its right was
 * added by a proxy we trust, every hop to its left was written by the client and proves
 * nothing. (The leftmost entry is what a client can forge; the rightmost untrusted one it cannot.)
 */
import type { BlockList, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isIP } from 'node:net';
import { inCidrList } from '../config/cidr.ts';

/** An address without the IPv4-mapped prefix, and whether the list holds it. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

export function isTrusted(list: BlockList, address: string): boolean {
  return inCidrList(list, plainAddress(address));
}

/** The client address when the peer is a trusted proxy; `headers` are the ingress headers (lower-case). */
export function clientAddress(peer: string, trusted: BlockList, headers: Record<string, string>): string {
  const ip = plainAddress(peer);
  const hops = forwardedHops(headers);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i];
    if (isIP(hop) === 0) return ip; // a hop we cannot read: stop trusting the chain at the peer
    if (!isTrusted(trusted, hop)) return hop;
  }
  // Every hop is a trusted proxy: the leftmost one is as close to the client as we can see.
  return hops.length ? hops[0] : ip;
}

function forwardedHops(headers: Record<string, string>): string[] {
  const xff = headers['x-forwarded-for'];
  if (xff !== undefined) return xff.split(',').map((h) => plainAddress(h.trim()));
  const fwd = headers.forwarded;
  if (fwd === undefined) return [];
  const hops: string[] = [];
  for (const element of fwd.split(',')) {
    const m = /(?:^|;)\s*for="?\[?([^\]";,]+)\]?"?/i.exec(element);
    hops.push(m ? plainAddress(m[1].trim()) : '');
  }
  return hops;
}

/** The peer's plain address, for the line of a refused request; undefined once the socket is gone. */
export function peerOf(socket: Duplex | null | undefined): string | undefined {
  const address = (socket as Partial<Socket> | null | undefined)?.remoteAddress;
  return address === undefined ? undefined : plainAddress(address);
}
