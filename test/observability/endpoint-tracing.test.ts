/**
 * The upstream try spans of an upstream of endpoints name the endpoint each try dialled. Real
 * data plane, real OTLP/HTTP exporter, the receiver of test/helpers/otlp-receiver.ts, and two real
 * back ends on 127.0.0.1 and 127.0.0.2 behind a url that resolves nowhere (so a connection can
 * only have gone to an endpoint). As the HTTP client span conventions say: server.address and
 * server.port are the url's (what the Host header names), network.peer.address and
 * network.peer.port the endpoint's. Back end a answers 503 and the upstream retries once on
 * the other endpoint: each try's span names its own endpoint, the retry with its resend count.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import {
  type DecodedSpan,
  type OtlpReceiver,
  SPAN_KIND,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { type Backend, endpointOf, startBackend } from '../upstream/backends.ts';

let receiver: OtlpReceiver;
let a: Backend;
let b: Backend;
let dp: DataPlane;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // The exporter reads its endpoint from the environment, as an operator sets it.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  [a, b] = await Promise.all([startBackend('a', '127.0.0.1'), startBackend('b', '127.0.0.2')]);
  a.failing = true; // every answer a 503: its tries are retried on b
  dp = await startTestDataPlane({
    // Exported every 50 ms: the test waits for its spans.
    otelEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' },
    initialSnapshot: snapshot(
      [route('svc', 'svc', '/svc')],
      [
        {
          ...upstream('svc', 'http://svc.test.invalid:8080'),
          endpoints: [endpointOf(a), endpointOf(b)],
          balance: { policy: 'round-robin' },
          retries: {
            attempts: 1,
            statuses: [503],
            backoffBaseMs: 0,
            backoffMaxMs: 0,
            budgetPercent: 100,
            minRetriesPerSecond: 10,
            idempotentBackend: false,
          },
        },
      ],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await Promise.all([a?.close(), b?.close()]);
  await receiver?.close();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

const CLIENT_SPAN = '0102030405060708';

describe('try spans of an upstream of endpoints', () => {
  it('name the url as server.address/port and the endpoint dialled as network.peer.address/port', async () => {
    // Each request's first try goes to a or b in turn (retries take turns too); a's tries are retried on b.
    const traces = [randomUUID().replaceAll('-', ''), randomUUID().replaceAll('-', '')];
    for (const traceId of traces) {
      const res = await request(`${dp.proxyUrl}/svc`, {
        headers: { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` },
      });
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toEqual({ name: 'b' });
    }
    expect(a.hits).toBeGreaterThanOrEqual(1);
    const tries = (spans: DecodedSpan[]) =>
      spans.filter((s) => traces.includes(s.traceId) && s.kind === SPAN_KIND.CLIENT);
    await receiver.waitFor((spans) => tries(spans).length >= a.hits + b.hits);
    const got = tries(receiver.spans);
    expect(got).toHaveLength(a.hits + b.hits);
    for (const t of got)
      expect(t.attributes).toMatchObject({
        'http.request.method': 'GET',
        'server.address': 'svc.test.invalid',
        'server.port': '8080',
        'url.full': 'http://svc.test.invalid:8080/svc',
      });
    // Each span names the back end that answered it: a's address and port with a's 503, b's with b's 200.
    const seen = got.map((t) => [
      t.attributes['network.peer.address'],
      t.attributes['network.peer.port'],
      t.attributes['http.response.status_code'],
    ]);
    expect(seen.filter(([addr]) => addr === '127.0.0.1')).toEqual(
      Array(a.hits).fill(['127.0.0.1', String(a.port), '503']),
    );
    expect(seen.filter(([addr]) => addr === '127.0.0.2')).toEqual(
      Array(b.hits).fill(['127.0.0.2', String(b.port), '200']),
    );
    // Every try on a was retried on b in the same trace: the retry's span names the other endpoint.
    for (const first of got.filter((t) => t.attributes['network.peer.address'] === '127.0.0.1')) {
      expect(first.attributes['http.request.resend_count']).toBeUndefined();
      const retry = got.filter((t) => t.traceId === first.traceId && t !== first);
      expect(
        retry.map((t) => [t.attributes['network.peer.address'], t.attributes['http.request.resend_count']]),
      ).toEqual([['127.0.0.2', '1']]);
    }
  });
});
