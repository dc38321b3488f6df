/**
 * The controller's spans, exported: the build and push path run in this process (tracedBuild as
 * the runner calls it, the Publisher against two real data planes on loopback) with the SDK
 * registered as the global provider the way `sluice controller` does (startTracing with
 * `global`), exporting to an OTLP receiver on loopback (helpers/otlp-receiver.ts). The build
 * span and each pod's push span carry the hash the data planes then run; a push links to its
 * build; a refused snapshot's push is an error. Before a provider is registered the spans are
 * the API's no-ops (controller/tracing.ts imports nothing of the data plane).
 */
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Publisher } from '../../controller/publish/publisher.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { ATTR_SNAPSHOT_HASH, tracedBuild } from '../../controller/tracing.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTracing, type Tracing } from '../../dataplane/observability/tracing.ts';
import { gatewayRoute } from '../helpers/fixtures.ts';
import { type OtlpReceiver, SPAN_KIND, STATUS_ERROR, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';

let receiver: OtlpReceiver;
let up: Upstream;
const planes: DataPlane[] = [];
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // The exporter reads its endpoint from the environment, as an operator sets it.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  up = await startUpstream();
  for (let i = 0; i < 2; i++) planes.push(await startTestDataPlane());
});
afterAll(async () => {
  await Promise.all(planes.map((p) => p.close()));
  await up?.close();
  await receiver?.close();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

const resources = (path: string) =>
  resourceSetFrom([gatewayRoute('shop', 'test').url(up.url).route('main', [path]).build()]);
const pods = () => planes.map((p, i) => ({ key: p.adminUrl, name: `pod-${i}`, url: p.adminUrl }));
const until = async (cond: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('controller tracing', () => {
  it('no provider registered: the build span is a no-op (nothing recorded, no valid context)', () => {
    const { result, built } = tracedBuild(resources('/before'));
    expect(result.diagnostics).toEqual([]);
    expect(trace.isSpanContextValid(built)).toBe(false);
  });

  // The tracer controller/tracing.ts took at import, before any provider, follows the one registered now.
  it('exports a build span and a push span per pod, carrying the hash the data planes run', async () => {
    const tracing: Tracing = startTracing(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      { global: true, serviceName: 'sluice-controller' },
    )!;
    const { result, built } = tracedBuild(resources('/v1'));
    const hash = result.snapshot.hash;
    const p = new Publisher({ token: 'test-admin-token', resyncMs: 3_600_000 });
    p.setPods(pods());
    p.publish(result.snapshot, built);
    p.setActive(true);
    await until(() => planes.every((d) => d.holder.hash === hash));
    // A snapshot the data planes refuse (422): its pushes are errors.
    const bad = snapshot(
      [route('bad', 'u', '/bad', { plugins: [transformer('t', { add: { headers: ['Bad Name:x'] } })] })],
      [upstream('u', up.url)],
    );
    p.publish(bad);
    await until(() => [...p.pods.values()].every((s) => s.rejected?.hash === bad.hash));
    p.stop();
    await tracing.shutdown(); // exports what is pending

    const spans = receiver.spans.filter((s) => s.scope === 'sluice-controller');
    const build = spans.find((s) => s.name === 'controller build')!;
    expect(build).toMatchObject({
      service: 'sluice-controller',
      kind: SPAN_KIND.INTERNAL,
      spanId: built.spanId,
      parentSpanId: '',
      attributes: { [ATTR_SNAPSHOT_HASH]: hash, 'sluice.routes': '1', 'sluice.problems': '0' },
    });
    const pushes = spans.filter(
      (s) => s.name === 'controller push' && s.attributes[ATTR_SNAPSHOT_HASH] === hash,
    );
    expect(pushes.map((s) => s.attributes['sluice.pod']).sort()).toEqual(['pod-0', 'pod-1']);
    for (const push of pushes) {
      expect(push.attributes).toMatchObject({
        'http.request.method': 'PUT',
        'http.response.status_code': '200',
        'sluice.push.result': 'applied',
      });
      expect(push.links).toEqual([{ traceId: build.traceId, spanId: build.spanId }]);
      expect(push.status.code).not.toBe(STATUS_ERROR);
    }
    // What the pods run is the hash on those spans.
    expect(planes.map((d) => d.holder.hash)).toEqual([hash, hash]);
    const refused = spans.filter(
      (s) => s.name === 'controller push' && s.attributes[ATTR_SNAPSHOT_HASH] === bad.hash,
    );
    expect(refused).toHaveLength(2);
    for (const push of refused) {
      expect(push.attributes).toMatchObject({
        'http.response.status_code': '422',
        'sluice.push.result': 'rejected',
      });
      expect(push.status.code).toBe(STATUS_ERROR);
      expect(push.links).toEqual([]);
    }
  });
});
