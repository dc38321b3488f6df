/**
 * What authentication fetches for a request is traced under it: a data plane exporting to an
 * OTLP receiver on loopback (helpers/otlp-receiver.ts), in front of a real OpenID provider
 * (oidc-provider, helpers/oidc-provider.ts). An opaque token's introspection is an `oidc
 * introspection` client span under the request's server span; a token whose kid is new makes
 * the jwt plugin read the JWKS again, a `jwks fetch` span under the request that waits for it;
 * a provider's metadata read for a request (none was read yet) is an `oidc discovery` span.
 * Reads no request waits for (the JWKS at start) are in no trace. Each such call sends its own
 * span's traceparent to the provider.
 */
import { randomUUID } from 'node:crypto';
import type { JWK } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { endServerSpan, startServerSpan, startTracing } from '../../dataplane/observability/tracing.ts';
import { Discovery } from '../../dataplane/plugins/oidc/discovery.ts';
import {
  type DecodedSpan,
  type OtlpReceiver,
  SPAN_KIND,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.ts';
import {
  GATEWAY_CLIENT,
  type OidcProvider,
  signingKey,
  startOidcProvider,
} from '../helpers/oidc-provider.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

const JWT_RESOURCE = 'https://orders.jwt.test/';
const OPAQUE_RESOURCE = 'urn:orders:opaque';
const OTEL = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_BSP_SCHEDULE_DELAY: '50' };

let receiver: OtlpReceiver;
let op: OidcProvider;
let up: Upstream;
let dp: DataPlane;
let k1: JWK;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  OTEL.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  // The exporter reads its endpoint from the environment, as an operator sets it.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  k1 = await signingKey('k1');
  op = await startOidcProvider([k1]);
  up = await startUpstream();
  dp = await startTestDataPlane({
    otelEnv: OTEL,
    initialSnapshot: snapshot(
      [
        route('jwt', 'u', '/jwt', {
          plugins: [
            pluginInstance('jwt', 'jwt', {
              issuers: [
                {
                  issuer: op.issuer,
                  audiences: [JWT_RESOURCE],
                  algorithms: ['RS256'],
                  jwksUri: `${op.issuer}/jwks`,
                },
              ],
            }),
          ],
        }),
        route('oidc', 'u', '/oidc', {
          plugins: [
            pluginInstance('oidc', 'oidc', {
              issuer: op.issuer,
              audiences: [OPAQUE_RESOURCE],
              algorithms: ['RS256'],
              introspection: {
                clientId: GATEWAY_CLIENT.id,
                clientSecret: {
                  secretKeyRef: { name: 'gw', key: 'secret' },
                  value: Buffer.from(GATEWAY_CLIENT.secret).toString('base64'),
                },
              },
            }),
          ],
        }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await op?.stop();
  await up?.close();
  await receiver?.close();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

const newTrace = () => randomUUID().replaceAll('-', '');
const CLIENT_SPAN = '1112131415161718';
async function call(path: string, token: string, traceId: string): Promise<number> {
  const r = await request(`${dp.proxyUrl}${path}`, {
    headers: { authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${CLIENT_SPAN}-01` },
  });
  await r.body.dump();
  return r.statusCode;
}
/** The trace's server span and the spans under it, once `count` spans of the trace are exported. */
async function tree(traceId: string, count: number) {
  const inTrace = (spans: DecodedSpan[]) => spans.filter((s) => s.traceId === traceId);
  await receiver.waitFor((spans) => inTrace(spans).length >= count);
  const spans = inTrace(receiver.spans);
  const server = spans.find((s) => s.kind === SPAN_KIND.SERVER)!;
  return { server, children: spans.filter((s) => s.parentSpanId === server.spanId) };
}

describe('authentication fetches in the request trace', () => {
  it('an opaque token: the introspection call is a client span under the server span, its traceparent sent', async () => {
    const traceId = newTrace();
    expect(await call('/oidc/x', await op.token(OPAQUE_RESOURCE), traceId)).toBe(200);
    const { children } = await tree(traceId, 3); // server, introspection, upstream try
    const intro = children.find((c) => c.name === 'oidc introspection')!;
    expect(intro).toMatchObject({
      kind: SPAN_KIND.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'url.full': `${op.issuer}/token/introspection`,
        'server.address': '127.0.0.1',
        'server.port': new URL(op.issuer).port,
        'http.response.status_code': '200',
      },
    });
    expect(children.map((c) => c.name).sort()).toEqual(['GET', 'oidc introspection']);
    expect(op.traced).toContain(`POST /token/introspection 00-${traceId}-${intro.spanId}-01`);
  });

  it('known keys: no fetch in the trace (the JWKS read at start belongs to no request)', async () => {
    const traceId = newTrace();
    expect(await call('/jwt/x', await op.token(JWT_RESOURCE), traceId)).toBe(200);
    const { children } = await tree(traceId, 2);
    expect(children.map((c) => c.name)).toEqual(['GET']);
    expect(op.traced.filter((t) => t.startsWith('GET /jwks'))).toEqual([]);
  });

  it("a new kid: the JWKS read again for it is a 'jwks fetch' span under the request that waits", async () => {
    await op.stop();
    await op.start([await signingKey('k2')]); // a rotation: the gateway knows only k1
    const traceId = newTrace();
    expect(await call('/jwt/x', await op.token(JWT_RESOURCE), traceId)).toBe(200);
    const { children } = await tree(traceId, 3);
    const fetch = children.find((c) => c.name === 'jwks fetch')!;
    expect(fetch).toMatchObject({
      kind: SPAN_KIND.CLIENT,
      attributes: {
        'http.request.method': 'GET',
        'url.full': `${op.issuer}/jwks`,
        'http.response.status_code': '200',
      },
    });
    expect(op.traced).toContain(`GET /jwks 00-${traceId}-${fetch.spanId}-01`);
  });

  it("provider metadata read for a request (none read yet) is an 'oidc discovery' span under it", async () => {
    const p = await startOidcProvider([k1]);
    await p.stop();
    let failed!: () => void;
    const down = new Promise<void>((r) => {
      failed = r;
    });
    const d = new Discovery(p.issuer, {
      refreshMs: 3_600_000,
      cooldownMs: 0,
      onFetch: (ok) => ok || failed(),
    });
    await down; // the read at start failed: the provider was down
    await p.start();
    const tracing = startTracing(OTEL)!;
    const traceId = newTrace();
    const server = startServerSpan(
      tracing,
      { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` },
      'GET',
      'route/x',
      '/x',
      '127.0.0.1',
    );
    expect((await d.ready(server))?.metadata.issuer).toBe(p.issuer);
    endServerSpan(server, 200, null);
    await tracing.shutdown();
    const { children } = await tree(traceId, 2);
    expect(children.map((c) => [c.name, c.kind, c.attributes['url.full']])).toEqual([
      ['oidc discovery', SPAN_KIND.CLIENT, `${p.issuer}/.well-known/openid-configuration`],
    ]);
    expect(p.traced).toEqual([
      `GET /.well-known/openid-configuration 00-${traceId}-${children[0].spanId}-01`,
    ]);
    await p.stop();
  });
});
