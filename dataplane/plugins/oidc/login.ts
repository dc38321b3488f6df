/**
 * The oidc plugin's browser login, for requests without a bearer token: the authorization code
 * flow with PKCE (S256), `state` and `nonce` (the three kept for ten minutes in a login cookie),
 * the code exchanged at the token endpoint with the client's secret, the ID token verified (the
 * provider's keys, its issuer, our client as audience, the nonce). The session is a cookie:
 * a JWE (dir, A256GCM: encrypted and authenticated, so a changed byte fails) under the first
 * of `cookieKeys`, read with any of them (rotation), `HttpOnly; Secure; SameSite=Lax`. It
 * holds the tokens; an expired access token is refreshed with the refresh token (the new cookie
 * goes with the response), else the browser logs in again. Our cookies never go upstream; the
 * configured token does, in the configured header. GET and HEAD are sent to log in; any other
 * method without a session is a 401.
 */
import { createHash, randomBytes } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, decodeJwt, jwtVerify } from 'jose';
import { parseDuration } from '../../config/duration.ts';
import { answered, answerProblem } from '../../pipeline/answer.ts';
import type { Span } from '../../observability/tracing.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import { refuseScope } from '../bearer.ts';
import type { Discovery } from './discovery.ts';
import { postForm } from './introspection.ts';
import { COOKIE_KEY_BYTES, type OidcConfig } from './manifest.ts';

type LoginConfig = NonNullable<OidcConfig['login']>;
interface Session {
  it: string;
  at: string;
  rt?: string;
  /** Access token expiry, session expiry (s since the epoch). */
  ate: number;
  exp: number;
  sc: string;
}
interface LoginState {
  s: string;
  n: string;
  v: string;
  r: string;
  exp: number;
}

const LOGIN_MS = 600_000;
const b64url = (b: Buffer) => b.toString('base64url');
const nowS = () => Math.floor(Date.now() / 1000);

export interface LoginOptions {
  issuer: string;
  algorithms: string[];
  skewS: number;
  scopes: readonly string[];
  hasScopes: (claims: Record<string, unknown>, required: readonly string[]) => boolean;
}

export function loginHook(
  config: LoginConfig,
  provider: Discovery,
  o: LoginOptions,
  deps: RuntimeDeps,
  bearer: (ctx: RequestContext) => void | Promise<void>,
): (ctx: RequestContext) => void | Promise<void> {
  const keys = config.cookieKeys.map((k, i) => {
    const bytes = Buffer.from(k.value ?? '', 'base64');
    // The manifest's check refuses a shorter one at the data plane's door; a table built by hand too.
    if (bytes.length < COOKIE_KEY_BYTES)
      throw new Error(`oidc: login.cookieKeys[${i}] must hold at least ${COOKIE_KEY_BYTES} bytes`);
    return createHash('sha256').update(bytes).digest();
  });
  const client = {
    clientId: config.clientId,
    secret: Buffer.from(config.clientSecret.value ?? '', 'base64').toString('utf8'),
    timeoutMs: 5_000,
  };
  if (!config.clientSecret.value) throw new Error('oidc: the login client secret has no resolved value');
  const name = config.cookieName ?? 'sluice_session';
  const loginName = `${name}_login`;
  const callbackPath = new URL(config.redirectUri).pathname;
  const lifetimeS = Math.floor((parseDuration(config.sessionLifetime ?? '8h') ?? 28_800_000) / 1000);
  const upstreamHeader = config.upstream?.header.toLowerCase();
  const scope = ['openid', ...(config.scopes ?? [])].join(' ');

  const seal = (payload: object) =>
    new CompactEncrypt(Buffer.from(JSON.stringify(payload)))
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .encrypt(keys[0]);
  const open = async <T extends { exp: number }>(jwe: string | undefined): Promise<T | null> => {
    if (jwe === undefined) return null;
    for (const key of keys) {
      try {
        const v = JSON.parse(Buffer.from((await compactDecrypt(jwe, key)).plaintext).toString('utf8')) as T;
        return typeof v.exp === 'number' && v.exp > nowS() ? v : null;
      } catch {
        // another key, or tampered: not a session
      }
    }
    return null;
  };
  const cookie = (n: string, value: string, maxAge: number) =>
    `${n}=${value}; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=${maxAge}`;
  const redirect = (ctx: RequestContext, location: string, cookies: string[]) => {
    answered(ctx);
    ctx.status = 302;
    ctx.res.writeHead(302, { location, 'cache-control': 'no-store', 'set-cookie': cookies });
    ctx.res.end();
  };
  const endpoints = async (ctx: RequestContext) => (await provider.ready(ctx.span))?.metadata ?? null;

  const startLogin = async (ctx: RequestContext) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD')
      return answerProblem(ctx, 'SLC_ERR_CREDENTIALS_MISSING', {
        detail: 'a session or a bearer token is required',
      });
    const m = await endpoints(ctx);
    if (m?.authorizationEndpoint == null)
      return answerProblem(ctx, 'SLC_ERR_AUTH_UNAVAILABLE', {
        detail: 'the identity provider metadata is not available',
      });
    const state: LoginState = {
      s: b64url(randomBytes(16)),
      n: b64url(randomBytes(16)),
      v: b64url(randomBytes(32)),
      r: ctx.query === '' ? ctx.path : `${ctx.path}?${ctx.query}`,
      exp: nowS() + LOGIN_MS / 1000,
    };
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: config.clientId,
      redirect_uri: config.redirectUri,
      scope,
      state: state.s,
      nonce: state.n,
      code_challenge: b64url(createHash('sha256').update(state.v).digest()),
      code_challenge_method: 'S256',
    });
    redirect(ctx, `${m.authorizationEndpoint}?${q}`, [cookie(loginName, await seal(state), LOGIN_MS / 1000)]);
  };

  const callback = async (ctx: RequestContext, cookies: Map<string, string>) => {
    const q = new URLSearchParams(ctx.query);
    const state = await open<LoginState>(cookies.get(loginName));
    if (state === null || q.get('state') !== state.s)
      return answerProblem(ctx, 'SLC_ERR_CREDENTIALS_INVALID', { detail: 'the login state does not match' });
    const code = q.get('code');
    if (code === null)
      return answerProblem(ctx, 'SLC_ERR_CREDENTIALS_INVALID', { detail: 'the provider refused the login' });
    const m = await endpoints(ctx);
    let tokens: Record<string, unknown>;
    try {
      if (m?.tokenEndpoint == null) throw new Error('no token endpoint');
      tokens = await postForm(
        m.tokenEndpoint,
        client,
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: config.redirectUri,
          code_verifier: state.v,
        },
        ctx.span,
        'oidc token',
      );
    } catch (err) {
      deps.log.warn({ issuer: o.issuer, error: (err as Error).message }, 'oidc: code exchange failed');
      return answerProblem(ctx, 'SLC_ERR_AUTH_UNAVAILABLE', { detail: 'the login could not be completed' });
    }
    const session = await sessionOf(tokens, null, ctx.span);
    if (typeof session === 'string')
      return answerProblem(ctx, 'SLC_ERR_CREDENTIALS_INVALID', { detail: session });
    const idNonce = decodeJwt(session.it).nonce;
    if (idNonce !== state.n)
      return answerProblem(ctx, 'SLC_ERR_CREDENTIALS_INVALID', {
        detail: 'the ID token nonce does not match',
      });
    const back = state.r.startsWith('/') && !state.r.startsWith('//') ? state.r : '/';
    redirect(ctx, back, [cookie(name, await seal(session), lifetimeS), cookie(loginName, '', 0)]);
  };

  /** A session from a token endpoint answer (a refresh keeps the ID token and refresh token it is not given), or why not. */
  const sessionOf = async (
    t: Record<string, unknown>,
    previous: Session | null,
    span: Span | null,
  ): Promise<Session | string> => {
    const it = typeof t.id_token === 'string' ? t.id_token : previous?.it;
    if (typeof t.access_token !== 'string' || it === undefined) return 'the provider sent no tokens';
    // A new ID token is verified; one kept from the login was verified then.
    if (it !== previous?.it) {
      const meta = await provider.ready(span);
      if (meta === null) return 'the identity provider metadata is not available';
      const jwks = meta.jwks;
      try {
        await jwtVerify(it, span === null ? jwks.resolve : (h, tk) => jwks.resolve(h, tk, span), {
          issuer: o.issuer,
          audience: config.clientId,
          algorithms: o.algorithms,
          clockTolerance: o.skewS,
          requiredClaims: ['iss', 'aud', 'exp', 'sub'],
        });
      } catch {
        return 'the ID token is not valid';
      }
    }
    return {
      it,
      at: t.access_token,
      rt: typeof t.refresh_token === 'string' ? t.refresh_token : previous?.rt,
      ate: nowS() + (typeof t.expires_in === 'number' ? t.expires_in : 300),
      exp: previous?.exp ?? nowS() + lifetimeS,
      sc: typeof t.scope === 'string' ? t.scope : (previous?.sc ?? ''),
    };
  };

  const logout = async (ctx: RequestContext, session: Session | null) => {
    const m = await endpoints(ctx);
    const clear = [cookie(name, '', 0)];
    if (session !== null && m?.endSessionEndpoint != null) {
      const q = new URLSearchParams({ id_token_hint: session.it, client_id: config.clientId });
      if (config.postLogoutRedirectUri) q.set('post_logout_redirect_uri', config.postLogoutRedirectUri);
      return redirect(ctx, `${m.endSessionEndpoint}?${q}`, clear);
    }
    redirect(ctx, config.postLogoutRedirectUri ?? '/', clear);
  };

  const browser = async (ctx: RequestContext) => {
    if (upstreamHeader !== undefined) delete ctx.headers[upstreamHeader];
    const cookies = readCookies(ctx, [name, loginName]);
    if (ctx.path === callbackPath) return callback(ctx, cookies);
    let session = await open<Session>(cookies.get(name));
    if (ctx.path === config.logoutPath) return logout(ctx, session);
    if (session !== null && session.ate - o.skewS <= nowS()) {
      const m = await endpoints(ctx);
      let refreshed: Session | string = 'no refresh token';
      if (session.rt !== undefined && m?.tokenEndpoint != null) {
        try {
          refreshed = await sessionOf(
            await postForm(
              m.tokenEndpoint,
              client,
              { grant_type: 'refresh_token', refresh_token: session.rt },
              ctx.span,
              'oidc token',
            ),
            session,
            ctx.span,
          );
        } catch (err) {
          refreshed = (err as Error).message;
        }
      }
      session = typeof refreshed === 'string' ? null : refreshed;
      if (session !== null) {
        ctx.responseHeaders ??= {};
        ctx.responseHeaders['set-cookie'] = cookie(name, await seal(session), session.exp - nowS());
      }
    }
    if (session === null) return startLogin(ctx);
    if (o.scopes.length > 0 && !o.hasScopes({ scope: session.sc }, o.scopes))
      return refuseScope(ctx, o.scopes);
    const claims = decodeJwt(session.it);
    ctx.consumer = { id: `${o.issuer}#${claims.sub}`, credentialId: claims.sub, source: 'oidc', claims };
    if (upstreamHeader !== undefined) {
      const token = config.upstream?.token === 'id' ? session.it : session.at;
      ctx.headers[upstreamHeader] = upstreamHeader === 'authorization' ? `Bearer ${token}` : token;
    }
  };

  // A request with a bearer token is verified as one (an API client on a login route); a browser's
  // is the login flow. Either way our cookies never go upstream.
  return (ctx) => {
    if (ctx.headers.authorization === undefined) return browser(ctx);
    readCookies(ctx, [name, loginName]);
    return bearer(ctx);
  };
}

/** Our cookies, by name, taken out of the Cookie header the upstream gets. */
function readCookies(ctx: RequestContext, names: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  const header = ctx.headers.cookie;
  if (header === undefined) return found;
  const kept: string[] = [];
  for (const part of header.split(/;\s*/)) {
    const eq = part.indexOf('=');
    const n = eq < 0 ? part : part.slice(0, eq);
    if (names.includes(n)) found.set(n, part.slice(eq + 1));
    else if (part !== '') kept.push(part);
  }
  if (kept.length > 0) ctx.headers.cookie = kept.join('; ');
  else delete ctx.headers.cookie;
  return found;
}
