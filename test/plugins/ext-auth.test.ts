/**
 * ext-auth (nginx's auth_request, ingress-nginx's auth-url) in a data plane, against a real
 * authentication service on loopback: what the service is sent (the client's headers and
 * ingress-nginx's X-Original-*, never the body), and what each answer of it does: 2xx lets the
 * request through with the response headers copied (a client's forged copy never passes), 401
 * and 403 are passed back (401 as a redirect to signin with rd=), anything else and no answer in
 * time are 500, and the upstream sees none of the refused requests.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { signinLocation } from '../../dataplane/plugins/ext-auth/index.ts';
import { manifest } from '../../dataplane/plugins/ext-auth/manifest.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let auth: Upstream;
let up: Upstream;
let dp: DataPlane;

/** The service answers by its path: /ok 200 (X-User), /no 401, /forbidden 403, /moved 302, /gone 404, /slow never. */
function answerAuth(
  req: import('node:http').IncomingMessage,
  res: import('node:http').ServerResponse,
): boolean {
  const path = (req.url ?? '').split('?')[0];
  if (path === '/ok') res.writeHead(200, { 'x-user': 'alice', 'x-groups': 'admins' }).end('fine');
  else if (path === '/no') res.writeHead(401, { 'www-authenticate': 'Bearer realm="auth"' }).end();
  else if (path === '/forbidden') res.writeHead(403).end('no');
  else if (path === '/moved') res.writeHead(302, { location: '/elsewhere' }).end();
  else if (path === '/gone') res.writeHead(404).end();
  else if (path === '/slow')
    return true; // never answers
  else res.writeHead(200).end();
  return true;
}

const extAuth = (name: string, config: Record<string, unknown>) => ({
  id: `plugin/test/${name}`,
  name: 'ext-auth' as const,
  config,
  source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
});

beforeAll(async () => {
  auth = await startUpstream((req, res) => answerAuth(req, res));
  up = await startUpstream();
  const at = (path: string, more: Record<string, unknown> = {}) => ({ url: `${auth.url}${path}`, ...more });
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('ok', 'u', '/ok', {
          plugins: [
            extAuth('ok', at('/ok', { responseHeaders: ['X-User', 'X-Missing'], requestRedirect: '/back' })),
          ],
        }),
        route('post', 'u', '/post', { plugins: [extAuth('post', at('/ok', { method: 'POST' }))] }),
        route('no', 'u', '/no', { plugins: [extAuth('no', at('/no'))] }),
        route('signin', 'u', '/signin', {
          plugins: [extAuth('signin', at('/no', { signin: 'https://login.example.test/start' }))],
        }),
        route('signin-vars', 'u', '/vars', {
          plugins: [
            extAuth('vars', at('/no', { signin: 'https://$host/oauth2/start?rd=$escaped_request_uri' })),
          ],
        }),
        route('forbidden', 'u', '/forbidden', { plugins: [extAuth('forbidden', at('/forbidden'))] }),
        route('moved', 'u', '/moved', { plugins: [extAuth('moved', at('/moved'))] }),
        route('gone', 'u', '/gone', { plugins: [extAuth('gone', at('/gone'))] }),
        route('slow', 'u', '/slow', { plugins: [extAuth('slow', at('/slow', { timeout: '300ms' }))] }),
        route('down', 'u', '/down', { plugins: [extAuth('down', { url: 'http://127.0.0.1:1/auth' })] }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  await auth?.close();
});

const call = async (path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) => {
  const r = await request(`${dp.proxyUrl}${path}`, { method: method as 'GET', headers, body });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
};

describe('ext-auth', () => {
  it("sends the service the client's headers and ingress-nginx's X-Original-*, without the body", async () => {
    const r = await call(
      '/post/a?q=1',
      { host: 'app.example.test', cookie: 's=1', authorization: 'Bearer t', 'content-type': 'text/plain' },
      'POST',
      'the body',
    );
    expect(r.status).toBe(200);
    const sent = auth.seen.at(-1)!;
    expect(sent.method).toBe('POST');
    expect(sent.url).toBe('/ok');
    expect(sent.body).toBe('');
    expect(sent.headers).toMatchObject({
      host: new URL(auth.url).host,
      cookie: 's=1',
      authorization: 'Bearer t',
      'x-original-url': 'http://app.example.test/post/a?q=1',
      'x-original-method': 'POST',
      'x-sent-from': 'nginx-ingress-controller',
      'x-real-ip': '127.0.0.1',
      'x-forwarded-for': '127.0.0.1',
      'x-auth-request-redirect': '/post/a?q=1',
    });
    // The upstream still gets the body.
    expect(up.seen.at(-1)!.body).toBe('the body');
  });

  it('2xx: the request goes on with the response headers copied; a client-sent copy never passes', async () => {
    const r = await call('/ok/x', {
      'x-user': 'mallory',
      'x-missing': 'forged',
      'content-type': 'text/plain',
    });
    expect(r.status).toBe(200);
    const seen = up.seen.at(-1)!;
    expect(seen.url).toBe('/ok/x');
    expect(seen.headers['x-user']).toBe('alice');
    expect(seen.headers['x-missing']).toBeUndefined();
    expect(seen.headers['x-groups']).toBeUndefined(); // not listed
    const sent = auth.seen.at(-1)!;
    expect(sent.method).toBe('GET');
    expect(sent.headers['x-auth-request-redirect']).toBe('/back');
    expect(sent.headers['content-type']).toBeUndefined();
  });

  it("401 is passed back with the service's challenge; 403 is passed back; neither reaches the upstream", async () => {
    const n = up.seen.length;
    const no = await call('/no');
    expect(no.status).toBe(401);
    expect(no.headers['www-authenticate']).toBe('Bearer realm="auth"');
    expect(JSON.parse(no.body).code).toBe('SLC_ERR_EXT_AUTH_UNAUTHORIZED');
    const forbidden = await call('/forbidden');
    expect(forbidden.status).toBe(403);
    expect(JSON.parse(forbidden.body).code).toBe('SLC_ERR_EXT_AUTH_FORBIDDEN');
    expect(up.seen.length).toBe(n);
  });

  it('401 with signin: 302 to it, the original URL in rd (or where signin puts $escaped_request_uri)', async () => {
    const r = await call('/signin/p?x=1&y=2', { host: 'app.example.test' });
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe(
      `https://login.example.test/start?rd=${encodeURIComponent('http://app.example.test')}${encodeURIComponent('/signin/p?x=1&y=2')}`,
    );
    const v = await call('/vars/p?x=1', { host: 'app.example.test' });
    expect(v.headers.location).toBe(
      `https://app.example.test/oauth2/start?rd=${encodeURIComponent('/vars/p?x=1')}`,
    );
  });

  it('another status (a redirect, a 404), no answer in time, or no service: 500, the upstream not reached', async () => {
    const n = up.seen.length;
    for (const path of ['/moved', '/gone', '/down']) {
      const r = await call(path);
      expect(r.status, path).toBe(500);
      expect(JSON.parse(r.body).code).toBe('SLC_ERR_EXT_AUTH_FAILED');
    }
    expect(JSON.parse((await call('/down')).body).detail).toBe(
      'the authentication service could not be reached',
    );
    const t0 = Date.now();
    const slow = await call('/slow');
    expect(slow.status).toBe(500);
    expect(JSON.parse(slow.body).detail).toContain('within 300 ms');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(up.seen.length).toBe(n);
  });
});

describe('ext-auth config', () => {
  const o = { scheme: 'https', host: 'app.example.test', uri: '/a b?x=1' };
  it('expands signin variables, and adds rd unless signin has it', () => {
    expect(signinLocation('https://login.test/start', 'rd', o)).toBe(
      'https://login.test/start?rd=https%3A%2F%2Fapp.example.test%2Fa%20b%3Fx%3D1',
    );
    expect(signinLocation('https://$host/s?a=1', 'next', o)).toBe(
      'https://app.example.test/s?a=1&next=https%3A%2F%2Fapp.example.test%2Fa%20b%3Fx%3D1',
    );
    expect(signinLocation('https://login.test/s?rd=$scheme://$host$request_uri', 'rd', o)).toBe(
      'https://login.test/s?rd=https://app.example.test/a b?x=1',
    );
  });

  it('refuses a timeout over 60s and signin variables it does not expand', () => {
    expect(
      manifest.checks!({ url: 'http://a/', timeout: '2m', signin: 'https://$http_host/x?u=$uri' }),
    ).toEqual([
      { field: 'timeout', message: 'must be from 1ms to 60s' },
      { field: 'signin', message: expect.stringContaining('$http_host, $uri is not expanded') },
    ]);
  });
});
