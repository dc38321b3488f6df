/**
 * A real OpenID provider on loopback (the oidc-provider package) for the oidc tests: discovery,
 * JWKS, a token endpoint issuing client-credentials access tokens, and RFC 7662 introspection.
 * The resource asked for picks the token's format and audience: a resource containing "jwt"
 * gets a signed JWT access token, any other an opaque one. It can be stopped and started again
 * on the same port (an outage), and restarted with other signing keys (a rotation).
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { request } from 'undici';

export const GATEWAY_CLIENT = { id: 'gateway', secret: 'gateway-secret-0123456789' };
export const APP_CLIENT = { id: 'app', secret: 'app-secret-0123456789' };
export const OTHER_CLIENT = { id: 'other-app', secret: 'other-secret-0123456789' };
export const SCOPES = 'orders:read orders:write';

export async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

export interface OidcProvider {
  issuer: string;
  /** An access token for a client (the app by default): JWT when the resource contains "jwt", opaque otherwise. */
  token(resource: string, scope?: string, client?: { id: string; secret: string }): Promise<string>;
  /** Revokes a token of the app client (RFC 7009). */
  revoke(token: string): Promise<void>;
  /** Introspection calls answered so far. */
  introspections(): number;
  /** `METHOD path traceparent` of each request that carried a traceparent (the tracing tests). */
  traced: string[];
  stop(): Promise<void>;
  /** Listens again on the same port, with new signing keys if given (in-memory tokens are lost). */
  start(keys?: JWK[]): Promise<void>;
}

/** The browser-login client (authorization code, refresh tokens; access tokens live 2 s to exercise refresh). */
export const WEB_CLIENT = { id: 'web', secret: 'web-secret-0123456789' };

export async function startOidcProvider(
  keys: JWK[],
  port = 0,
  web: { redirectUris: string[]; postLogoutRedirectUris: string[] } | null = null,
): Promise<OidcProvider> {
  let server: Server | null = null;
  let issuer = '';
  let introspections = 0;
  const traced: string[] = [];
  const listen = async (signing: JWK[], at: number) => {
    const srv = createServer();
    srv.listen(at, '127.0.0.1');
    await once(srv, 'listening');
    issuer = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const provider = new Provider(issuer, {
      jwks: { keys: signing },
      scopes: ['openid', ...SCOPES.split(' ')],
      clients: [
        {
          client_id: APP_CLIENT.id,
          client_secret: APP_CLIENT.secret,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
          scope: SCOPES,
        },
        {
          client_id: OTHER_CLIENT.id,
          client_secret: OTHER_CLIENT.secret,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
          scope: SCOPES,
        },
        ...(web === null
          ? []
          : [
              {
                client_id: WEB_CLIENT.id,
                client_secret: WEB_CLIENT.secret,
                grant_types: ['authorization_code', 'refresh_token'],
                response_types: ['code'],
                redirect_uris: web.redirectUris,
                post_logout_redirect_uris: web.postLogoutRedirectUris,
              },
            ]),
        {
          client_id: GATEWAY_CLIENT.id,
          client_secret: GATEWAY_CLIENT.secret,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
        },
      ],
      ttl: {
        AccessToken: (_ctx: unknown, _token: unknown, client: { clientId: string }) =>
          client.clientId === WEB_CLIENT.id ? 2 : 300,
      },
      issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(g: string): boolean }) =>
        client.grantTypeAllowed('refresh_token'),
      features: {
        devInteractions: { enabled: web !== null },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        revocation: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => 'urn:orders:opaque',
          getResourceServerInfo: (_ctx: unknown, resource: string, client: { clientId: string }) => ({
            scope: SCOPES,
            audience: resource,
            accessTokenTTL: client.clientId === WEB_CLIENT.id ? 2 : 300,
            ...(resource.includes('jwt')
              ? { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }
              : { accessTokenFormat: 'opaque' }),
          }),
        },
      },
    });
    const callback = provider.callback();
    srv.on('request', (req, res) => {
      if (req.url?.startsWith('/token/introspection')) introspections++;
      const tp = req.headers.traceparent;
      if (tp !== undefined) traced.push(`${req.method} ${req.url} ${tp}`);
      callback(req, res);
    });
    server = srv;
  };
  await listen(keys, port);
  const fixedPort = Number(new URL(issuer).port);
  return {
    get issuer() {
      return issuer;
    },
    async token(resource, scope = SCOPES, client = APP_CLIENT) {
      const r = await request(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }).toString(),
      });
      const body = (await r.body.json()) as { access_token?: string };
      if (r.statusCode !== 200 || !body.access_token)
        throw new Error(`token: ${r.statusCode} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async revoke(token) {
      const r = await request(`${issuer}/token/revocation`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${APP_CLIENT.id}:${APP_CLIENT.secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ token }).toString(),
      });
      await r.body.dump();
      if (r.statusCode !== 200) throw new Error(`revocation: ${r.statusCode}`);
    },
    introspections: () => introspections,
    traced,
    async stop() {
      const s = server;
      server = null;
      if (s === null) return;
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    },
    async start(signing = keys) {
      await listen(signing, fixedPort);
    },
  };
}
