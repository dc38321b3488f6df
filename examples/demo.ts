/**
 * `make run`: the sample upstreams and the gateway in standalone mode on examples/gateway.yaml,
 * as two child processes' worth of work in one: upstreams in-process, the gateway through the
 * real CLI (so what runs is exactly what a user runs). Ctrl-C stops both.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startSoapService } from './soap-service.ts';
import { startGrpcUpstream } from './grpc-upstream.ts';
import { startSampleUpstreams } from './upstreams.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const port = Number(process.env.SLUICE_PORT ?? 8080);
const adminPort = Number(process.env.SLUICE_ADMIN_PORT ?? 9901);

const upstreams = await startSampleUpstreams(3001);
const soapService = await startSoapService(3005);
const grpcUpstream = await startGrpcUpstream(3006);
const gateway = spawn(
  process.execPath,
  [
    'bin/sluice.ts',
    'run',
    '-f',
    'examples/gateway.yaml',
    '--port',
    String(port),
    '--admin-port',
    String(adminPort),
    '--host',
    '127.0.0.1',
    '--admin-token',
    process.env.SLUICE_ADMIN_TOKEN ?? 'demo-token',
    '--log-level',
    process.env.SLUICE_LOG_LEVEL ?? 'warn',
  ],
  { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] },
);

const gw = `http://127.0.0.1:${port}`;
// A fresh key per run: the demo's records live in memory, but a user may point it at Redis (SLUICE_REDIS_URL).
const KEY = randomUUID();
for (let i = 0; i < 100; i++) {
  const ok = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
    (r) => r.ok,
    () => false,
  );
  if (ok) break;
  if (gateway.exitCode !== null) process.exit(gateway.exitCode);
  await new Promise((r) => setTimeout(r, 100));
}

process.stdout.write(`
Sluice is running: proxy ${gw}, admin http://127.0.0.1:${adminPort} (token: demo-token)
Sample upstreams: charges :3001, users :3002, orders :3003, preferences :3004, SOAP orders :3005,
gRPC catalog :3006

Try:
  curl -i -X POST ${gw}/charges -H 'content-type: application/json' -d '{"amount":100,"currency":"EUR"}'
  curl -i ${gw}/charges/ch_1

  # Idempotency: run this twice; the second answer is the first one replayed (Idempotent-Replayed: true)
  curl -i -X POST ${gw}/charges -H 'Authorization: Bearer demo-client' -H 'Idempotency-Key: ${KEY}' \\
       -H 'content-type: application/json' -d '{"amount":250,"currency":"EUR"}'
  # the same key with another body: 422, nothing runs
  curl -i -X POST ${gw}/charges -H 'Authorization: Bearer demo-client' -H 'Idempotency-Key: ${KEY}' \\
       -H 'content-type: application/json' -d '{"amount":999,"currency":"EUR"}'

  curl -s ${gw}/users/42
  curl -s ${gw}/orders/42
  curl -s ${gw}/preferences/42
  curl -s ${gw}/api/user-profile/42            # aggregate: user, orders, preferences in one JSON
  # REST to SOAP: JSON in, a SOAP 1.1 CreateOrder call, JSON out (customer "bad": a client fault, 422)
  curl -s -X POST ${gw}/api/orders -H 'content-type: application/json' \\
       -d '{"customer":"alice","item":{"sku":"A-1","qty":2},"note":"<b>gift</b>"}'
  curl -s ${gw}/v1/items/42                    # REST to gRPC: shop.v1.Catalog/GetItem as JSON
  curl -i ${gw}/v1/items/missing               # its NOT_FOUND: a 404 problem
  curl -s -X POST ${gw}/v1/shelves/top/items -H 'content-type: application/json' -d '{"displayName":"Mug"}'
  curl -i ${gw}/nowhere                        # 404 problem+json
  curl -i '${gw}/charges/%2e%2e%2fadmin'       # 400: encoded "/" refused
  curl -s http://127.0.0.1:${adminPort}/config
  curl -s http://127.0.0.1:${adminPort}/metrics | grep sluice_requests_total

Ctrl-C to stop.
`);

const stop = () => {
  gateway.kill('SIGTERM');
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
gateway.on('exit', async (code) => {
  await upstreams.close();
  await soapService.close();
  await grpcUpstream.close();
  process.exit(code ?? 0);
});
