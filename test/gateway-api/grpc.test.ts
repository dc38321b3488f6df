/**
 * Gateway API conformance, GATEWAY-GRPC core: our own tests of the upstream suite's (v1.6.1) of
 * the same names and intent. gRPC is proxied end to end over HTTP/2: a grpc-js client speaks h2c
 * with prior knowledge to a Gateway listener port of each data plane, which speaks h2c to the
 * suite's gRPC echo back ends (GrpcEcho, answering with the pod that served the call).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcEcho } from '../helpers/gateway-api/clients.ts';
import type { GrpcEchoResponse } from '../helpers/gateway-api/grpc-echo.ts';
import { waitFor } from '../helpers/until.ts';
import { type Env, INFRA, routeParent, startEnv } from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
let env: Env;

beforeAll(async () => {
  if (RUN) env = await startEnv();
}, 120_000);
afterAll(() => env?.stop(), 60_000);

/** host:port of the listener on each data plane (grpc-js targets). */
async function targets(gateway: string, port = 80): Promise<string[]> {
  return (await env.gatewayUrls(INFRA, gateway, port)).map((u) => new URL(u).host);
}

type Call = {
  method?: 'Echo' | 'EchoTwo' | 'EchoThree';
  metadata?: Record<string, string>;
  authority?: string;
};

/** Calls every data plane until each call is served by a pod of `backend` (null: must fail), then once more. */
async function expectCall(ts: readonly string[], call: Call, backend: string | null): Promise<void> {
  const once = () =>
    Promise.all(
      ts.map((t) =>
        grpcEcho(t, call.method ?? 'Echo', call).then(
          (r: GrpcEchoResponse) => r.assertions.context.pod,
          (err: { code?: number }) => `error ${err.code}`,
        ),
      ),
    );
  const good = (pods: string[]) =>
    pods.every((p) => (backend === null ? p.startsWith('error') : p.startsWith(`${backend}-`)));
  await waitFor(`${call.method ?? 'Echo'} ${JSON.stringify(call.metadata ?? {})} → ${backend}`, once, good);
  expect(good(await once())).toBe(true);
}

describe.skipIf(!RUN)('GATEWAY-GRPC core', () => {
  it('GRPCExactMethodMatching', async () => {
    await env.withManifest('grpcroute-exact-method-matching', async () => {
      await routeParent(env, INFRA, 'exact-matching', 'same-namespace', { kind: 'grpcroute' });
      const ts = await targets('same-namespace');
      await expectCall(ts, { method: 'Echo' }, 'grpc-infra-backend-v1');
      await expectCall(ts, { method: 'EchoTwo' }, 'grpc-infra-backend-v2');
      await expectCall(ts, { method: 'EchoThree' }, null);
    });
  }, 60_000);

  it('GRPCRouteHeaderMatching', async () => {
    await env.withManifest('grpcroute-header-matching', async () => {
      await routeParent(env, INFRA, 'grpc-header-matching', 'same-namespace', { kind: 'grpcroute' });
      const ts = await targets('same-namespace');
      const md = (metadata: Record<string, string>) => ({ metadata });
      await expectCall(ts, md({ version: 'one' }), 'grpc-infra-backend-v1');
      await expectCall(ts, md({ version: 'two' }), 'grpc-infra-backend-v2');
      await expectCall(ts, md({ version: 'two', color: 'orange' }), 'grpc-infra-backend-v1');
      await expectCall(ts, md({ color: 'blue' }), 'grpc-infra-backend-v1');
      await expectCall(ts, md({ color: 'green' }), 'grpc-infra-backend-v1');
      await expectCall(ts, md({ color: 'red' }), 'grpc-infra-backend-v2');
      await expectCall(ts, md({ color: 'yellow' }), 'grpc-infra-backend-v2');
      await expectCall(ts, md({ version: 'three' }), null);
    });
  }, 60_000);

  it('GRPCRouteListenerHostnameMatching', async () => {
    await env.withManifest('grpcroute-listener-hostname-matching', async () => {
      const gw = 'grpcroute-listener-hostname-matching';
      for (const r of ['backend-v1', 'backend-v2'])
        await routeParent(env, INFRA, r, gw, { kind: 'grpcroute' });
      await routeParent(env, INFRA, 'backend-v3', gw, { kind: 'grpcroute', sectionName: 'listener-3' });
      const ts = await targets(gw);
      const at = (authority: string) => ({ authority });
      await expectCall(ts, at('bar.com'), 'grpc-infra-backend-v1');
      await expectCall(ts, at('foo.bar.com'), 'grpc-infra-backend-v2');
      await expectCall(ts, at('baz.bar.com'), 'grpc-infra-backend-v3');
      await expectCall(ts, at('boo.bar.com'), 'grpc-infra-backend-v3');
      await expectCall(ts, at('multiple.prefixes.bar.com'), 'grpc-infra-backend-v3');
      await expectCall(ts, at('multiple.prefixes.foo.com'), 'grpc-infra-backend-v3');
      await expectCall(ts, at('foo.com'), null);
      await expectCall(ts, at('no.matching.host'), null);
    });
  }, 60_000);

  it('GRPCRouteWeight', async () => {
    await env.withManifest('grpcroute-weight', async () => {
      await routeParent(env, INFRA, 'weighted-backends', 'same-namespace', { kind: 'grpcroute' });
      const [t] = await targets('same-namespace');
      await waitFor(
        'a call served',
        () =>
          grpcEcho(t, 'Echo').then(
            () => true,
            () => false,
          ),
        (ok) => ok,
      );
      const counts = new Map<string, number>();
      const N = 200;
      for (let i = 0; i < N; i++) {
        const pod = (await grpcEcho(t, 'Echo')).assertions.context.pod;
        const backend = pod.replace(/-\d+$/, '');
        counts.set(backend, (counts.get(backend) ?? 0) + 1);
      }
      // 70 / 30 / 0, within 10 points (the upstream test allows a tolerance too).
      expect(Math.abs((counts.get('grpc-infra-backend-v1') ?? 0) / N - 0.7)).toBeLessThan(0.1);
      expect(Math.abs((counts.get('grpc-infra-backend-v2') ?? 0) / N - 0.3)).toBeLessThan(0.1);
      expect(counts.get('grpc-infra-backend-v3') ?? 0).toBe(0);
    });
  }, 90_000);
});
