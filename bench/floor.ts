/**
 * The floor for a Node gateway: a bare node:http server + undici Pool.stream, no framework, no
 * routing, no plugin (the idea of shared/bench/peers/bare-node-undici.js, on the project's undici).
 * Every µs the data plane spends above this per request is its router, hooks and header work.
 * Env: BENCH_PORT (listens on 127.0.0.1), BENCH_UPSTREAM_URL.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';

const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
]);
const upstream = process.env.BENCH_UPSTREAM_URL;
const port = Number(process.env.BENCH_PORT);
if (!upstream || !Number.isInteger(port) || port <= 0) {
  process.stderr.write('floor: set BENCH_PORT and BENCH_UPSTREAM_URL\n');
  process.exit(2);
}

const pool = new Pool(upstream, { connections: 128, pipelining: 1 });

function pick(
  h: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const o: Record<string, string | string[]> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined && !HOP.has(k)) o[k] = v;
  }
  return o;
}

const server = createServer((req, res) => {
  pool.stream(
    {
      path: req.url ?? '/',
      method: req.method as 'GET',
      headers: pick(req.headers),
      body: req.method === 'GET' || req.method === 'HEAD' ? null : req,
    },
    ({ statusCode, headers }) => {
      res.writeHead(statusCode, pick(headers));
      return res;
    },
    (err) => {
      if (err && !res.headersSent) {
        res.statusCode = 502;
        res.end();
      } else if (err) res.destroy();
    },
  );
});
server.keepAliveTimeout = 120_000;
server.listen(port, '127.0.0.1');
const stop = () => {
  server.close();
  server.closeAllConnections();
  pool.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
