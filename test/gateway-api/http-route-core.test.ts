/**
 * Gateway API conformance, GATEWAY-HTTP core, HTTPRoute: our own tests of the upstream suite's
 * (v1.6.1) of the same names and intent (path match order, weights, redirects, Service types,
 * rules without or with invalid backends, ReferenceGrants, parentRefs that do not attach,
 * observedGeneration), on kapi with the suite's manifests and echo back ends, two data planes
 * and a controller (env.ts). Each applies its manifest, checks the route's status.parents
 * conditions and reasons as the upstream test does, then the traffic on both data planes: which
 * back end answers, or the spec's 500 (Sluice's SLC_ERR_BACKEND_INVALID) for a rule with no
 * valid backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http1, type Reply } from '../helpers/gateway-api/clients.ts';
import { applyObjects, deleteObjects, type KubeObject } from '../helpers/gateway-api/manifests.ts';
import { ok } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/until.ts';
import { type Env, expectRequest, gatewayProgrammed, INFRA, routeParent, startEnv } from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
let env: Env;

beforeAll(async () => {
  // Listener ports of our own: other conformance runs on this machine use 20000–21999.
  if (RUN) env = await startEnv({ gatewayPorts: { first: 22000, last: 22999 } });
}, 120_000);
afterAll(() => env?.stop(), 60_000);

const WEB = 'gateway-conformance-web-backend';
const APP = 'gateway-conformance-app-backend';
const GW = 'same-namespace';
const v = (n: number) => ({ namespace: INFRA, backend: `infra-backend-v${n}` });

/** A rule with no valid backend answers the spec's 500, Sluice's problem SLC_ERR_BACKEND_INVALID. */
async function expectInvalidBackend(urls: readonly string[], path: string): Promise<void> {
  for (const r of await expectRequest(urls, path, { status: 500 }))
    expect(r.body, `${path}: the 500 of an invalid backend`).toContain('SLC_ERR_BACKEND_INVALID');
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  observedGeneration?: number;
}
interface RouteObject {
  metadata: { generation: number };
  status?: { parents?: { controllerName: string; conditions: Condition[] }[] };
}
interface GatewayObject {
  status?: { listeners?: { name: string; attachedRoutes: number }[] };
}

/** The Gateway's first address (status.addresses), as a client would reach it. */
async function gatewayAddress(namespace: string, name: string): Promise<string> {
  type Addressed = { status?: { addresses?: { value: string }[] } };
  const g = await waitFor(
    `Gateway ${namespace}/${name} has an address`,
    () => env.get<Addressed>('gateway', namespace, name),
    (x) => (x?.status?.addresses?.length ?? 0) > 0,
  );
  return g!.status!.addresses![0].value;
}

/** Every listener of the Gateway has attachedRoutes 0 (upstream's GatewayMustHaveZeroRoutes). */
async function gatewayHasZeroRoutes(namespace: string, name: string): Promise<void> {
  await waitFor(
    `Gateway ${namespace}/${name} has no routes attached`,
    () => env.get<GatewayObject>('gateway', namespace, name),
    (g) =>
      (g?.status?.listeners?.length ?? 0) > 0 && g!.status!.listeners!.every((l) => l.attachedRoutes === 0),
  );
}

/** No parent of the route says Accepted True (upstream's HTTPRouteMustHaveNoAcceptedParents). */
async function routeHasNoAcceptedParents(namespace: string, name: string): Promise<void> {
  const route = await env.get<RouteObject>('httproute', namespace, name);
  for (const p of route?.status?.parents ?? [])
    expect(p.conditions.find((c) => c.type === 'Accepted')?.status, JSON.stringify(p)).not.toBe('True');
}

/** Every condition of every parent of Sluice's names the route's current generation. */
function conditionsAreLatest(route: RouteObject | null): boolean {
  const ours = route?.status?.parents?.filter((p) => p.controllerName === env.placeholders.controllerName);
  return (
    ours !== undefined &&
    ours.length > 0 &&
    ours.every((p) => p.conditions.every((c) => c.observedGeneration === route!.metadata.generation))
  );
}

/**
 * Sends `total` requests to `url` (at most `concurrent` at once) and counts which back end
 * (the pod's deployment) answered each; a request answered otherwise than 200 by an echo fails.
 */
async function distribution(url: string, total: number, concurrent: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  let sent = 0;
  const worker = async () => {
    while (sent < total) {
      sent++;
      const r: Reply = await http1(`${url}/`);
      if (r.status !== 200 || r.answer === null) throw new Error(`/: ${r.status} ${r.body.slice(0, 200)}`);
      const backend = r.answer.pod.replace(/-\d+$/, '');
      seen.set(backend, (seen.get(backend) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrent }, worker));
  return seen;
}

describe.skipIf(!RUN)('GATEWAY-HTTP core: HTTPRoute', () => {
  it('HTTPRoutePathMatchOrder', async () => {
    await env.withManifest('httproute-path-match-order', async () => {
      await routeParent(env, INFRA, 'path-matching-order', GW);
      await gatewayProgrammed(env, INFRA, GW);
      const urls = await env.gatewayUrls(INFRA, GW, 80);
      // Exact before any prefix; among prefixes, the longest.
      await expectRequest(urls, '/match/exact/one', v(3));
      await expectRequest(urls, '/match/exact', v(2));
      await expectRequest(urls, '/match', v(1));
      await expectRequest(urls, '/match/prefix/one/any', v(2));
      await expectRequest(urls, '/match/prefix/any', v(1));
      await expectRequest(urls, '/match/any', v(3));
    });
  }, 60_000);

  it('HTTPRouteWeight', async () => {
    await env.withManifest('httproute-weight', async () => {
      await routeParent(env, INFRA, 'weighted-backends', GW);
      const urls = await env.gatewayUrls(INFRA, GW, 80);
      await expectRequest(urls, '/', { status: 200, namespace: INFRA });
      // As upstream: 500 requests, 10 at a time, each back end's share within 5 points of its
      // weight (70, 30, 0); a weight of 0 gets none. On each data plane (each picks on its own).
      const want: Record<string, number> = { 'infra-backend-v1': 0.7, 'infra-backend-v2': 0.3 };
      for (const url of urls) {
        const seen = await distribution(url, 500, 10);
        expect([...seen.keys()].sort(), url).toEqual(Object.keys(want).sort());
        for (const [backend, share] of Object.entries(want))
          expect(Math.abs((seen.get(backend) ?? 0) / 500 - share), `${url}: ${backend}`).toBeLessThanOrEqual(
            0.05,
          );
      }
    });
  }, 90_000);

  it('HTTPRouteRedirectHostAndStatus', async () => {
    await env.withManifest('httproute-redirect-host-and-status', async () => {
      await routeParent(env, INFRA, 'redirect-host-and-status', GW);
      const urls = await env.gatewayUrls(INFRA, GW, 80);
      // The Host a client sends through the Gateway's Service (port 80), as upstream's client
      // does, not the data plane's own port that a test without kube-proxy dials.
      const headers = { Host: `${await gatewayAddress(INFRA, GW)}:80` };
      // The hostname replaced, the rest as requested: scheme http, the listener's port (80, the
      // scheme's own: none written), the same path.
      for (const [path, status] of [
        ['/hostname-redirect', 302],
        ['/host-and-status', 301],
      ] as const)
        for (const r of await expectRequest(urls, path, { status }, { headers }))
          expect(r.headers.location, path).toBe(`http://example.org${path}`);
    });
  }, 60_000);

  it('HTTPRouteServiceTypes', async () => {
    await env.withManifest('httproute-service-types', async () => {
      await routeParent(env, INFRA, 'service-types', GW);
      // As upstream: the Services without a selector get, in their IPv4 EndpointSlices, the
      // endpoints of infra-backend-v1's pods (a headless Service with a selector gets them as
      // any Service does). Pods here may serve on different ports (one taken on that address):
      // those get a slice of their own, as a cluster's controller would give them.
      const endpoints = env.backends.endpoints(INFRA, 'infra-backend-v1', 8080);
      expect(endpoints.length).toBeGreaterThan(0);
      const ports = [...new Set(endpoints.map((e) => e.port))];
      const slices: KubeObject[] = ['manual-endpointslices', 'headless-manual-endpointslices'].flatMap(
        (service) =>
          ports.map((port, i) => ({
            apiVersion: 'discovery.k8s.io/v1',
            kind: 'EndpointSlice',
            // The first is the manifest's own slice, filled in.
            metadata: {
              name: i === 0 ? `${service}-ip4` : `${service}-ip4-${port}`,
              namespace: INFRA,
              labels: { 'kubernetes.io/service-name': service },
            },
            addressType: 'IPv4',
            ports: [{ name: 'first-port', port, protocol: 'TCP' }],
            endpoints: endpoints
              .filter((e) => e.port === port)
              .map((e) => ({
                addresses: [e.address],
                conditions: { ready: true, serving: true, terminating: false },
                targetRef: { kind: 'Pod', namespace: e.namespace, name: e.pod },
              })),
          })),
      );
      await applyObjects(slices);
      const extra = slices.filter((o) => /-ip4-\d+$/.test(o.metadata.name));
      try {
        const urls = await env.gatewayUrls(INFRA, GW, 80);
        for (const path of ['/headless', '/manual-endpointslices', '/headless-manual-endpointslices'])
          await expectRequest(urls, path, v(1));
      } finally {
        await deleteObjects(extra);
      }
    });
  }, 60_000);

  it('HTTPRouteNoBackendRefs', async () => {
    await env.withManifest('httproute-omitted-backendrefs', async () => {
      // No backendRefs is not an unresolved reference: ResolvedRefs and Accepted stay True.
      await routeParent(env, INFRA, 'omitted-backendrefs', GW);
      const urls = await env.gatewayUrls(INFRA, GW, 80);
      await expectRequest(urls, '/forward', v(1));
      await expectInvalidBackend(urls, '/omitted-no-forward');
      await expectInvalidBackend(urls, '/empty-no-forward');
    });
  }, 60_000);

  it('HTTPRouteInvalidNonExistentBackendRef', async () => {
    await env.withManifest('httproute-invalid-nonexistent-backendref', async () => {
      await routeParent(env, INFRA, 'invalid-nonexistent-backend-ref', GW, {
        resolvedRefs: 'BackendNotFound',
      });
      await expectInvalidBackend(await env.gatewayUrls(INFRA, GW, 80), '/');
    });
  }, 60_000);

  it('HTTPRouteInvalidBackendRefUnknownKind', async () => {
    await env.withManifest('httproute-invalid-backendref-unknown-kind', async () => {
      await routeParent(env, INFRA, 'invalid-backend-ref-unknown-kind', GW, { resolvedRefs: 'InvalidKind' });
      await expectInvalidBackend(await env.gatewayUrls(INFRA, GW, 80), '/v2');
    });
  }, 60_000);

  it('HTTPRouteInvalidCrossNamespaceBackendRef', async () => {
    await env.withManifest('httproute-invalid-cross-namespace-backend-ref', async () => {
      await routeParent(env, INFRA, 'invalid-cross-namespace-backend-ref', GW, {
        resolvedRefs: 'RefNotPermitted',
      });
      await expectInvalidBackend(await env.gatewayUrls(INFRA, GW, 80), '/');
    });
  }, 60_000);

  it('HTTPRouteInvalidCrossNamespaceParentRef', async () => {
    await env.withManifest('httproute-invalid-cross-namespace-parent-ref', async () => {
      // same-namespace admits routes of its own namespace only: the route's backend is fine,
      // its parent refuses it.
      await routeParent(env, WEB, 'invalid-cross-namespace-parent-ref', GW, {
        accepted: 'NotAllowedByListeners',
      });
      await routeHasNoAcceptedParents(WEB, 'invalid-cross-namespace-parent-ref');
      await gatewayHasZeroRoutes(INFRA, GW);
    });
  }, 60_000);

  it('HTTPRouteInvalidParentRefNotMatchingSectionName', async () => {
    await env.withManifest('httproute-invalid-parentref-not-matching-section-name', async () => {
      const route = 'httproute-listener-not-matching-section-name';
      await routeParent(env, INFRA, route, GW, { accepted: 'NoMatchingParent', sectionName: 'http1' });
      await routeHasNoAcceptedParents(INFRA, route);
      await gatewayHasZeroRoutes(INFRA, GW);
    });
  }, 60_000);

  it('HTTPRouteInvalidReferenceGrant', async () => {
    await env.withManifest('httproute-invalid-reference-grant', async () => {
      // Each ReferenceGrant misses by one field (its namespace, from group, kind or namespace,
      // to group, kind or name): none permits the reference.
      await routeParent(env, INFRA, 'reference-grant', GW, { resolvedRefs: 'RefNotPermitted' });
      await expectInvalidBackend(await env.gatewayUrls(INFRA, GW, 80), '/');
    });
  }, 60_000);

  it('HTTPRouteReferenceGrant', async () => {
    await env.withManifest('httproute-reference-grant', async () => {
      await routeParent(env, INFRA, 'reference-grant', GW);
      const urls = await env.gatewayUrls(INFRA, GW, 80);
      await expectRequest(urls, '/', { namespace: WEB, backend: 'web-backend' });
    });
  }, 60_000);

  it('HTTPRoutePartiallyInvalidViaInvalidReferenceGrant', async () => {
    await env.withManifest('httproute-partially-invalid-via-invalid-reference-grant', async () => {
      // The grant names app-backend-v1 only: the /v2 rule's backend is refused, the other serves.
      await routeParent(env, INFRA, 'invalid-reference-grant', GW, { resolvedRefs: 'RefNotPermitted' });
      const urls = await env.gatewayUrls(INFRA, GW, 80);
      await expectInvalidBackend(urls, '/v2');
      await expectRequest(urls, '/', { namespace: APP, backend: 'app-backend-v1' });
    });
  }, 60_000);

  it('HTTPRouteObservedGenerationBump', async () => {
    await env.withManifest('httproute-observed-generation-bump', async () => {
      const name = 'observed-generation-bump';
      await routeParent(env, INFRA, name, GW);
      const original = await waitFor(
        `HTTPRoute ${INFRA}/${name}: conditions of the current generation`,
        () => env.get<RouteObject>('httproute', INFRA, name),
        conditionsAreLatest,
      );
      await ok([
        'patch',
        'httproute',
        '-n',
        INFRA,
        name,
        '--type=json',
        '-p',
        JSON.stringify([
          { op: 'replace', path: '/spec/rules/0/backendRefs/0/name', value: 'infra-backend-v2' },
        ]),
      ]);
      await routeParent(env, INFRA, name, GW);
      const updated = await waitFor(
        `HTTPRoute ${INFRA}/${name}: conditions of the generation after the change`,
        () => env.get<RouteObject>('httproute', INFRA, name),
        (r) =>
          r !== null && r.metadata.generation !== original!.metadata.generation && conditionsAreLatest(r),
      );
      expect(updated!.metadata.generation).toBeGreaterThan(original!.metadata.generation);
    });
  }, 60_000);
});
