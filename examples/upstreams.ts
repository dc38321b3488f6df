/**
 * Sample upstreams for the demo and the README's curl lines: a charges service (the spec's
 * §2.2 payload) and users / orders / preferences services (each also answering
 * /users/<id>/orders and /users/<id>/preferences, the spec's aggregation calls). Plain node:http, no framework.
 * Each answer says which X-Gateway-Version it received, so the transformer can be seen.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

type Handler = (
  req: IncomingMessage,
  body: string,
) => { status: number; body: unknown; headers?: Record<string, string> };

function serve(port: number, host: string, handler: Handler): Server {
  return createServer(async (req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const out = handler(req, Buffer.concat(chunks).toString());
    const payload = JSON.stringify(out.body);
    res.writeHead(out.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload),
      'x-seen-gateway-version': String(req.headers['x-gateway-version'] ?? ''),
      ...out.headers,
    });
    res.end(payload);
  }).listen(port, host);
}

function charges(): Handler {
  const store = new Map<string, { id: string; amount: number; currency: string; status: string }>();
  return (req, body) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'POST' && path === '/charges') {
      let input: { amount?: unknown; currency?: unknown };
      try {
        input = JSON.parse(body);
      } catch {
        return { status: 400, body: { error: 'body must be JSON' } };
      }
      if (
        !Number.isInteger(input.amount) ||
        typeof input.currency !== 'string' ||
        !/^[A-Z]{3}$/.test(input.currency)
      )
        return { status: 400, body: { error: 'amount (integer) and currency (ISO 4217 code) are required' } };
      const id = `ch_${store.size + 1}`;
      const charge = { id, amount: input.amount as number, currency: input.currency, status: 'succeeded' };
      store.set(id, charge);
      return { status: 201, body: charge, headers: { location: `/charges/${id}` } };
    }
    const m = /^\/charges\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && m) {
      const charge = store.get(m[1]);
      return charge ? { status: 200, body: charge } : { status: 404, body: { error: 'no such charge' } };
    }
    if (req.method === 'GET' && path === '/charges') return { status: 200, body: [...store.values()] };
    return { status: 404, body: { error: 'not found' } };
  };
}

/** Answers GET /<resource>/<id> and, for the aggregation demo (spec §4.1), GET /users/<id>/<resource>. */
const byUser =
  (resource: string, make: (id: string) => unknown): Handler =>
  (req) => {
    const path = (req.url ?? '/').split('?')[0];
    const m =
      new RegExp(`^/${resource}/([^/]+)$`).exec(path) ??
      new RegExp(`^/users/([^/]+)/${resource}$`).exec(path);
    return m ? { status: 200, body: make(m[1]) } : { status: 404, body: { error: 'not found' } };
  };

export interface SampleUpstreams {
  ports: { charges: number; users: number; orders: number; preferences: number };
  close(): Promise<void>;
}

export async function startSampleUpstreams(base = 3001, host = '127.0.0.1'): Promise<SampleUpstreams> {
  const servers = [
    serve(base, host, charges()),
    serve(
      base + 1,
      host,
      byUser('users', (id) => ({ id, name: `User ${id}`, email: `user${id}@example.com` })),
    ),
    serve(
      base + 2,
      host,
      byUser('orders', (id) => [{ id: `o-${id}-1`, userId: id, total: 4200, currency: 'EUR' }]),
    ),
    serve(
      base + 3,
      host,
      byUser('preferences', (id) => ({ userId: id, language: 'en', newsletter: false })),
    ),
  ];
  await Promise.all(servers.map((s) => once(s, 'listening')));
  return {
    ports: { charges: base, users: base + 1, orders: base + 2, preferences: base + 3 },
    close: async () => {
      for (const s of servers) s.closeAllConnections();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}
