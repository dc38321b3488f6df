/** What the TLS tests share: snapshots with certificates, a handshake probe, and curl against a named host. */
import { execFile } from 'node:child_process';
import { connect, type PeerCertificate } from 'node:tls';
import { promisify } from 'node:util';
import { tableHash } from '../../dataplane/config/wire.ts';
import type {
  Certificate,
  Route,
  RouteTable,
  Snapshot,
  Upstream,
} from '../../dataplane/config/route-table.ts';
import type { Leaf } from './pki.ts';

export function certificate(id: string, hosts: string[], leaf: Leaf): Certificate {
  return { id: `certificate/test/${id}`, hosts, cert: leaf.cert, key: leaf.key };
}

export function tlsSnapshot(routes: Route[], upstreams: Upstream[], certificates: Certificate[]): Snapshot {
  const table: RouteTable = { version: 1, routes, upstreams, certificates };
  return { hash: tableHash(table), table };
}

/** One handshake: the certificate the server presented for this SNI (none: an IP, no SNI sent) and the ALPN result. */
export function handshake(
  port: number,
  servername: string | null,
  ca: string,
): Promise<{ cert: PeerCertificate; alpn: string | false; authorized: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      ...(servername === null ? {} : { servername }),
      ca,
      ALPNProtocols: ['h2', 'http/1.1'],
      rejectUnauthorized: false,
    });
    socket.once('secureConnect', () => {
      resolve({
        cert: socket.getPeerCertificate(),
        alpn: socket.alpnProtocol ?? false,
        authorized: socket.authorized,
      });
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

const run = promisify(execFile);

export interface CurlResult {
  version: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** curl to https://host:port/path resolved to 127.0.0.1, trusting `caFile`; `http` = '--http2' or '--http1.1'. */
export async function curl(
  http: '--http2' | '--http1.1',
  host: string,
  port: number,
  path: string,
  caFile: string,
  extra: string[] = [],
  scheme: 'https' | 'http' = 'https',
): Promise<CurlResult> {
  const { stdout } = await run('curl', [
    '-sS',
    http,
    '--cacert',
    caFile,
    '--resolve',
    `${host}:${port}:127.0.0.1`,
    '-D',
    '-',
    '-w',
    '\n%{http_version}',
    ...extra,
    `${scheme}://${host}:${port}${path}`,
  ]);
  const split = stdout.indexOf('\r\n\r\n');
  const head = stdout.slice(0, split).split('\r\n');
  const rest = stdout.slice(split + 4);
  const nl = rest.lastIndexOf('\n');
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const c = line.indexOf(':');
    headers[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim();
  }
  return {
    version: rest.slice(nl + 1),
    status: Number(head[0].split(' ')[1]),
    headers,
    body: rest.slice(0, nl),
  };
}
