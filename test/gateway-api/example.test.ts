/**
 * examples/gateway-api/orders.yaml as a user applies it: a Gateway of Sluice's class and an
 * HTTPRoute whose POST rule applies an idempotency GatewayPlugin through an ExtensionRef. On kapi
 * with the upstream CRDs, two data planes and a controller (env.ts), and a back end behind the
 * route's Service: a POST retried with the same Idempotency-Key reaches the back end once and
 * gets the first answer again; another key is another order; GET goes through the other rule.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http1 } from '../helpers/gateway-api/clients.ts';
import { ok } from '../helpers/kubectl.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';
import { type Env, gatewayProgrammed, routeParent, startEnv } from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'gateway-api', 'orders.yaml');
let env: Env;
let orders: Upstream;
let created = 0;
// Idempotency-Keys are 32 to 64 characters (the plugin's default): UUIDs, as clients send.
const KEY_1 = '0b6f2c1e-3f55-4e0b-9a39-6d7f3a9c1a01';
const KEY_2 = '0b6f2c1e-3f55-4e0b-9a39-6d7f3a9c1a02';

beforeAll(async () => {
  if (!RUN) return;
  env = await startEnv();
  orders = await startUpstream((req, res) => {
    if (req.method !== 'POST') return false;
    const body = JSON.stringify({ order: ++created });
    res.writeHead(201, { 'content-type': 'application/json' }).end(body);
    return true;
  });
  const port = Number(new URL(orders.url).port);
  await ok(['apply', '-f', '-'], 'apiVersion: v1\nkind: Namespace\nmetadata: { name: shop }\n');
  await ok(
    ['apply', '-n', 'shop', '-f', '-'],
    `apiVersion: v1
kind: Service
metadata: { name: orders }
spec: { ports: [{ name: http, port: 8080, targetPort: ${port} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: orders-1, labels: { kubernetes.io/service-name: orders } }
addressType: IPv4
ports: [{ name: http, port: ${port} }]
endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }]
`,
  );
  await ok(['apply', '-f', '-'], readFileSync(EXAMPLE, 'utf8'));
}, 120_000);

afterAll(async () => {
  if (RUN) await ok(['delete', '--ignore-not-found', '-f', EXAMPLE]);
  await env?.stop();
  await orders?.close();
}, 60_000);

describe.skipIf(!RUN)('examples/gateway-api/orders.yaml', () => {
  it('a retried POST with the same Idempotency-Key reaches the back end once and gets the first answer again', async () => {
    await routeParent(env, 'shop', 'orders', 'shop');
    await gatewayProgrammed(env, 'shop', 'shop');
    const [url] = await env.gatewayUrls('shop', 'shop', 80);
    const post = (key: string) =>
      http1(`${url}/orders`, {
        method: 'POST',
        body: '{"item":"book"}',
        headers: {
          Host: 'shop.example.com',
          'content-type': 'application/json',
          authorization: 'Bearer client-a',
          'idempotency-key': key,
        },
      });
    const first = await post(KEY_1);
    expect(first.status, first.body).toBe(201);
    const again = await post(KEY_1);
    expect(again.status).toBe(201);
    expect(again.body).toBe(first.body);
    expect(orders.seen.filter((s) => s.method === 'POST')).toHaveLength(1);
    const other = await post(KEY_2);
    expect(JSON.parse(other.body)).toEqual({ order: 2 });
    expect(orders.seen.filter((s) => s.method === 'POST')).toHaveLength(2);
    // GET takes the other rule, without the plugin.
    const get = await http1(`${url}/orders/1`, { headers: { Host: 'shop.example.com' } });
    expect(get.status).toBe(200);
    expect(JSON.parse(get.body)).toMatchObject({ method: 'GET', url: '/orders/1' });
  }, 60_000);
});
