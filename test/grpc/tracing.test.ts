/**
 * gRPC calls traced: a data plane exporting to an OTLP receiver on loopback (helpers/otlp-receiver.ts)
 * calls a real grpc-js server (server.ts). Each call is a client span under the request's server
 * span, with the RPC conventions (rpc.system grpc, rpc.service, rpc.method, rpc.grpc.status_code,
 * server.address and port) and an error status for any code but OK, and the service receives the
 * span's context in its metadata: `traceparent` naming that span, the client's `tracestate`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import {
  type DecodedSpan,
  type OtlpReceiver,
  SPAN_KIND,
  STATUS_ERROR,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { call, gatewayRoute, rule, snapshotOf } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';

let receiver: OtlpReceiver;
let srv: TestGrpcServer;
let dp: DataPlane;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // The exporter reads its endpoint from the environment, as an operator sets it.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  srv = await startGrpcServer();
  dp = await startTestDataPlane({
    // Exported every 50 ms, not every 5 s: each case waits for its spans.
    otelEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' },
    initialSnapshot: snapshotOf([
      gatewayRoute('catalog', srv.url, [
        rule('get', '/items', 'GetItem', { pattern: '/items/{item_id}' }),
        rule('watch', '/watch', 'Watch', { pattern: '/watch/{item_id}' }),
      ]),
    ]),
  });
});
afterAll(async () => {
  await dp?.close();
  await srv?.close();
  await receiver?.close();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

const newTrace = () => randomUUID().replaceAll('-', '');
const CLIENT_SPAN = '0102030405060708';
const traced = (path: string, traceId: string) =>
  call(dp.proxyUrl, path, {
    headers: { traceparent: `00-${traceId}-${CLIENT_SPAN}-01`, tracestate: 'vendor=grpc-test' },
  });
/** The trace's server span and the spans under it, once both are exported. */
async function tree(traceId: string): Promise<{ server: DecodedSpan; children: DecodedSpan[] }> {
  const inTrace = (spans: DecodedSpan[]) => spans.filter((s) => s.traceId === traceId);
  await receiver.waitFor((spans) => inTrace(spans).length >= 2);
  const spans = inTrace(receiver.spans);
  const server = spans.find((s) => s.kind === SPAN_KIND.SERVER)!;
  return { server, children: spans.filter((s) => s.parentSpanId === server.spanId) };
}

describe('grpc tracing', () => {
  it('a unary call is a client span under the server span; the service gets its traceparent and the tracestate', async () => {
    const traceId = newTrace();
    const r = await traced('/items/mug-1', traceId);
    expect(r.status).toBe(200);
    const sent = srv.metadata.GetItem;
    const { server, children } = await tree(traceId);
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(children).toHaveLength(1);
    const rpc = children[0];
    expect(rpc).toMatchObject({
      name: 'shop.v1.Catalog/GetItem',
      kind: SPAN_KIND.CLIENT,
      attributes: {
        'rpc.system': 'grpc',
        'rpc.service': 'shop.v1.Catalog',
        'rpc.method': 'GetItem',
        'rpc.grpc.status_code': '0',
        'server.address': '127.0.0.1',
        'server.port': String(srv.port),
        'network.peer.address': '127.0.0.1',
        'network.peer.port': String(srv.port),
      },
    });
    expect(rpc.status.code).not.toBe(STATUS_ERROR);
    // The service saw the gRPC span (not the server span) as its parent, in the client's trace.
    expect(sent.get('traceparent')).toEqual([`00-${traceId}-${rpc.spanId}-01`]);
    expect(sent.get('tracestate')).toEqual(['vendor=grpc-test']);
  });

  it('a call answered with an error status is an error span with its code', async () => {
    const traceId = newTrace();
    const r = await traced('/items/missing', traceId);
    expect(r.status).toBe(404);
    const { children } = await tree(traceId);
    expect(children).toHaveLength(1);
    expect(children[0].attributes['rpc.grpc.status_code']).toBe('5');
    expect(children[0].attributes['error.type']).toBe('NOT_FOUND');
    expect(children[0].status).toMatchObject({ code: STATUS_ERROR, message: 'no item "missing"' });
  });

  it('a server-streaming call is one span, ended with the stream status', async () => {
    const traceId = newTrace();
    const r = await traced('/watch/w?page.size=3', traceId);
    expect(r.status).toBe(200);
    expect(r.text.trim().split('\n')).toHaveLength(3);
    const { children } = await tree(traceId);
    expect(children.map((c) => [c.name, c.kind, c.attributes['rpc.grpc.status_code']])).toEqual([
      ['shop.v1.Catalog/Watch', SPAN_KIND.CLIENT, '0'],
    ]);
    expect(srv.metadata.Watch.get('traceparent')).toEqual([`00-${traceId}-${children[0].spanId}-01`]);
  });
});
