/**
 * What oidc and mtls-auth cost the gateway, next to plain TLS proxying, in one run: CPU time of
 * the data plane per GET over TLS (HTTP/1.1), on routes of one listener:
 *   tls           no plugin, kept-alive connections
 *   oidc          an opaque bearer token, its introspection cached (the first request asks the
 *                 provider, oidc-provider in this process; every later one is a cache hit)
 *   mtls          a client certificate, kept-alive connections
 *   tls-resumed   no plugin, a new connection per request resuming its TLS session
 *   mtls-resumed  a client certificate, a new connection per request resuming its TLS session
 * `sluice run` on a config written here (Secrets, GatewayPlugins, a GatewayRoute); the upstream,
 * the provider and the clients (node:https agents) run in this process. Rounds alternate the
 * workloads; each figure is the median CPU µs per request. Printed, never asserted.
 *
 * Usage: node bench/auth.ts [--requests N] [--concurrency C] [--rounds R]
 * (BENCH_PIN=0 keeps every process on the cores it was started on.) Needs 18295-18298 free.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { makeClientPki } from '../test/auth/client-pki.ts';
import { GATEWAY_CLIENT, signingKey, startOidcProvider } from '../test/helpers/oidc-provider.ts';
import { makePki } from '../test/tls/pki.ts';
import { alternate, alternatingArgs, startSluiceRun } from './lib/alternating.ts';
import { pinSelf } from './lib/machine.ts';
import { stopAll, stopEverythingOnExit } from './lib/processes.ts';

const OPTS = alternatingArgs();
const { n: N, concurrency: C, rounds: ROUNDS } = OPTS;
const PORT = 18295; // admin 18296
const HTTPS_PORT = 18297;
const UPSTREAM_PORT = 18298;
const HOST = 'bench.test';

pinSelf();
stopEverythingOnExit();
const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-auth-'));
const upstream = createServer((_req, res) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'),
);
upstream.listen(UPSTREAM_PORT, '127.0.0.1');
const provider = await startOidcProvider([await signingKey('bench')]);
const serverPki = makePki();
const server = serverPki.leaf('bench', [HOST]);
const clientPki = makeClientPki();
const client = clientPki.leaf('bench-client');
const b64 = (s: string) => Buffer.from(s).toString('base64');

writeFileSync(
  join(dir, 'auth.yaml'),
  `apiVersion: v1
kind: Secret
metadata: { name: auth, namespace: default }
data:
  client-secret: ${b64(GATEWAY_CLIENT.secret)}
  ca.pem: ${b64(clientPki.ca)}
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: oidc, namespace: default }
spec:
  plugin: oidc
  oidc:
    issuer: ${provider.issuer}
    audiences: ["urn:orders:opaque"]
    algorithms: [RS256]
    introspection:
      clientId: ${GATEWAY_CLIENT.id}
      clientSecret: { secretKeyRef: { name: auth, key: client-secret } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayPlugin
metadata: { name: mtls, namespace: default }
spec:
  plugin: mtls-auth
  mtlsAuth: { caBundle: { secretKeyRef: { name: auth, key: ca.pem } } }
---
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: bench, namespace: default }
spec:
  service: { name: bench, url: "http://127.0.0.1:${UPSTREAM_PORT}" }
  routes:
    - { name: plain, paths: ["/plain"] }
    - { name: oidc, paths: ["/oidc"], plugins: [{ name: oidc }] }
    - { name: mtls, paths: ["/mtls"], plugins: [{ name: mtls }] }
`,
);
const gateway = await startSluiceRun(join(dir, 'auth.yaml'), PORT, dir, [
  '--https-port',
  String(HTTPS_PORT),
  '--tls-default-cert',
  server.certFile,
  '--tls-default-key',
  server.keyFile,
]);
const token = await provider.token('urn:orders:opaque');

const tls = { ca: serverPki.ca, servername: HOST };
const withCert = { ...tls, cert: client.cert, key: client.key };
const kept = (o: object) => new Agent({ ...o, keepAlive: true, maxSockets: C });
/** A new connection per request; the agent keeps each TLS session to resume it. */
const resumed = (o: object) => new Agent({ ...o, keepAlive: false, maxCachedSessions: 10 });
const agents = {
  tls: kept(tls),
  oidc: kept(tls),
  mtls: kept(withCert),
  'tls-resumed': resumed(tls),
  'mtls-resumed': resumed(withCert),
};
const sessions = { resumed: 0, fresh: 0 };

function get(agent: Agent, path: string, headers: Record<string, string> = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: HTTPS_PORT, path, agent, headers: { host: HOST, ...headers } },
      (res) => {
        res.resume();
        res.once('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`GET ${path}: ${res.statusCode}`)),
        );
      },
    );
    req.once('socket', (s) => {
      if (!req.reusedSocket)
        s.once('secureConnect', () => sessions[(s as TLSSocket).isSessionReused() ? 'resumed' : 'fresh']++);
    });
    req.once('error', reject);
    req.end();
  });
}

const WORK = {
  tls: () => get(agents.tls, '/plain'),
  oidc: () => get(agents.oidc, '/oidc', { authorization: `Bearer ${token}` }),
  mtls: () => get(agents.mtls, '/mtls'),
  'tls-resumed': () => get(agents['tls-resumed'], '/plain'),
  'mtls-resumed': () => get(agents['mtls-resumed'], '/mtls'),
} as const;

try {
  const r = await alternate(gateway, WORK, OPTS);
  const line = (name: string, v: number) =>
    console.log(`  ${name.padEnd(44)}${v.toFixed(1).padStart(8)}  ${(v / r.tls).toFixed(2)}×`);
  console.log(
    `\nCPU of the data plane, µs per request (median of ${ROUNDS} rounds of ${N}, concurrency ${C}):`,
  );
  line('plain TLS proxying, kept-alive (tls)', r.tls);
  line('oidc, cached introspection (oidc)', r.oidc);
  line('mtls-auth, kept-alive (mtls)', r.mtls);
  line('plain TLS, session resumed (tls-resumed)', r['tls-resumed']);
  line('mtls-auth, session resumed (mtls-resumed)', r['mtls-resumed']);
  console.log(`  (resumed / full handshakes seen by the clients: ${sessions.resumed} / ${sessions.fresh})`);
  console.log(
    `  mtls-resumed / tls-resumed                  ${(r['mtls-resumed'] / r['tls-resumed']).toFixed(2)}×`,
  );
} finally {
  for (const a of Object.values(agents)) a.destroy();
  await stopAll();
  await provider.stop();
  upstream.close();
  serverPki.remove();
  clientPki.remove();
}
