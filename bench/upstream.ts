/**
 * The bench's upstream: node:http, as cheap as a Node server gets, so the proxy in front of it is
 * what gets measured. `GET /api/items/<id>` answers a fixed JSON; `POST /charges` reads the body,
 * drops it and answers a fixed JSON. Under `/cacheable` (the sluice+cache target's service URL)
 * the item carries `Cache-Control: public, max-age=3600`, so a cache may keep it; other targets
 * never see that header. `GET /__bench/stats` (asked directly, never through a proxy)
 * tells how many connections it has accepted, to see whether a proxy reuses its upstream connections.
 * Usage: node bench/upstream.ts PORT (listens on 127.0.0.1).
 */
import { createServer } from 'node:http';
import { CHARGE_BODY, ITEM_BODY } from './fixtures.ts';

const port = Number(process.argv[2] ?? process.env.BENCH_PORT);
if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('usage: node bench/upstream.ts PORT\n');
  process.exit(2);
}

const item = Buffer.from(ITEM_BODY);
const charge = Buffer.from(CHARGE_BODY);
const json = (len: number) => ({ 'content-type': 'application/json', 'content-length': len });
let connections = 0;

const server = createServer((req, res) => {
  const url = req.url ?? '';
  if (req.method === 'GET' && url.startsWith('/api/items/')) {
    res.writeHead(200, json(item.length));
    res.end(item);
  } else if (req.method === 'GET' && url.startsWith('/cacheable/api/items/')) {
    res.writeHead(200, { ...json(item.length), 'cache-control': 'public, max-age=3600' });
    res.end(item);
  } else if (req.method === 'POST' && url === '/charges') {
    req.on('data', () => {});
    req.on('end', () => {
      res.writeHead(200, json(charge.length));
      res.end(charge);
    });
  } else if (url === '/__bench/stats') {
    const out = JSON.stringify({ connections });
    res.writeHead(200, json(Buffer.byteLength(out)));
    res.end(out);
  } else {
    req.resume();
    res.writeHead(404, json(2));
    res.end('{}');
  }
});
server.on('connection', () => {
  connections++;
});
// Never recycle keep-alive connections during a run.
server.keepAliveTimeout = 120_000;
server.maxRequestsPerSocket = 0;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
