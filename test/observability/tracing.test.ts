/**
 * Tracing end to end: a data plane started with OTEL_EXPORTER_OTLP_ENDPOINT exports through the
 * real OTLP/HTTP protobuf exporter to a receiver on loopback, which decodes what it is sent with
 * protobufjs and the OTLP trace schema (the fields asserted here). One request with the client's
 * traceparent, through jwt, a Redis rate limit and idempotency, retried once by the upstream
 * policy (503 then 200), must give this span tree: the server span (child of the client's span,
 * HTTP attributes, http.route the route id), under it the Redis rate-limit hit, the idempotency
 * claim, two upstream tries (the second with its resend count) and the idempotency complete, and
 * the upstream must have received each try's own traceparent. A keyed request whose upstream
 * cannot be reached has its claim, its failed try and the idempotency release. The trace id is in
 * the access-log line and in problem bodies, also of requests refused before any route (their
 * server span is named by the method alone). The receiver is test/helpers/otlp-receiver.ts.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { SignJWT } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Route } from '../../dataplane/config/route-table.ts';
import { createLogger } from '../../dataplane/observability/log.ts';
import { startServerSpan, startTracing } from '../../dataplane/observability/tracing.ts';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { type OtlpReceiver, SPAN_KIND, STATUS_ERROR, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { sharedRedisUrl, uniquePrefix } from '../helpers/redis.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import {
  idempotencyPlugin,
  pluginInstance,
  rateLimitPlugin,
  route,
  snapshot,
  upstream,
} from '../helpers/tables.ts';

const HS_SECRET = 'tracing-shared-secret-of-32-bytes-or-more';

const jwt = pluginInstance('jwt', 'jwt', {
  issuers: [
    {
      issuer: 'hs-issuer',
      audiences: ['orders'],
      algorithms: ['HS256'],
      keys: [{ secretKeyRef: { name: 's', key: 'k' }, value: Buffer.from(HS_SECRET).toString('base64') }],
    },
  ],
});

let receiver: OtlpReceiver;
let up: Upstream;
let failNext = 0;
const logged: string[] = [];
let dp: Awaited<ReturnType<typeof startTestDataPlane>>;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // The standard variables, as an operator sets them: the exporter reads them from the environment.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  process.env.OTEL_SERVICE_NAME = 'sluice-under-test';
  process.env.OTEL_TRACES_SAMPLER = 'parentbased_always_on';
  up = await startUpstream((_req, res) => {
    if (failNext > 0) {
      failNext--;
      res.writeHead(503, { 'content-length': '0' });
      res.end();
      return true;
    }
    return false;
  });
  const u = upstream('u', up.url);
  u.retries = {
    attempts: 2,
    statuses: [503],
    backoffBaseMs: 0,
    backoffMaxMs: 0,
    budgetPercent: 100,
    minRetriesPerSecond: 10,
    idempotentBackend: true,
  };
  dp = await startTestDataPlane({
    accessLog: true,
    log: createLogger(
      'info',
      new Writable({
        write(chunk, _enc, cb) {
          logged.push(chunk.toString());
          cb();
        },
      }),
    ),
    redisUrl: sharedRedisUrl,
    redisPrefix: uniquePrefix('tracing'),
    initialSnapshot: snapshot(
      [
        route('orders', 'u', '/orders', {
          plugins: [jwt, rateLimitPlugin('rl', { minute: 1000, policy: 'redis' }), idempotencyPlugin('idem')],
        }),
        // Nobody listens there: a try that never reached it, so the idempotency record is released.
        route('gone', 'gone', '/gone', { plugins: [jwt, idempotencyPlugin('idem')] }),
        {
          ...route('agg', 'u', '/agg'),
          handler: {
            type: 'aggregate',
            timeoutMs: 2000,
            maxBodyBytes: 65536,
            calls: ['a', 'b'].map((name) => ({
              name,
              upstream: 'u',
              method: 'GET',
              path: `/${name}`,
              timeoutMs: 1000,
              required: true,
            })),
          },
        } as Route,
      ],
      [u, upstream('gone', `http://127.0.0.1:${await freePort()}`)],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  await receiver?.close();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

describe('tracing', () => {
  it('exports the span tree of a jwt + rate-limit + idempotency request retried once, with traceparent in and out', async () => {
    const clientTrace = randomUUID().replaceAll('-', '');
    const clientSpan = 'a1b2c3d4e5f60718';
    const aggTrace = randomUUID().replaceAll('-', '');
    const token = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('hs-issuer')
      .setAudience('orders')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(HS_SECRET));
    failNext = 1;
    const seenBefore = up.seen.length;
    const r = await request(`${dp.proxyUrl}/orders`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: `00-${clientTrace}-${clientSpan}-01`,
        tracestate: 'vendor=opaque',
        'idempotency-key': `key-${randomUUID()}`,
        'content-type': 'application/json',
      },
      body: '{"amount":42}',
    });
    expect(r.statusCode).toBe(200);
    await r.body.dump();
    // A refused request (no token): its problem body names the trace.
    const refused = await request(`${dp.proxyUrl}/orders`, {
      headers: { traceparent: `00-${clientTrace}-${clientSpan}-01` },
    });
    expect(refused.statusCode).toBe(401);
    const problem = (await refused.body.json()) as { traceId: string; requestId: string };
    expect(problem.traceId).toBe(clientTrace);

    // An idempotent request whose upstream cannot be reached: the record is released.
    const goneTrace = randomUUID().replaceAll('-', '');
    const gone = await request(`${dp.proxyUrl}/gone`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: `00-${goneTrace}-${clientSpan}-01`,
        'idempotency-key': `key-${randomUUID()}`,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(gone.statusCode).toBe(502);
    await gone.body.dump();

    // Refused before any route (no route; a method never proxied): a server span named by the
    // method alone, in the client's trace, whose id the problem and the log line carry.
    const earlyTrace = randomUUID().replaceAll('-', '');
    const early: { requestId: string; traceId: string }[] = [];
    for (const [method, status] of [
      ['GET', 404],
      ['PROPFIND', 405],
    ] as const) {
      const r = await request(`${dp.proxyUrl}/nowhere?token=secret`, {
        method,
        headers: { traceparent: `00-${earlyTrace}-${clientSpan}-01` },
      });
      expect(r.statusCode).toBe(status);
      early.push((await r.body.json()) as { requestId: string; traceId: string });
    }
    expect(early.map((p) => p.traceId)).toEqual([earlyTrace, earlyTrace]);

    // A trace the client did not sample (flags 00; the sampler follows the parent): nothing is
    // recorded, and the upstream still gets the trace, unsampled.
    const quietTrace = randomUUID().replaceAll('-', '');
    const quiet = await request(`${dp.proxyUrl}/orders`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        traceparent: `00-${quietTrace}-${clientSpan}-00`,
        'idempotency-key': `key-${randomUUID()}`,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(quiet.statusCode).toBe(200);
    await quiet.body.dump();
    expect(up.seen.at(-1)!.headers.traceparent).toMatch(new RegExp(`^00-${quietTrace}-[0-9a-f]{16}-00$`));

    // An aggregate: a span per call, each the parent of its try.
    const agg = await request(`${dp.proxyUrl}/agg`, {
      headers: { traceparent: `00-${aggTrace}-${clientSpan}-01` },
    });
    expect(agg.statusCode).toBe(200);
    await agg.body.dump();

    await dp.close(); // shutdown exports every pending span
    expect(receiver.exports[0]).toBe('POST /v1/traces application/x-protobuf');
    const spans = receiver.spans;
    const trace = spans.filter((s) => s.traceId === clientTrace);
    const servers = trace.filter((s) => s.kind === SPAN_KIND.SERVER);
    expect(servers).toHaveLength(2);
    const server = servers.find((s) => s.attributes['http.response.status_code'] === '200')!;
    expect(server).toMatchObject({
      parentSpanId: clientSpan,
      name: 'POST route/test/orders/orders/0',
      service: 'sluice-under-test',
      attributes: {
        'http.request.method': 'POST',
        'http.route': 'route/test/orders/orders/0',
        'url.path': '/orders',
        'client.address': '127.0.0.1',
      },
    });
    const children = trace.filter((s) => s.parentSpanId === server.spanId);
    const names = children.map((c) => c.name).sort();
    expect(names).toEqual(['POST', 'POST', 'idempotency claim', 'idempotency complete', 'rate-limit hit']);
    // The record is completed (the response stored) after the last try answered.
    const complete = children.find((c) => c.name === 'idempotency complete')!;
    expect(complete.attributes).toMatchObject({
      'sluice.store': 'idempotency',
      'db.operation.name': 'complete',
    });
    expect(complete.kind).toBe(SPAN_KIND.CLIENT);
    expect(complete.status.code).toBe(0);
    const tries = children.filter((c) => c.kind === SPAN_KIND.CLIENT && c.name === 'POST');
    expect(tries.map((t) => t.attributes['http.response.status_code']).sort()).toEqual(['200', '503']);
    const retry = tries.find((t) => t.attributes['http.response.status_code'] === '200')!;
    expect(retry.attributes['http.request.resend_count']).toBe('1');
    // An upstream without endpoints: its url's host and port, and that host as the peer (an IP address).
    expect(retry.attributes).toMatchObject({
      'server.address': '127.0.0.1',
      'server.port': new URL(up.url).port,
      'network.peer.address': '127.0.0.1',
      'network.peer.port': new URL(up.url).port,
    });
    expect(tries.find((t) => t !== retry)!.status.code).toBe(2); // ERROR
    // The upstream saw each try's own span as its parent, in the client's trace, with its tracestate.
    const sent = up.seen
      .slice(seenBefore)
      .filter((s) => s.method === 'POST' && String(s.headers.traceparent).includes(clientTrace))
      .map((s) => s.headers.traceparent);
    expect(sent).toEqual(
      [tries.find((t) => t !== retry)!, retry].map((t) => `00-${clientTrace}-${t.spanId}-01`),
    );
    expect(
      up.seen.findLast((s) => s.method === 'POST' && String(s.headers.traceparent).includes(clientTrace))!
        .headers.tracestate,
    ).toBe('vendor=opaque');
    const hit = children.find((c) => c.name === 'rate-limit hit')!;
    expect(hit.attributes['db.system.name']).toBe('redis');
    // The 401's server span is in the same trace, with no upstream try.
    const other = servers.find((s) => s !== server)!;
    expect(other.attributes['http.response.status_code']).toBe('401');
    expect(trace.filter((s) => s.parentSpanId === other.spanId)).toEqual([]);
    // The unreachable upstream: claim, the failed try, then the release; nothing completed.
    const goneServer = spans.find((s) => s.traceId === goneTrace && s.kind === SPAN_KIND.SERVER)!;
    expect(goneServer.attributes['http.response.status_code']).toBe('502');
    const goneChildren = spans.filter((s) => s.parentSpanId === goneServer.spanId);
    expect(goneChildren.map((c) => c.name).sort()).toEqual([
      'POST',
      'idempotency claim',
      'idempotency release',
    ]);
    const release = goneChildren.find((c) => c.name === 'idempotency release')!;
    expect(release.attributes).toMatchObject({
      'sluice.store': 'idempotency',
      'db.operation.name': 'release',
    });
    expect(goneChildren.find((c) => c.name === 'POST')!.status.code).toBe(STATUS_ERROR);
    const aggSpans = spans.filter((s) => s.traceId === aggTrace);
    const aggServer = aggSpans.find((s) => s.kind === SPAN_KIND.SERVER)!;
    const callSpans = aggSpans.filter((s) => s.parentSpanId === aggServer.spanId);
    expect(callSpans.map((s) => [s.name, s.kind, s.attributes['sluice.result']]).sort()).toEqual([
      ['aggregate a', SPAN_KIND.INTERNAL, 'ok'],
      ['aggregate b', SPAN_KIND.INTERNAL, 'ok'],
    ]);
    for (const c of callSpans)
      expect(aggSpans.filter((s) => s.parentSpanId === c.spanId).map((s) => [s.name, s.kind])).toEqual([
        ['GET', SPAN_KIND.CLIENT],
      ]);
    // The access-log lines carry the trace id.
    const lines = logged
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const line = lines.find((l) => l.requestId === problem.requestId);
    for (const p of early) expect(lines.find((l) => l.requestId === p.requestId).traceId).toBe(earlyTrace);
    expect(spans.filter((s) => s.traceId === quietTrace)).toEqual([]);
    const earlySpans = spans.filter((s) => s.traceId === earlyTrace);
    expect(
      earlySpans
        .map((s) => [s.name, s.kind, s.parentSpanId, s.attributes['http.response.status_code']])
        .sort(),
    ).toEqual([
      ['GET', SPAN_KIND.SERVER, clientSpan, '404'],
      ['PROPFIND', SPAN_KIND.SERVER, clientSpan, '405'],
    ]);
    for (const s of earlySpans) {
      expect(s.attributes['http.route']).toBeUndefined();
      expect(s.attributes['url.path']).toBe('/nowhere');
      expect(s.attributes['error.type']).toMatch(/^SLC_ERR_(ROUTE_NOT_FOUND|METHOD_NOT_ALLOWED)$/);
    }
    expect(line.traceId).toBe(clientTrace);
  });
});

describe('tracing configuration', () => {
  it('is off (null: no SDK, no span) without an OTLP endpoint, with the SDK disabled, or with the traces exporter none', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' };
    expect(startTracing({})).toBeNull();
    expect(startTracing({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBeNull();
    expect(startTracing({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(startTracing({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(
      startTracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:1/v1/traces' }),
    ).not.toBeNull();
  });

  it('joins the client trace by default; SLUICE_TRACE_INCOMING=restart starts a new trace linked to it', async () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' };
    const client = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const joined = startTracing(env)!;
    const restarted = startTracing({ ...env, SLUICE_TRACE_INCOMING: 'restart' })!;
    const a = startServerSpan(joined, client, 'GET', 'route/x', '/x', '127.0.0.1') as unknown as ReadableSpan;
    const b = startServerSpan(
      restarted,
      client,
      'GET',
      'route/x',
      '/x',
      '127.0.0.1',
    ) as unknown as ReadableSpan;
    expect(a.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(a.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(b.spanContext().traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    expect(b.parentSpanContext).toBeUndefined();
    expect(b.links.map((l) => l.context.spanId)).toEqual(['b7ad6b7169203331']);
    // A malformed traceparent is ignored: a new trace, no parent.
    const c = startServerSpan(
      joined,
      { traceparent: '00-zz-yy-01' },
      'GET',
      'route/x',
      '/x',
      '',
    ) as unknown as ReadableSpan;
    expect(c.parentSpanContext).toBeUndefined();
    for (const s of [a, b, c]) (s as unknown as { end(): void }).end();
    await Promise.all([joined.shutdown(), restarted.shutdown()]);
  });
});
