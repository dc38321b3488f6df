/**
 * Gateway API conformance, GATEWAY-HTTP extended: HTTPRouteRetry, our own test of the upstream
 * suite's (v1.6.1) of that name and intent. A rule's `retry` is in the experimental channel only
 * (the standard CRDs prune it), so this file alone runs on the experimental CRDs: it installs them
 * first and puts the standard ones back at its end (a later file's installGatewayApiCrds() would
 * too: it tells the channels apart by their annotation). Its own addresses: data planes on
 * 127.0.10.31 and .32, back ends on 127.0.10.1 and up.
 *
 * The back end (infra-backend-v3, one pod, as upstream's) simulates failures as echo-basic does:
 * the first `succeedAfter` requests with a `uuid` answer `responseCode`. Each case checks the
 * status the client gets and, beyond upstream's check, how many tries the back end saw: 1 + the
 * retries the rule allows, or fewer when one succeeds, and 1 for a code the rule does not list.
 *
 * Sluice's retry budget holds for these retries as for a GatewayRoute's: over the last 10 s, 10
 * retries a second plus 20 % of an upstream's requests (Linkerd's). The cases need 17 retries per
 * data plane within a few seconds, with no other traffic: the 100 a window allow them as they
 * come, as upstream's suite sends them.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http1 } from '../helpers/gateway-api/clients.ts';
import { crdStates, installGatewayApiCrds } from '../helpers/gateway-api/crds.ts';
import { ok } from '../helpers/kubectl.ts';
import { type Env, expectRequest, INFRA, routeParent, startEnv } from './env.ts';

const RUN = process.env.KUBECONFIG !== undefined;
const PLANES = ['127.0.10.31', '127.0.10.32'];
let env: Env;

beforeAll(async () => {
  if (RUN) env = await startEnv({}, { planes: PLANES, backendPrefix: '127.0.10', channel: 'experimental' });
}, 180_000);
afterAll(async () => {
  await env?.stop();
  if (RUN) await installGatewayApiCrds('standard');
}, 120_000);

const V3 = { namespace: INFRA, backend: 'infra-backend-v3' };
const CODE_500 = '/retry/code-500-attempts-3';
const CODE_ALL = '/retry/code-all-attempts-2';

/** Upstream's cases: path, the status the back end fails with and how often, what the client gets, and the tries the back end sees. */
const CASES: { path: string; code: number; succeedAfter: number; status: number; tries: number }[] = [
  { path: CODE_500, code: 500, succeedAfter: 2, status: 200, tries: 3 },
  { path: CODE_500, code: 500, succeedAfter: 4, status: 500, tries: 4 }, // 1 + 3 retries, all failed
  { path: CODE_500, code: 503, succeedAfter: 2, status: 503, tries: 1 }, // 503 is not among its codes
  { path: CODE_ALL, code: 500, succeedAfter: 1, status: 200, tries: 2 },
  { path: CODE_ALL, code: 500, succeedAfter: 3, status: 500, tries: 3 },
  { path: CODE_ALL, code: 502, succeedAfter: 1, status: 200, tries: 2 },
  { path: CODE_ALL, code: 502, succeedAfter: 3, status: 502, tries: 3 },
  { path: CODE_ALL, code: 503, succeedAfter: 1, status: 200, tries: 2 },
  { path: CODE_ALL, code: 503, succeedAfter: 3, status: 503, tries: 3 },
  { path: CODE_ALL, code: 504, succeedAfter: 1, status: 200, tries: 2 },
  { path: CODE_ALL, code: 504, succeedAfter: 3, status: 504, tries: 3 },
];

describe.skipIf(!RUN)('GATEWAY-HTTP extended', () => {
  it('HTTPRouteRetry', async () => {
    await env.withManifest('httproute-retry', async () => {
      await routeParent(env, INFRA, 'retries', 'same-namespace');
      const urls = await env.gatewayUrls(INFRA, 'same-namespace', 80);
      for (const path of [CODE_500, CODE_ALL]) await expectRequest(urls, path, V3);
      await Promise.all(
        urls.map(async (url) => {
          for (const c of CASES) {
            const uuid = randomUUID();
            const query = `?responseCode=${c.code}&succeedAfter=${c.succeedAfter}&uuid=${uuid}`;
            const reply = await http1(`${url}${c.path}${query}`);
            const what = `${url}${c.path} failing ${c.succeedAfter}× with ${c.code}`;
            expect(reply.status, what).toBe(c.status);
            if (c.status === 200) expect(reply.answer?.pod, what).toMatch(/^infra-backend-v3-/);
            const seen = env.backends
              .requests(INFRA, 'infra-backend-v3')
              .filter((r) => r.path.includes(uuid));
            expect(seen.length, `${what}: tries`).toBe(c.tries);
          }
        }),
      );
    });
  }, 120_000);

  it("the standard CRDs back: the channel annotation says so, and a rule's retry is pruned again", async () => {
    await installGatewayApiCrds('standard');
    const states = await crdStates([
      'httproutes.gateway.networking.k8s.io',
      'gateways.gateway.networking.k8s.io',
    ]);
    expect(states.map((s) => [s.name, s.channel, s.established]).sort()).toEqual([
      ['gateways.gateway.networking.k8s.io', 'standard', true],
      ['httproutes.gateway.networking.k8s.io', 'standard', true],
    ]);
    const route = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: pruned-retry, namespace: ${INFRA} }
spec:
  parentRefs: [{ name: same-namespace }]
  rules: [{ retry: { attempts: 2 }, backendRefs: [{ name: infra-backend-v3, port: 8080 }] }]
`;
    // Sent as it is (kubectl's own check would refuse the unknown field): the API server prunes it.
    await ok(['apply', '--validate=ignore', '-f', '-'], route);
    try {
      const rules = await ok([
        'get',
        'httproute',
        'pruned-retry',
        '-n',
        INFRA,
        '-o',
        'jsonpath={.spec.rules}',
      ]);
      expect(JSON.parse(rules)).toEqual([expect.not.objectContaining({ retry: expect.anything() })]);
    } finally {
      await ok(['delete', 'httproute', 'pruned-retry', '-n', INFRA]);
    }
  }, 120_000);
});
