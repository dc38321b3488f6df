/**
 * Gateway API conformance, GATEWAY-HTTP core, Gateways and GatewayClasses: our own tests of the
 * upstream suite's (v1.6.1) of the same names and intent, on kapi with the suite's manifests,
 * echo back ends, two data planes and a controller (env.ts). Each applies its manifest and waits
 * for the status upstream checks: the Gateway's conditions with their reasons, each listener's
 * conditions, supportedKinds and attachedRoutes, observedGeneration after a spec change; and,
 * where upstream sends traffic, HTTPS requests with SNI to both data planes.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/until.ts';
import {
  type Env,
  type ExpectedCondition,
  type ExpectedListener,
  expectRequest,
  gatewayCondition,
  gatewayListeners,
  gatewayProgrammed,
  goNameCheck,
  INFRA,
  routeParent,
  startEnv,
} from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
let env: Env;

beforeAll(async () => {
  // Listener ports of our own, apart from the other conformance files' runs on this machine.
  if (RUN) env = await startEnv({ gatewayPorts: { first: 21000, last: 21999 } });
}, 120_000);
afterAll(() => env?.stop(), 60_000);

const T = (type: string, reason?: string): ExpectedCondition => ({ type, status: 'True', reason });
const F = (type: string, reason?: string): ExpectedCondition => ({ type, status: 'False', reason });

/** One listener taking HTTPRoutes, with these conditions and attached routes. */
const httpListener = (
  name: string,
  attachedRoutes: number,
  ...conditions: ExpectedCondition[]
): ExpectedListener => ({
  name,
  supportedKinds: ['HTTPRoute'],
  conditions,
  attachedRoutes,
});

/** Replaces a Gateway's listeners (a merge patch, as upstream's client patch sends). */
async function setListeners(name: string, listeners: unknown[]): Promise<void> {
  await ok([
    'patch',
    'gateway',
    name,
    '-n',
    INFRA,
    '--type',
    'merge',
    '-p',
    JSON.stringify({ spec: { listeners } }),
  ]);
}

/** Whether a TCP connection to the URL's host and port is accepted. */
const connects = (url: string) =>
  new Promise<boolean>((resolve) => {
    const u = new URL(url);
    const socket = connect(Number(u.port), u.hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

interface Generations {
  metadata: { generation: number };
  spec: { listeners: { name: string }[] };
  status?: { conditions?: { type: string; status: string; observedGeneration?: number }[] };
}

describe.skipIf(!RUN)('GATEWAY-HTTP core: Gateways', () => {
  it('GatewayWithAttachedRoutes', async () => {
    await env.withManifest('gateway-with-attached-routes', async () => {
      const ready = [T('Accepted'), T('ResolvedRefs')];
      await gatewayListeners(env, INFRA, 'gateway-with-one-attached-route', [
        httpListener('http', 1, ...ready),
      ]);
      // http-route-not-accepted's hostname does not intersect foo.example.com: not attached.
      await gatewayListeners(env, INFRA, 'gateway-with-two-attached-routes', [
        httpListener('http', 2, ...ready),
      ]);
      await routeParent(env, INFRA, 'http-route-not-accepted', 'gateway-with-two-attached-routes', {
        accepted: 'NoMatchingListenerHostname',
      });
      // A listener whose certificate does not resolve still counts the routes attached to it.
      const unresolved = 'unresolved-gateway-with-one-attached-unresolved-route';
      await gatewayListeners(env, INFRA, unresolved, [
        httpListener('tls', 1, F('Programmed'), F('ResolvedRefs')),
      ]);
      await routeParent(env, INFRA, 'http-route-4', unresolved, { resolvedRefs: 'BackendNotFound' });
    });
  }, 60_000);

  it('GatewayObservedGenerationBump', async () => {
    await env.withManifest('gateway-observed-generation-bump', async () => {
      const name = 'gateway-observed-generation-bump';
      const before = await gatewayCondition(env, INFRA, name, T('Accepted'));
      await gatewayCondition(env, INFRA, name, T('Programmed'));
      const g = await env.get<Generations>('gateway', INFRA, name);
      await setListeners(name, [
        ...(g?.spec.listeners ?? []),
        {
          name: 'alternate',
          hostname: 'foo.com',
          port: 80,
          protocol: 'HTTP',
          allowedRoutes: { namespaces: { from: 'All' } },
        },
      ]);
      const after = await gatewayCondition(env, INFRA, name, T('Accepted'));
      expect(after).not.toBe(before);
      await gatewayListeners(env, INFRA, name, [
        httpListener('http', 0, T('Accepted'), T('ResolvedRefs')),
        httpListener('alternate', 0, T('Accepted'), T('ResolvedRefs')),
      ]);
    });
  }, 60_000);

  it('GatewayInvalidRouteKind', async () => {
    await env.withManifest('gateway-invalid-route-kind', async () => {
      await gatewayListeners(env, INFRA, 'gateway-only-invalid-route-kind', [
        {
          name: 'http',
          supportedKinds: [],
          conditions: [F('ResolvedRefs', 'InvalidRouteKinds')],
          attachedRoutes: 0,
        },
      ]);
      await gatewayListeners(env, INFRA, 'gateway-supported-and-invalid-route-kind', [
        httpListener('http', 0, F('ResolvedRefs', 'InvalidRouteKinds')),
      ]);
    });
  }, 60_000);

  it('GatewayInvalidTLSConfiguration', async () => {
    await env.withManifest('gateway-invalid-tls-configuration', async () => {
      for (const name of [
        'gateway-certificate-nonexistent-secret',
        'gateway-certificate-unsupported-group',
        'gateway-certificate-unsupported-kind',
        'gateway-certificate-malformed-secret',
      ])
        await gatewayListeners(env, INFRA, name, [
          httpListener('https', 0, F('ResolvedRefs', 'InvalidCertificateRef')),
        ]);
    });
  }, 60_000);

  it('GatewayListenerUnsupportedProtocol', async () => {
    await env.withManifest('gateway-invalid-listeners-unsupported-protocol', async () => {
      const invalid: ExpectedListener = {
        name: 'invalid',
        supportedKinds: [],
        conditions: [F('Accepted', 'UnsupportedProtocol')],
        attachedRoutes: 0,
      };
      const only = 'gateway-only-unsupported-protocols';
      await gatewayCondition(env, INFRA, only, F('Accepted', 'ListenersNotValid'));
      await gatewayListeners(env, INFRA, only, [invalid]);
      // One listener served: the Gateway is accepted, and says some of its listeners are not.
      const mixed = 'gateway-supported-and-unsupported-protocols';
      await gatewayCondition(env, INFRA, mixed, T('Accepted', 'ListenersNotValid'));
      await gatewayListeners(env, INFRA, mixed, [
        httpListener('http', 0, T('Accepted', 'Accepted')),
        invalid,
      ]);
    });
  }, 60_000);

  it('GatewayInvalidParametersRef', async () => {
    await env.withManifest('gateway-invalid-parameters-ref', async () => {
      await gatewayCondition(
        env,
        INFRA,
        'gateway-invalid-parameters-ref',
        F('Accepted', 'InvalidParameters'),
      );
    });
  }, 60_000);

  it('GatewayModifyListeners', async () => {
    await env.withManifest('gateway-modify-listeners', async () => {
      const ready = [T('Accepted'), T('ResolvedRefs')];
      // Adding a listener: it takes the route too, and serves it.
      const add = 'gateway-add-listener';
      const before = await gatewayCondition(env, INFRA, add, T('Accepted'));
      const g = await env.get<Generations>('gateway', INFRA, add);
      await setListeners(add, [
        ...(g?.spec.listeners ?? []),
        {
          name: 'http',
          port: 80,
          protocol: 'HTTP',
          hostname: 'data.test.com',
          allowedRoutes: { namespaces: { from: 'All' } },
        },
      ]);
      await gatewayListeners(env, INFRA, add, [
        httpListener('https', 1, ...ready),
        httpListener('http', 1, ...ready),
      ]);
      expect(await gatewayCondition(env, INFRA, add, T('Accepted'))).not.toBe(before);
      const urls = await env.gatewayUrls(INFRA, add, 80);
      const v1 = { namespace: INFRA, backend: 'infra-backend-v1' };
      await expectRequest(urls, '/', v1, { headers: { Host: 'data.test.com' } });
      // Removing one: the other keeps the route; the removed one's port stops answering.
      const remove = 'gateway-remove-listener';
      await gatewayListeners(env, INFRA, remove, [
        httpListener('https', 1, ...ready),
        httpListener('http', 1, ...ready),
      ]);
      const gone = await env.gatewayUrls(INFRA, remove, 443, 'https');
      // Served before: the certificate (the suite's: * and *.org) does not name secure.test.com,
      // so only its chain is checked here.
      const secure = {
        ca: env.backends.ca,
        servername: 'secure.test.com',
        checkServerIdentity: () => undefined,
      };
      await expectRequest(gone, '/', v1, { ...secure, headers: { Host: 'secure.test.com' } });
      const was = await gatewayCondition(env, INFRA, remove, T('Accepted'));
      const r = await env.get<{ spec: { listeners: { name: string }[] } }>('gateway', INFRA, remove);
      expect(r?.spec.listeners).toHaveLength(2);
      await setListeners(
        remove,
        (r?.spec.listeners ?? []).filter((l) => l.name === 'http'),
      );
      await gatewayListeners(env, INFRA, remove, [httpListener('http', 1, ...ready)]);
      expect(await gatewayCondition(env, INFRA, remove, T('Accepted'))).not.toBe(was);
      const left = await env.gatewayUrls(INFRA, remove, 80);
      await expectRequest(left, '/', v1);
      await waitFor(
        `the removed listener's port (${gone.join(', ')}) closed on every data plane`,
        () => Promise.all(gone.map(connects)),
        (open) => open.every((o) => !o),
      );
    });
  }, 60_000);

  it('GatewaySecretInvalidReferenceGrant', async () => {
    await env.withManifest('gateway-secret-invalid-reference-grant', async () => {
      await gatewayListeners(env, INFRA, 'gateway-secret-invalid-reference-grant', [
        httpListener('https', 0, F('ResolvedRefs', 'RefNotPermitted')),
      ]);
    });
  }, 60_000);

  it('GatewaySecretMissingReferenceGrant', async () => {
    await env.withManifest('gateway-secret-missing-reference-grant', async () => {
      await gatewayListeners(env, INFRA, 'gateway-secret-missing-reference-grant', [
        httpListener('https', 0, F('ResolvedRefs', 'RefNotPermitted')),
      ]);
    });
  }, 60_000);

  it('GatewaySecretReferenceGrantAllInNamespace', async () => {
    await env.withManifest('gateway-secret-reference-grant-all-in-namespace', async () => {
      await gatewayListeners(env, INFRA, 'gateway-secret-reference-grant-all-in-namespace', [
        httpListener('https', 0, T('Programmed', 'Programmed'), T('ResolvedRefs')),
      ]);
    });
  }, 60_000);

  it('GatewaySecretReferenceGrantSpecific', async () => {
    await env.withManifest('gateway-secret-reference-grant-specific', async () => {
      await gatewayListeners(env, INFRA, 'gateway-secret-reference-grant-specific', [
        httpListener('https', 0, T('Programmed', 'Programmed'), T('ResolvedRefs')),
      ]);
    });
  }, 60_000);

  it('GatewayClassObservedGenerationBump', async () => {
    await env.withManifest('gatewayclass-observed-generation-bump', async () => {
      const name = 'gatewayclass-observed-generation-bump';
      type Class = Generations;
      const latest = (c: Class | null) =>
        (c?.status?.conditions ?? []).length > 0 &&
        (c?.status?.conditions ?? []).every((x) => x.observedGeneration === c?.metadata.generation);
      const accepted = (c: Class | null) =>
        latest(c) && (c?.status?.conditions ?? []).some((x) => x.type === 'Accepted' && x.status === 'True');
      const get = () => env.get<Class>('gatewayclass', null, name);
      const before = (await waitFor(`GatewayClass ${name} Accepted, of its generation`, get, accepted))!;
      await ok(['patch', 'gatewayclass', name, '--type', 'merge', '-p', '{"spec":{"description":"new"}}']);
      const after = (await waitFor(
        `GatewayClass ${name} Accepted, of its new generation`,
        get,
        (c) => accepted(c) && c!.metadata.generation !== before.metadata.generation,
      ))!;
      for (const c of after.status?.conditions ?? []) {
        const old = before.status?.conditions?.find((o) => o.type === c.type);
        expect(c.observedGeneration, c.type).not.toBe(old?.observedGeneration);
      }
    });
  }, 60_000);

  it('HTTPRouteHTTPSListener', async () => {
    await env.withManifest('httproute-https-listener', async () => {
      const gw = 'same-namespace-with-https-listener';
      await routeParent(env, INFRA, 'httproute-https-test', gw);
      await routeParent(env, INFRA, 'httproute-https-test-no-hostname', gw, {
        sectionName: 'https-with-hostname',
      });
      await gatewayProgrammed(env, INFRA, gw);
      const urls = await env.gatewayUrls(INFRA, gw, 443, 'https');
      // The client names the host in SNI and Host alike, and trusts the suite's CA.
      const tls = (host: string) => ({
        ca: env.backends.ca,
        servername: host,
        checkServerIdentity: goNameCheck,
        headers: { Host: host },
      });
      await expectRequest(urls, '/', { namespace: INFRA, backend: 'infra-backend-v1' }, tls('example.org'));
      await expectRequest(urls, '/', { status: 404 }, tls('unknown-example.org'));
      await expectRequest(
        urls,
        '/',
        { namespace: INFRA, backend: 'infra-backend-v2' },
        tls('second-example.org'),
      );
    });
  }, 60_000);
});
