/**
 * The oidc browser login against a real OpenID provider (oidc-provider with its development
 * login and consent pages, driven over HTTP like a browser): the authorization code flow with
 * PKCE, state and nonce; the session cookie (HttpOnly, Secure, SameSite=Lax, never sent
 * upstream) and the ID token upstream; refresh of an expired access token; a second cookie key
 * (rotation); an expired session and a tampered cookie sent to log in again; logout.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { type OidcProvider, signingKey, startOidcProvider, WEB_CLIENT } from '../helpers/oidc-provider.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

let op: OidcProvider;
let up: Upstream;
let dp: DataPlane;
let gw = '';
const secret = (s: string) => ({
  secretKeyRef: { name: 's', key: 'k' },
  value: Buffer.from(s).toString('base64'),
});
/** A resource the provider issues JWT access tokens for (test/helpers/oidc-provider.ts). */
const JWT_API = 'https://orders.jwt.test/';
const KEY1 = 'cookie-key-one-0123456789abcdef-0123456789';
const KEY2 = 'cookie-key-two-0123456789abcdef-0123456789';

const oidcLogin = (name: string, prefix: string, extra: Record<string, unknown> = {}) => ({
  id: `plugin/test/${name}`,
  name: 'oidc' as const,
  config: {
    issuer: op.issuer,
    audiences: ['urn:orders:opaque'],
    algorithms: ['RS256'],
    // No refresh ahead of time: the web client's access tokens live 2 s.
    clockSkew: '0s',
    login: {
      clientId: WEB_CLIENT.id,
      clientSecret: secret(WEB_CLIENT.secret),
      redirectUri: `${gw}${prefix}/callback`,
      logoutPath: `${prefix}/logout`,
      postLogoutRedirectUri: `${gw}/bye`,
      cookieKeys: [secret(KEY1)],
      upstream: { token: 'id', header: 'X-Id-Token' },
      ...extra,
    },
  },
  source: { kind: 'GatewayPlugin', namespace: 'test', name, generation: 1 },
});

beforeAll(async () => {
  const port = await freePort();
  gw = `http://127.0.0.1:${port}`;
  op = await startOidcProvider([await signingKey('k1')], 0, {
    redirectUris: [`${gw}/app/callback`, `${gw}/brief/callback`],
    postLogoutRedirectUris: [`${gw}/bye`],
  });
  up = await startUpstream();
  dp = await startTestDataPlane({
    proxyPort: port,
    initialSnapshot: snapshot(
      [
        route('app', 'u', '/app', { plugins: [oidcLogin('app', '/app')] }),
        route('rotated', 'u', '/rotated', {
          plugins: [oidcLogin('rotated', '/app', { cookieKeys: [secret(KEY2), secret(KEY1)] })],
        }),
        route('other-key', 'u', '/other-key', {
          plugins: [oidcLogin('other-key', '/app', { cookieKeys: [secret(KEY2)] })],
        }),
        route('brief', 'u', '/brief', { plugins: [oidcLogin('brief', '/brief', { sessionLifetime: '1s' })] }),
        // Login on, and JWT access tokens for an API client on the same route.
        route('api', 'u', '/api', {
          plugins: [
            {
              ...oidcLogin('api', '/app'),
              config: { ...oidcLogin('api', '/app').config, audiences: [JWT_API] },
            },
          ],
        }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp.close();
  await up.close();
  await op.stop();
});

type Jar = Map<string, string>;
interface Answer {
  status: number;
  location: string | undefined;
  setCookies: string[];
  body: string;
}

async function send(url: string, jar: Jar, form?: Record<string, string>): Promise<Answer> {
  const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const r = await request(url, {
    method: form ? 'POST' : 'GET',
    headers: {
      ...(cookie ? { cookie } : {}),
      ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  const raw = r.headers['set-cookie'];
  const setCookies = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  for (const c of setCookies) {
    const [pair] = c.split(';');
    const eq = pair.indexOf('=');
    const value = pair.slice(eq + 1);
    if (value === '' || /max-age=0/i.test(c)) jar.delete(pair.slice(0, eq));
    else jar.set(pair.slice(0, eq), value);
  }
  return {
    status: r.statusCode,
    location: r.headers.location as string | undefined,
    setCookies,
    body: await r.body.text(),
  };
}

/** A browser's login from `path`: the gateway's redirect, the provider's login and consent pages, the callback. */
async function login(path: string): Promise<{ jar: Jar; callback: Answer; authorize: URL }> {
  const jar: Jar = new Map();
  const providerJar: Jar = new Map();
  const first = await send(`${gw}${path}`, jar);
  expect(first.status).toBe(302);
  const authorize = new URL(first.location!);
  let url = authorize.href;
  for (let i = 0; i < 20; i++) {
    const u = new URL(url);
    if (u.origin === gw) return { jar, callback: await send(url, jar), authorize };
    let r = await send(url, providerJar);
    if (r.status === 200 && u.pathname.startsWith('/interaction/')) {
      const prompt = /name="prompt" value="(\w+)"/.exec(r.body)![1];
      r = await send(
        url,
        providerJar,
        prompt === 'login' ? { prompt, login: 'alice', password: 'x' } : { prompt },
      );
    }
    url = new URL(r.location!, u).href;
  }
  throw new Error('the login did not come back');
}

describe('oidc browser login', () => {
  it('code flow with PKCE, state and nonce; the session cookie; the ID token upstream, our cookies not', async () => {
    const { jar, callback, authorize } = await login('/app/orders?page=2');
    const q = authorize.searchParams;
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(q.get('nonce')).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(q.get('redirect_uri')).toBe(`${gw}/app/callback`);
    expect(callback.status).toBe(302);
    expect(callback.location).toBe('/app/orders?page=2');
    const session = callback.setCookies.find((c) => c.startsWith('sluice_session='))!;
    expect(session).toMatch(/; HttpOnly; Secure; SameSite=Lax;/);
    jar.set('other', 'kept');
    const page = await send(`${gw}/app/orders?page=2`, jar);
    expect(page.status).toBe(200);
    const seen = up.seen.at(-1)!.headers;
    const idToken = JSON.parse(
      Buffer.from((seen['x-id-token'] as string).split('.')[1], 'base64url').toString(),
    );
    expect([idToken.sub, idToken.aud, idToken.iss]).toEqual(['alice', WEB_CLIENT.id, op.issuer]);
    expect(seen.cookie).toBe('other=kept');
  });

  it('a callback whose state does not match the login cookie is refused', async () => {
    const { jar } = await login('/app/x');
    const r = await send(`${gw}/app/callback?code=abc&state=forged`, jar);
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body).detail).toBe('the login state does not match');
  });

  it('an expired access token is refreshed: the request passes and a new cookie comes with it', async () => {
    const { jar } = await login('/app/a');
    const before = jar.get('sluice_session');
    await new Promise((r) => setTimeout(r, 2_100)); // the web client's access tokens live 2 s
    const r = await send(`${gw}/app/a`, jar);
    expect(r.status).toBe(200);
    expect(jar.get('sluice_session')).not.toBe(before);
    expect((await send(`${gw}/app/a`, jar)).status).toBe(200);
  });

  it('rotation: a plugin with a new first key still reads a cookie of the old key; one without the old key does not', async () => {
    const { jar } = await login('/app/a');
    const rotated = await send(`${gw}/rotated/a`, jar);
    expect([rotated.status, rotated.setCookies]).toEqual([200, []]);
    const other = await send(`${gw}/other-key/a`, jar);
    expect(other.status).toBe(302);
    expect(other.location).toMatch(new RegExp(`^${op.issuer}/auth\\?`));
  });

  it('an expired session goes to log in again', async () => {
    const { jar } = await login('/brief/a');
    expect((await send(`${gw}/brief/a`, jar)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_100));
    const r = await send(`${gw}/brief/a`, jar);
    expect(r.status).toBe(302);
    expect(r.location).toMatch(new RegExp(`^${op.issuer}/auth\\?`));
  });

  it('a tampered cookie is no session: GET goes to log in, POST is a 401', async () => {
    const { jar } = await login('/app/a');
    const value = jar.get('sluice_session')!;
    const i = Math.floor(value.length / 2);
    jar.set('sluice_session', value.slice(0, i) + (value[i] === 'A' ? 'B' : 'A') + value.slice(i + 1));
    const get = await send(`${gw}/app/a`, jar);
    expect(get.status).toBe(302);
    const post = await send(`${gw}/app/a`, jar, { a: '1' });
    expect(post.status).toBe(401);
    expect(JSON.parse(post.body).code).toBe('SLC_ERR_CREDENTIALS_MISSING');
  });

  it('logout clears the cookie and sends the browser to the provider with the ID token hint', async () => {
    const { jar } = await login('/app/a');
    const r = await send(`${gw}/app/logout`, jar);
    expect(r.status).toBe(302);
    const end = new URL(r.location!);
    expect(end.href.startsWith(`${op.issuer}/session/end?`)).toBe(true);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${gw}/bye`);
    expect(end.searchParams.get('id_token_hint')).toMatch(/^ey/);
    expect(jar.has('sluice_session')).toBe(false);
    expect((await send(`${gw}/app/a`, jar)).status).toBe(302);
  });

  it('a bearer token on the same route still takes the token path', async () => {
    const r = await request(`${gw}/app/a`, { headers: { authorization: 'Bearer not-a-jwt' } });
    await r.body.dump();
    expect(r.statusCode).toBe(401);
  });

  it('an API client with a valid bearer token gets through, and our cookies never go upstream', async () => {
    const token = await op.token(JWT_API);
    const r = await request(`${gw}/api/x`, {
      headers: {
        authorization: `Bearer ${token}`,
        cookie: 'theme=dark; sluice_session=stolen-or-stale; sluice_session_login=x; lang=fr',
      },
    });
    await r.body.dump();
    expect(r.statusCode).toBe(200);
    expect(up.seen.at(-1)!.headers.cookie).toBe('theme=dark; lang=fr');
  });
});
