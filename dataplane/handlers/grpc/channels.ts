/**
 * The @grpc/grpc-js Clients (each one channel, its HTTP/2 connection reused by every call) the
 * grpc handler calls through. An https:// upstream gets TLS channels (the process's trusted CAs,
 * as the proxy's https upstreams), http:// plaintext ones.
 *
 * - An upstream url's address: one channel per address, shared by every route and snapshot
 *   that calls it: a snapshot acquires the addresses it binds and releases them when it is
 *   retired (after the runtime's grace), and the channel closes when no snapshot holds it.
 * - An endpoint of an upstream with endpoints (upstream/endpoint.ts): one channel per endpoint,
 *   made on its first call (endpointClient).
 */
import { getCACertificates } from 'node:tls';
import { ChannelCredentials, type ChannelOptions, Client } from '@grpc/grpc-js';
import type { Endpoint } from '../../upstream/pools.ts';

interface Held {
  client: Client;
  refs: number;
}

const held = new Map<string, Held>();

/**
 * Optimization: grpc-js's own retries (the gateway configures none, yet the retrying layer
 * buffers every message) and channelz (per-call counters nobody reads) are off.
 */
const CHANNEL_OPTIONS: ChannelOptions = { 'grpc.enable_retries': 0, 'grpc.enable_channelz': 0 };

/** The channel's key, "<scheme>://host:port" (the port always given), from an upstream url. */
export function channelKey(url: string): string {
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.protocol}//${u.hostname}:${port}`;
}

export function acquire(key: string): Client {
  let h = held.get(key);
  if (h === undefined) {
    h = { client: new Client(authorityOf(key), credentials(key), CHANNEL_OPTIONS), refs: 0 };
    held.set(key, h);
  }
  h.refs++;
  return h.client;
}

/** The key's authority ("host:port"): it keeps its port (a URL's host drops a scheme's default one). */
const authorityOf = (key: string): string => key.slice(key.indexOf('//') + 2);

const credentials = (key: string): ChannelCredentials =>
  key.startsWith('https:') ? ChannelCredentials.createSsl(trusted()) : ChannelCredentials.createInsecure();

const byEndpoint = new WeakMap<Endpoint, Client>();
let endpointChannels = 0;

/**
 * The channel to endpoint `e` of the upstream whose channel key (channelKey) is `key`. It dials
 * the endpoint's address, and says the url's authority as :authority and, over TLS, the url's
 * host as the server name and the name the certificate must carry, as the proxy's endpoint
 * pools do. Kept while the upstream's runtime keeps the endpoint, so a snapshot that keeps it
 * keeps the channel warm; closed when the runtime drops it (pools.ts: once the snapshot that
 * leaves it out runs, or when the upstream is retired). grpc-js's close lets calls already on
 * the channel finish, and no new call picks an endpoint that is out of the list.
 */
export function endpointClient(e: Endpoint, key: string): Client {
  const made = byEndpoint.get(e);
  if (made !== undefined) return made;
  const options: ChannelOptions = { ...CHANNEL_OPTIONS, 'grpc.default_authority': authorityOf(key) };
  if (key.startsWith('https:'))
    options['grpc.ssl_target_name_override'] = new URL(key).hostname.replace(/^\[(.*)\]$/, '$1');
  // e.key is "10.0.0.7:8080" or "[fd00::7]:8080": grpc-js's ip resolvers take it as it is.
  const c = new Client(`${e.key.startsWith('[') ? 'ipv6' : 'ipv4'}:${e.key}`, credentials(key), options);
  byEndpoint.set(e, c);
  endpointChannels++;
  e.onClose(() => {
    endpointChannels--;
    c.close();
  });
  return c;
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
export const openChannels = (): number => held.size + endpointChannels;
