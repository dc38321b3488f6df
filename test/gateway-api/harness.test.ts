/**
 * The harness the Gateway API conformance tests run on, on a real API server (KUBECONFIG): the
 * upstream standard CRDs install and become Established (a second install changes nothing); the
 * suite's base manifests apply and every base Service with a selector gets EndpointSlices whose
 * endpoints are echo processes answering as the pods the slices name; one echo speaks HTTP/1.1,
 * h2c with prior knowledge and WebSocket on one port, and behaves as upstream's echo where tests
 * rely on it; a conformance test file applies (placeholders filled, its Services given slices)
 * and deletes again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok } from '../helpers/kubectl.ts';
import { type Backends, startConformanceBackends } from '../helpers/gateway-api/backends.ts';
import { grpcEcho, h2c, http1, wsRoundTrip } from '../helpers/gateway-api/clients.ts';
import { crdStates, installGatewayApiCrds } from '../helpers/gateway-api/crds.ts';
import {
  applyConformanceTest,
  type KubeObject,
  type Placeholders,
  readConformance,
  testObjects,
} from '../helpers/gateway-api/manifests.ts';

const P: Placeholders = {
  gatewayClassName: 'sluice-harness',
  controllerName: 'sluice.dev/gateway-controller',
};
const INFRA = 'gateway-conformance-infra';

interface Slice {
  metadata: { name: string; labels: Record<string, string> };
  ports: Array<{ name: string; port: number; appProtocol?: string }>;
  endpoints: Array<{
    addresses: string[];
    conditions: { ready: boolean };
    targetRef: { kind: string; name: string; namespace: string };
  }>;
}

const slicesOf = async (namespace: string, service: string): Promise<Slice[]> =>
  (
    JSON.parse(
      await ok([
        'get',
        'endpointslices',
        '-n',
        namespace,
        '-l',
        `kubernetes.io/service-name=${service}`,
        '-o',
        'json',
      ]),
    ) as { items: Slice[] }
  ).items;

let backends: Backends;
const base = readConformance('base/manifests.yaml', P);
const deployments = new Map(
  base.filter((o) => o.kind === 'Deployment').map((d) => [`${d.metadata.namespace}/${d.metadata.name}`, d]),
);
const services = base.filter(
  (
    o,
  ): o is KubeObject & { spec: { selector: Record<string, string>; ports: Array<{ targetPort: number }> } } =>
    o.kind === 'Service' && (o.spec as { selector?: object }).selector !== undefined,
);

beforeAll(async () => {
  backends = await startConformanceBackends(P);
}, 120_000);

afterAll(async () => {
  await backends?.stop();
}, 60_000);

describe('the upstream CRDs', () => {
  it('are installed, Established, at bundle version v1.6.1; installing again changes nothing', async () => {
    const names = await installGatewayApiCrds();
    expect(names).toEqual(
      expect.arrayContaining([
        'gatewayclasses.gateway.networking.k8s.io',
        'gateways.gateway.networking.k8s.io',
        'httproutes.gateway.networking.k8s.io',
        'grpcroutes.gateway.networking.k8s.io',
        'referencegrants.gateway.networking.k8s.io',
      ]),
    );
    const before = await crdStates(names);
    expect(before.map((c) => c.name).sort()).toEqual([...names].sort());
    for (const crd of before)
      expect(crd, crd.name).toMatchObject({ bundleVersion: 'v1.6.1', established: true });
    await installGatewayApiCrds();
    const after = await crdStates(names);
    expect(after.map((c) => c.resourceVersion)).toEqual(before.map((c) => c.resourceVersion));
  });
});

describe('the base back ends', () => {
  it('the base objects are applied with the placeholders filled; Deployments are not stored', async () => {
    const gw = JSON.parse(await ok(['get', 'gateway', '-n', INFRA, 'same-namespace', '-o', 'json'])) as {
      spec: { gatewayClassName: string };
    };
    expect(gw.spec.gatewayClassName).toBe(P.gatewayClassName);
    const stored = await ok(['get', 'deployments', '-n', INFRA, '-o', 'name']);
    expect(stored.trim()).toBe('');
    const secret = JSON.parse(
      await ok(['get', 'secret', '-n', INFRA, 'tls-validity-checks-certificate', '-o', 'json']),
    ) as { type: string; data: Record<string, string> };
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.data).sort()).toEqual(['tls.crt', 'tls.key']);
  });

  it('each pod of each echo Deployment runs, on an address of its own, named <deployment>-<n>', () => {
    const echo = [...deployments.values()].filter(
      (d) => !backends.skipped.some((s) => s.deployment === d.metadata.name && !s.reason.startsWith('port')),
    );
    expect(echo.length).toBeGreaterThanOrEqual(11);
    for (const d of echo) {
      const replicas = (d.spec as { replicas?: number }).replicas ?? 1;
      const pods = backends.pods.filter(
        (p) => p.namespace === d.metadata.namespace && p.deployment === d.metadata.name,
      );
      expect(pods.map((p) => p.name).sort()).toEqual(
        Array.from({ length: replicas }, (_, i) => `${d.metadata.name}-${i + 1}`),
      );
    }
    const addresses = backends.pods.map((p) => p.address);
    expect(new Set(addresses).size).toBe(addresses.length);
    for (const a of addresses) expect(a).toMatch(/^127\.0\.3\.\d+$/);
    // What cannot run here is said, not silently missing: TCP echo and coredns.
    expect(backends.skipped.map((s) => s.deployment)).toEqual(
      expect.arrayContaining(['tcp-backend', 'coredns']),
    );
  });

  it('every base Service with a selector has EndpointSlices; each endpoint answers as the pod it names', async () => {
    for (const svc of services) {
      const ns = String(svc.metadata.namespace);
      const name = svc.metadata.name;
      const slices = await slicesOf(ns, name);
      expect(slices.length, `${ns}/${name}`).toBeGreaterThan(0);
      const expectedPods = backends.podsOf(ns, name).map((p) => p.name);
      const endpoints = slices.flatMap((s) => s.endpoints.map((e) => ({ slice: s, e })));
      expect(endpoints.map(({ e }) => e.targetRef.name).sort(), `${ns}/${name}`).toEqual(expectedPods.sort());
      const skipped = backends.skipped.some((s) => s.namespace === ns && s.deployment === name);
      if (!skipped) expect(endpoints.length, `${ns}/${name}`).toBeGreaterThan(0);
      for (const { slice, e } of endpoints) {
        expect(slice.metadata.labels['kubernetes.io/service-name']).toBe(name);
        expect(e.conditions.ready).toBe(true);
        expect(e.targetRef).toMatchObject({ kind: 'Pod', namespace: ns });
        // The slice's ports: the Service's port names, the target ports the pod listens on.
        expect(slice.ports.map((p) => p.name)).toEqual(
          svc.spec.ports.map((p) => (p as { name?: string }).name ?? ''),
        );
        const address = e.addresses[0];
        for (const [i, port] of slice.ports.entries()) {
          const target = svc.spec.ports[i].targetPort;
          const where = `${ns}/${name} port ${port.name || i} at ${address}:${port.port} (${e.targetRef.name})`;
          if (name.startsWith('grpc-')) {
            const res = await grpcEcho(`${address}:${port.port}`, 'Echo');
            expect(res.assertions.context, where).toMatchObject({ namespace: ns, pod: e.targetRef.name });
            continue;
          }
          const reply =
            target === 8443
              ? await http1(`https://${address}:${port.port}/x`, {
                  ca: backends.ca,
                  servername: 'abc.example.com',
                })
              : port.appProtocol === 'kubernetes.io/h2c'
                ? await h2c(`http://${address}:${port.port}/x`)
                : await http1(`http://${address}:${port.port}/x`);
          expect(reply.status, where).toBe(200);
          expect(reply.answer, where).toMatchObject({ path: '/x', namespace: ns, pod: e.targetRef.name });
        }
      }
    }
  });

  it('endpoints() gives where a Service port is served; requests() what its pods received', async () => {
    const eps = backends.endpoints(INFRA, 'infra-backend-v2', 8080);
    expect(eps.map((e) => e.pod).sort()).toEqual(['infra-backend-v2-1', 'infra-backend-v2-2']);
    const before = backends.requests(INFRA, 'infra-backend-v2').length;
    const reply = await http1(`http://${eps[1].address}:${eps[1].port}/counted`);
    expect(reply.answer?.pod).toBe(eps[1].pod);
    const seen = backends.requests(INFRA, 'infra-backend-v2');
    expect(seen).toHaveLength(before + 1);
    expect(seen.at(-1)?.path).toBe('/counted');
    expect(() => backends.endpoints(INFRA, 'no-such-service')).toThrow(/no-such-service/);
  });
});

describe('one echo', () => {
  const at = () => {
    const [e] = backends.endpoints(INFRA, 'infra-backend-v1', 'first-port');
    return { e, url: `http://${e.address}:${e.port}` };
  };

  it('answers HTTP/1.1 with path, host, method, proto, headers (canonical, repeated kept), namespace and pod', async () => {
    const { e, url } = at();
    const reply = await http1(`${url}/some/path?q=1`, {
      method: 'POST',
      headers: { host: 'example.com', 'x-multi': ['a', 'b'], 'x-lower-case': 'v' },
      body: 'hello',
    });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.answer).toMatchObject({
      path: '/some/path?q=1',
      host: 'example.com',
      method: 'POST',
      proto: 'HTTP/1.1',
      namespace: INFRA,
      pod: e.pod,
    });
    expect(reply.answer?.headers['X-Multi']).toEqual(['a', 'b']);
    expect(reply.answer?.headers['X-Lower-Case']).toEqual(['v']);
    expect(reply.answer?.headers['Host']).toBeUndefined();
  });

  it('answers h2c with prior knowledge on the same port', async () => {
    const { e, url } = at();
    const reply = await h2c(`${url}/over-h2c`, { headers: { host: 'h2.example.com', 'x-h2': 'yes' } });
    expect(reply.status).toBe(200);
    expect(reply.answer).toMatchObject({
      path: '/over-h2c',
      host: 'h2.example.com',
      proto: 'HTTP/2.0',
      namespace: INFRA,
      pod: e.pod,
    });
    expect(reply.answer?.headers['X-H2']).toEqual(['yes']);
  });

  it('echoes WebSocket messages on the same port', async () => {
    const { url } = at();
    expect(await wsRoundTrip(`${url.replace('http:', 'ws:')}/ws`, 'ping 1')).toBe('ping 1');
  });

  it("the h2c port (3001) refuses HTTP/1.1 as upstream's does, and answers h2c", async () => {
    const [e] = backends.endpoints(INFRA, 'infra-backend-v1', 'second-port');
    const plain = await http1(`http://${e.address}:${e.port}/`);
    expect(plain.status).toBe(400);
    expect(plain.body).toBe('Expected h2c request');
    const reply = await h2c(`http://${e.address}:${e.port}/`);
    expect(reply.answer).toMatchObject({ proto: 'HTTP/2.0', pod: e.pod });
  });

  it('/status/NNN, ?delay= and X-Echo-Set-Header behave as upstream', async () => {
    const { url } = at();
    expect((await http1(`${url}/status/418`)).status).toBe(418);
    expect((await http1(`${url}/status/abc`)).status).toBe(400);
    const t0 = Date.now();
    const slow = await http1(`${url}/slow?delay=300ms`);
    expect(slow.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect((await http1(`${url}/x?delay=soon`)).status).toBe(500);
    const set = await http1(`${url}/set`, {
      headers: { 'x-echo-set-header': 'X-Foo: one, X-Bar: two, X-Foo: three' },
    });
    expect(set.headers['x-foo']).toBe('one,three');
    expect(set.headers['x-bar']).toBe('two');
  });

  it('the gRPC echo answers Echo and EchoTwo with method, authority and pod; EchoThree is UNIMPLEMENTED', async () => {
    const [e] = backends.endpoints(INFRA, 'grpc-infra-backend-v1');
    const target = `${e.address}:${e.port}`;
    const res = await grpcEcho(target, 'EchoTwo', {
      metadata: { 'x-grpc-test': 'v' },
      authority: 'grpc.example.com',
    });
    expect(res.assertions.fully_qualified_method).toBe(
      '/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/EchoTwo',
    );
    expect(res.assertions.authority).toBe('grpc.example.com');
    expect(res.assertions.headers).toContainEqual({ key: 'x-grpc-test', value: 'v' });
    expect(res.assertions.context).toMatchObject({ namespace: INFRA, pod: e.pod });
    await expect(grpcEcho(target, 'EchoThree')).rejects.toMatchObject({ code: 12 });
  });
});

describe('conformance test files', () => {
  it('apply with the placeholders filled and delete again', async () => {
    const applied = await applyConformanceTest('gateway-modify-listeners', P, backends);
    const gateways = applied.objects.filter((o) => o.kind === 'Gateway');
    expect(gateways.length).toBeGreaterThan(0);
    for (const g of gateways) {
      const got = JSON.parse(
        await ok(['get', 'gateway', '-n', String(g.metadata.namespace), g.metadata.name, '-o', 'json']),
      ) as { spec: { gatewayClassName: string } };
      expect(got.spec.gatewayClassName).toBe(P.gatewayClassName);
    }
    await applied.delete();
    for (const g of gateways) {
      const left = await ok([
        'get',
        'gateway',
        '-n',
        String(g.metadata.namespace),
        g.metadata.name,
        '--ignore-not-found',
        '-o',
        'name',
      ]);
      expect(left.trim()).toBe('');
    }
  });

  it("a file's Service selecting base pods gets their EndpointSlice, removed with the file", async () => {
    const applied = await applyConformanceTest('httproute-service-types', P, backends);
    const slices = await slicesOf(INFRA, 'headless');
    expect(slices.flatMap((s) => s.endpoints.map((e) => e.targetRef.name)).sort()).toEqual([
      'infra-backend-v1-1',
      'infra-backend-v1-2',
    ]);
    // Its own slices (with no endpoints: the upstream test fills them) are applied as written.
    expect((await slicesOf(INFRA, 'manual-endpointslices')).map((s) => s.metadata.name).sort()).toEqual([
      'manual-endpointslices-ip4',
      'manual-endpointslices-ip6',
    ]);
    await applied.delete();
    expect(await slicesOf(INFRA, 'headless')).toEqual([]);
    expect(await slicesOf(INFRA, 'manual-endpointslices')).toEqual([]);
    // The base Service's slice is untouched.
    expect((await slicesOf(INFRA, 'infra-backend-v1')).flatMap((s) => s.endpoints)).toHaveLength(2);
  });

  it('a file that does not exist is an error naming it', () => {
    expect(() => testObjects('httproute-no-such-test', P)).toThrow(/tests\/httproute-no-such-test\.yaml/);
  });
});
