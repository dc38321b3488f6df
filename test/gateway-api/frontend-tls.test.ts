/**
 * Gateway API conformance, client certificate validation on Gateway HTTPS listeners
 * (spec.tls.frontend, GEP-91): our own tests of the upstream suite's (v1.6.1) of the same names
 * and intent, on kapi with the suite's manifests, echo back ends and two data planes (env.ts; on
 * 127.0.6.19/20 with back ends on 127.0.6.N, apart from the other conformance files' runs). The
 * suite's setup makes the client CAs' ConfigMaps and the client certificates: so does this file,
 * with two client CAs of its own (default and per-port). A refused client is one whose request
 * fails (its connection closed), as upstream's MakeTLSRequestAndExpectFailureResponse wants.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClientLeaf, type ClientPki, makeClientPki } from '../auth/client-pki.ts';
import { http1, type RequestOptions } from '../helpers/gateway-api/clients.ts';
import { ok } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/until.ts';
import {
  type Env,
  expectRequest,
  gatewayProgrammed,
  goNameCheck,
  INFRA,
  routeParent,
  startEnv,
} from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
let env: Env;
let defaultCa: ClientPki;
let perPortCa: ClientPki;
let defaultClient: ClientLeaf;
let perPortClient: ClientLeaf;

beforeAll(async () => {
  if (!RUN) return;
  env = await startEnv(
    { gatewayPorts: { first: 23700, last: 23799 } },
    { planes: ['127.0.6.19', '127.0.6.20'], backendPrefix: '127.0.6' },
  );
  defaultCa = makeClientPki('Conformance Default Client CA');
  perPortCa = makeClientPki('Conformance Per-Port Client CA');
  defaultClient = defaultCa.leaf('default-client');
  perPortClient = perPortCa.leaf('per-port-client');
  const configMap = (name: string, ca: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: INFRA },
    data: { 'ca.crt': ca },
  });
  await ok(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        configMap('tls-validity-checks-ca-certificate', defaultCa.ca),
        configMap('tls-validity-checks-per-port-ca-certificate', perPortCa.ca),
      ],
    }),
  );
}, 120_000);
afterAll(async () => {
  await env?.stop();
  defaultCa?.remove();
  perPortCa?.remove();
}, 60_000);

/** HTTPS to `host` (SNI and Host), trusting the suite's CA, with this client certificate. */
const tls = (host: string, client?: ClientLeaf): RequestOptions => ({
  ca: env.backends.ca,
  servername: host,
  checkServerIdentity: goNameCheck,
  headers: { Host: host },
  ...(client && { cert: client.cert, key: client.key }),
});

/** Every data plane refuses the request: its connection is closed, no answer comes. */
async function expectRefused(urls: readonly string[], o: RequestOptions): Promise<void> {
  for (const url of urls) await expect(http1(`${url}/`, o), url).rejects.toThrow();
}

type Cond = { type: string; status: string; reason: string };
/** Waits until a listener of the Gateway has these conditions (a reason of undefined: any). */
async function listenerConditions(
  gateway: string,
  listener: string,
  want: { type: string; status: 'True' | 'False'; reason?: string }[],
): Promise<void> {
  await waitFor(
    `listener ${listener} of ${gateway}: ${want.map((w) => `${w.type} ${w.status} ${w.reason ?? ''}`).join(', ')}`,
    () =>
      env.get<{ status?: { listeners?: { name: string; conditions?: Cond[] }[] } }>(
        'gateway',
        INFRA,
        gateway,
      ),
    (g) => {
      const conds = g?.status?.listeners?.find((l) => l.name === listener)?.conditions ?? [];
      return want.every((w) =>
        conds.some((c) => c.type === w.type && c.status === w.status && (w.reason ?? c.reason) === c.reason),
      );
    },
  );
}

const T = (type: string, reason?: string) => ({ type, status: 'True' as const, reason });
const F = (type: string, reason?: string) => ({ type, status: 'False' as const, reason });

describe('Gateway API: client certificate validation', () => {
  it('GatewayFrontendClientCertificateValidation', async () => {
    await env.withManifest('gateway-with-clientcertificate-validation', async () => {
      const gw = 'client-validation-default';
      await routeParent(env, INFRA, 'client-certificate-validation-https-test', gw);
      await routeParent(env, INFRA, 'client-certificate-validation-https-test-no-hostname', gw, {
        sectionName: 'https-with-hostname',
      });
      await gatewayProgrammed(env, INFRA, gw);
      const byDefault = await env.gatewayUrls(INFRA, gw, 443, 'https');
      const perPort = await env.gatewayUrls(INFRA, gw, 8443, 'https');
      const v1 = { namespace: INFRA, backend: 'infra-backend-v1' };
      const v2 = { namespace: INFRA, backend: 'infra-backend-v2' };
      // The default configuration: port 443 takes the default CA's client, 8443 refuses it.
      await expectRequest(byDefault, '/', v1, tls('example.org', defaultClient));
      await expectRefused(perPort, tls('second-example.org', defaultClient));
      // The per-port configuration: 8443 takes the per-port CA's client, 443 refuses it.
      await expectRequest(perPort, '/', v2, tls('second-example.org', perPortClient));
      await expectRefused(byDefault, tls('example.org', perPortClient));
      // And neither takes a client without a certificate.
      await expectRefused(byDefault, tls('example.org'));
      await expectRefused(perPort, tls('second-example.org'));
    });
  }, 90_000);

  it('GatewayFrontendClientCertificateValidationInsecureFallback', async () => {
    await env.withManifest('gateway-with-clientcertificate-validation-insecure-fallback', async () => {
      const gw = 'client-validation-insecure-fallback';
      await routeParent(env, INFRA, 'client-cert-validation-insecure-fallback-test', gw);
      await routeParent(env, INFRA, 'client-cert-validation-insecure-fallback-test-no-hostname', gw, {
        sectionName: 'https-with-hostname',
      });
      await gatewayProgrammed(env, INFRA, gw);
      const byDefault = await env.gatewayUrls(INFRA, gw, 443, 'https');
      const perPort = await env.gatewayUrls(INFRA, gw, 8443, 'https');
      const v1 = { namespace: INFRA, backend: 'infra-backend-v1' };
      const v2 = { namespace: INFRA, backend: 'infra-backend-v2' };
      // A valid certificate, one of the other CA, or none: all served.
      for (const client of [defaultClient, perPortClient, undefined])
        await expectRequest(byDefault, '/', v1, tls('example.org', client));
      for (const client of [perPortClient, defaultClient, undefined])
        await expectRequest(perPort, '/', v2, tls('second-example.org', client));
    });
  }, 90_000);

  it('GatewayInvalidFrontendClientCertificateValidation', async () => {
    await env.withManifest('gateway-with-invalid-clientcertificate-validation', async () => {
      const gw = 'gateway-with-invalid-client-cert-validation';
      await listenerConditions(gw, 'https', [T('ResolvedRefs'), T('Accepted'), T('Programmed')]);
      for (const [listener, reason] of [
        ['https-unresolved', 'InvalidCACertificateRef'],
        ['https-invalid-kind', 'InvalidCACertificateKind'],
        ['https-grant-missing', 'RefNotPermitted'],
      ])
        await listenerConditions(gw, listener, [
          F('ResolvedRefs', reason),
          F('Accepted', 'NoValidCACertificate'),
          F('Programmed'),
        ]);
    });
  }, 90_000);

  it('GatewayFrontendInvalidDefaultClientCertificateValidation', async () => {
    await env.withManifest('gateway-invalid-default-frontend-client-certificate-validation', async () => {
      const gw = 'invalid-default-client-validation-config';
      // The HTTP listener is not touched by the TLS configuration (its perPort entry included).
      await listenerConditions(gw, 'http', [T('ResolvedRefs'), T('Accepted'), T('Programmed')]);
      const http = await env.gatewayUrls(INFRA, gw, 80);
      await expectRequest(
        http,
        '/',
        { namespace: INFRA, backend: 'infra-backend-v1' },
        {
          headers: { Host: 'example.org' },
        },
      );
      // The HTTPS listener, whose default CA does not exist, is not served.
      await listenerConditions(gw, 'https', [
        F('ResolvedRefs', 'InvalidCACertificateRef'),
        F('Accepted', 'NoValidCACertificate'),
        F('Programmed'),
      ]);
      await expectRefused(await env.gatewayUrls(INFRA, gw, 443, 'https'), tls('example.org'));
    });
  }, 90_000);

  it('a CA bundle changed in its ConfigMap is served without a restart (ConfigMaps are watched)', async () => {
    await env.withManifest('gateway-with-clientcertificate-validation', async () => {
      const gw = 'client-validation-default';
      await gatewayProgrammed(env, INFRA, gw);
      const byDefault = await env.gatewayUrls(INFRA, gw, 443, 'https');
      const v1 = { namespace: INFRA, backend: 'infra-backend-v1' };
      await expectRequest(byDefault, '/', v1, tls('example.org', defaultClient));
      const setDefaultCa = (ca: string) =>
        ok([
          'patch',
          'configmap',
          'tls-validity-checks-ca-certificate',
          '-n',
          INFRA,
          '--type=merge',
          '-p',
          JSON.stringify({ data: { 'ca.crt': ca } }),
        ]);
      await setDefaultCa(perPortCa.ca);
      try {
        await expectRequest(byDefault, '/', v1, tls('example.org', perPortClient));
        await expectRefused(byDefault, tls('example.org', defaultClient));
      } finally {
        await setDefaultCa(defaultCa.ca);
      }
    });
  }, 90_000);
});
