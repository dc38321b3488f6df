/**
 * One @grpc/grpc-js Client (one channel, its HTTP/2 connection reused by every call) per
 * upstream address, shared by every route and snapshot that calls it: a snapshot acquires the
 * addresses it binds and releases them when it is retired (after the runtime's grace), and the
 * channel closes when no snapshot holds it. An https:// upstream gets a TLS channel (the
 * process's trusted CAs, as the proxy's https upstreams), http:// a plaintext one.
 */
import { getCACertificates } from 'node:tls';
import { ChannelCredentials, Client } from '@grpc/grpc-js';

interface Held {
  client: Client;
  refs: number;
}

const held = new Map<string, Held>();

/**
 * Optimization: grpc-js's own retries (the gateway configures none, yet the retrying layer
 * buffers every message) and channelz (per-call counters nobody reads) are off.
 */
const CHANNEL_OPTIONS = { 'grpc.enable_retries': 0, 'grpc.enable_channelz': 0 };

/** The channel's key, "<scheme>://host:port" (the port always given), from an upstream url. */
export function channelKey(url: string): string {
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.protocol}//${u.hostname}:${port}`;
}

export function acquire(key: string): Client {
  let h = held.get(key);
  if (h === undefined) {
    const tls = key.startsWith('https:');
    const creds = tls ? ChannelCredentials.createSsl(trusted()) : ChannelCredentials.createInsecure();
    // The key's authority keeps its port (a URL's host drops a scheme's default one).
    h = { client: new Client(key.slice(key.indexOf('//') + 2), creds, CHANNEL_OPTIONS), refs: 0 };
    held.set(key, h);
  }
  h.refs++;
  return h.client;
}

let roots: Buffer | null = null;

/**
 * The CAs Node's own https client trusts (bundled, NODE_EXTRA_CA_CERTS, the system's under
 * --use-system-ca): grpc-js's default secure context has the bundled ones only.
 */
function trusted(): Buffer {
  roots ??= Buffer.from(getCACertificates('default').join('\n'));
  return roots;
}

export function release(key: string): void {
  const h = held.get(key);
  if (h === undefined || --h.refs > 0) return;
  held.delete(key);
  h.client.close();
}

/** Channels open now (tests: none left once every snapshot is retired). */
export const openChannels = (): number => held.size;
