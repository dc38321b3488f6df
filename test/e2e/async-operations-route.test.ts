/**
 * Issue 22 item 9, end to end: a GatewayRoute whose POST route carries an async idempotency
 * plugin and key-auth, and no route on /operations. The controller's build adds the lookup
 * route (compile/plugin-paths.ts); a data plane runs the snapshot against a real upstream. The
 * 202's Location answers the caller who sent the POST (202 while it runs, then the stored
 * response), and nobody else: another consumer finds nothing, no key gets 401.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { parseFiles } from '../../controller/source/file.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';

const KEYS = { alice: 'alice-key-0123456789', bob: 'bob-key-0123456789' };
const objects = (upstreamUrl: string) => `
apiVersion: v1
kind: Secret
metadata: { name: api-keys }
stringData: { alice: ${KEYS.alice}, bob: ${KEYS.bob} }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: api-key }
spec:
  plugin: key-auth
  config:
    consumers:
      - { name: alice, secretKeyRef: { name: api-keys, key: alice } }
      - { name: bob, secretKeyRef: { name: api-keys, key: bob } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: async-orders }
spec:
  plugin: idempotency
  config: { async: { enabled: true } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: orders }
spec:
  service: { name: orders, url: "${upstreamUrl}" }
  plugins: [{ name: api-key }]
  routes: [{ name: create, paths: [/orders], methods: [POST], plugins: [{ name: async-orders }] }]
`;

let up: Upstream;
let dp: DataPlane;
/** Holds the upstream's answer to the POST until released: the operation is seen running first. */
let release: () => void = () => {};

beforeAll(async () => {
  const gate = new Promise<void>((r) => {
    release = r;
  });
  up = await startUpstream((_req, res) => {
    void gate.then(() => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end('{"order":"o-1"}');
    });
    return true;
  });
  const built = build(parseFiles([{ file: 'orders.yaml', text: objects(up.url) }]).resources);
  expect(built.diagnostics).toEqual([]);
  expect(built.snapshot.table.routes.map((r) => r.id)).toContain('route/default/orders/create/operations');
  dp = await startTestDataPlane({ initialSnapshot: built.snapshot });
});
afterAll(async () => {
  release();
  await dp?.close();
  await up?.close();
});

const lookup = (location: string, key?: string) =>
  request(`${dp.proxyUrl}${location}`, key ? { headers: { 'x-api-key': key } } : {});

describe('an async idempotent route without an operations route', () => {
  it("gets one: the 202's Location answers its caller, and only its caller", async () => {
    const key = 'op-0123456789abcdef0123456789abcdef';
    const post = await request(`${dp.proxyUrl}/orders`, {
      method: 'POST',
      body: '{"item":"book"}',
      headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-api-key': KEYS.alice },
    });
    expect(post.statusCode).toBe(202);
    await post.body.dump();
    const location = post.headers.location as string;
    expect(location).toBe(`/operations/${key}`);

    const running = await lookup(location, KEYS.alice);
    expect(running.statusCode).toBe(202);
    expect(await running.body.json()).toMatchObject({ operationId: key, status: 'IN_PROGRESS' });

    const other = await lookup(location, KEYS.bob);
    expect(other.statusCode).toBe(404);
    expect(((await other.body.json()) as { code: string }).code).toBe('SLC_ERR_OPERATION_NOT_FOUND');
    const anonymous = await lookup(location);
    expect(anonymous.statusCode).toBe(401);
    await anonymous.body.dump();

    release();
    let done = await lookup(location, KEYS.alice);
    for (let i = 0; done.statusCode === 202 && i < 100; i++) {
      await done.body.dump();
      await sleep(20);
      done = await lookup(location, KEYS.alice);
    }
    expect(done.statusCode).toBe(201);
    expect(await done.body.text()).toBe('{"order":"o-1"}');
    expect(up.seen.filter((s) => s.method === 'POST')).toHaveLength(1);
    // The lookups never reached the upstream.
    expect(up.seen.filter((s) => s.method === 'GET')).toHaveLength(0);
  });
});
