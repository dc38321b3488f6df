/**
 * An upstream for the proxy-cache tests: each path answers with the caching headers its name
 * says, a body that counts the calls to that path (so a test sees whether the upstream was
 * reached), and counts of the 304s it sent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startUpstream, type Upstream } from './servers.ts';

export interface CacheUpstream extends Upstream {
  /** Calls per path (without the query). */
  calls(path: string): number;
  /** 304s sent. */
  notModified(): number;
  /** Paths answered 503 while set. */
  failing: Set<string>;
  /** Extra response headers per path. */
  headers: Map<string, Record<string, string>>;
}

const HEADERS: Record<string, Record<string, string>> = {
  '/fresh': { 'cache-control': 'max-age=60' },
  '/nostore': { 'cache-control': 'no-store' },
  '/private': { 'cache-control': 'private, max-age=60' },
  '/plain': {},
  '/vary': { 'cache-control': 'max-age=60', vary: 'Accept-Language' },
  '/varystar': { 'cache-control': 'max-age=60', vary: '*' },
  '/cookie': { 'cache-control': 'max-age=60', 'set-cookie': 'session=1' },
  '/public': { 'cache-control': 'public, max-age=60' },
  '/smaxage': { 'cache-control': 's-maxage=60' },
  // Stale on arrival (Age past max-age): the next request must revalidate, no sleeping.
  '/etag': { 'cache-control': 'max-age=10', age: '11', etag: '"v1"' },
  '/lm': { 'cache-control': 'max-age=10', age: '11', 'last-modified': 'Mon, 02 Nov 2026 10:00:00 GMT' },
  '/swr': { 'cache-control': 'max-age=10, stale-while-revalidate=60', age: '11' },
  '/sie': { 'cache-control': 'max-age=10, stale-if-error=60', age: '11' },
  '/stale': { 'cache-control': 'max-age=10', age: '11', etag: '"s1"' },
  '/slow': { 'cache-control': 'max-age=60' },
  '/slowprivate': { 'cache-control': 'private, max-age=60' },
  '/big': { 'cache-control': 'max-age=60' },
  '/utf8': { 'cache-control': 'max-age=60' },
  '/post': { 'cache-control': 'max-age=60', 'content-location': 'SELF' },
  '/post-nocl': { 'cache-control': 'max-age=60' },
};

export async function startCacheUpstream(): Promise<CacheUpstream> {
  const counts = new Map<string, number>();
  const failing = new Set<string>();
  const extra = new Map<string, Record<string, string>>();
  let notModified = 0;
  const respond = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0].replace(/^\/[a-z]+(?=\/)/, '');
    const n = (counts.get(path) ?? 0) + 1;
    counts.set(path, n);
    const headers = { ...(HEADERS[path] ?? {}), ...(extra.get(path) ?? {}) };
    if (failing.has(path)) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('down');
      return true;
    }
    if (headers['content-location'] === 'SELF') headers['content-location'] = req.url ?? '/';
    const validator = headers.etag ?? headers['last-modified'];
    const conditional = req.headers['if-none-match'] ?? req.headers['if-modified-since'];
    if (validator !== undefined && conditional === validator) {
      notModified++;
      const { 'content-type': _ct, ...rest } = headers;
      res.writeHead(304, rest);
      res.end();
      return true;
    }
    const body = JSON.stringify({
      path,
      call: n,
      url: req.url,
      consumer: req.headers['x-consumer'] ?? null,
      lang: req.headers['accept-language'] ?? null,
      ...(path === '/big' ? { pad: 'x'.repeat(4096) } : {}),
      ...(path === '/utf8' ? { text: 'ünïcødé € 😀 日本' } : {}),
    });
    const send = () => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...headers,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (path.startsWith('/slow')) setTimeout(send, 300);
    else send();
    return true;
  };
  const up = await startUpstream(respond);
  return Object.assign(up, {
    calls: (path: string) => counts.get(path) ?? 0,
    notModified: () => notModified,
    failing,
    headers: extra,
  });
}
