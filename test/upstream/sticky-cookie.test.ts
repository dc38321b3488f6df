/**
 * Session affinity (route-table balance hashOn.cookie.set; ingress-nginx's affinity: cookie)
 * through the real data plane to three real back ends on loopback (127.0.5.3–5): a request
 * without the cookie is answered with a Set-Cookie of a new value (the attributes as configured,
 * beside the back end's own Set-Cookie), and every request carrying it goes to the endpoint that
 * answered the first; new clients spread over the endpoints; with the cookie no new one is set.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { setCookie } from '../../dataplane/upstream/balancer.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const ADDRESSES = ['127.0.5.3', '127.0.5.4', '127.0.5.5'];
const servers: Server[] = [];
let dp: DataPlane;

beforeAll(async () => {
  for (const [i, address] of ADDRESSES.entries()) {
    const s = createServer((req, res) => {
      res.writeHead(200, {
        'content-type': 'text/plain',
        ...(req.url?.startsWith('/app/own') && { 'set-cookie': 'app=1; Path=/' }),
      });
      res.end(`pod-${i}`);
    });
    s.listen(0, address);
    await once(s, 'listening');
    servers.push(s);
  }
  const endpoints = servers.map((s) => ({
    address: (s.address() as AddressInfo).address,
    port: (s.address() as AddressInfo).port,
  }));
  const sticky = (id: string, set: object): Upstream => ({
    ...upstream(id, 'http://svc.test.invalid:80'),
    endpoints,
    balance: { policy: 'consistent-hash', hashOn: { cookie: 'INGRESSCOOKIE', set: { path: '/', ...set } } },
  });
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [route('app', 'app', '/app'), route('strict', 'strict', '/strict')],
      [
        sticky('app', {}),
        sticky('strict', { path: '/strict', maxAgeS: 172800, sameSite: 'Strict', secure: true }),
      ],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function get(path: string, cookie?: string) {
  const r = await request(`${dp.proxyUrl}${path}`, { headers: cookie ? { cookie } : {} });
  return { pod: await r.body.text(), setCookie: r.headers['set-cookie'] };
}

describe('session affinity by cookie', () => {
  it("sets the cookie when absent, and every request with it goes to the first answer's endpoint", async () => {
    const pods = new Set<string>();
    for (let client = 0; client < 12; client++) {
      const first = await get('/app/x');
      const set = String(first.setCookie);
      expect(set).toMatch(/^INGRESSCOOKIE=[0-9a-f]{32}; Path=\/; HttpOnly$/);
      const cookie = set.split(';')[0];
      for (let i = 0; i < 5; i++) {
        const next = await get('/app/y', `theme=dark; ${cookie}`);
        expect(next.pod).toBe(first.pod);
        expect(next.setCookie).toBeUndefined();
      }
      pods.add(first.pod);
    }
    // New clients spread: 12 on one endpoint of three would be 3^-11.
    expect(pods.size).toBeGreaterThan(1);
  });

  it("sets the configured attributes, beside the back end's own Set-Cookie", async () => {
    const strict = await get('/strict');
    expect(String(strict.setCookie)).toMatch(
      /^INGRESSCOOKIE=[0-9a-f]{32}; Path=\/strict; Max-Age=172800; SameSite=Strict; Secure; HttpOnly$/,
    );
    const own = await get('/app/own');
    expect(own.setCookie).toEqual(['app=1; Path=/', expect.stringMatching(/^INGRESSCOOKIE=/)]);
  });

  it('SameSite=None is always Secure (browsers refuse it otherwise)', () => {
    expect(setCookie('a=b', { path: '/', sameSite: 'None' })).toBe(
      'a=b; Path=/; SameSite=None; Secure; HttpOnly',
    );
  });
});
