/**
 * A TLS channel, as a user runs it: `sluice run -f` a GatewayRoute whose service is an https://
 * url, the gRPC server's certificate signed by a CA made with openssl (test/tls/pki.ts) that the
 * process trusts through NODE_EXTRA_CA_CERTS, like the proxy's https upstreams. A server the
 * process does not trust is UNAVAILABLE: no call is made in clear text instead.
 */
import { ServerCredentials } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SluiceProcess, startSluice } from '../helpers/processes.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { CATALOG_PROTO } from './catalog.proto.ts';
import { call } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';

let pki: Pki;
let stranger: Pki;
let trusted: TestGrpcServer;
let untrusted: TestGrpcServer;
let sluice: SluiceProcess;

const indent = (text: string, n: number) => text.trimEnd().replaceAll('\n', `\n${' '.repeat(n)}`);

const route = (name: string, port: number) => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: ${name}, namespace: shop }
spec:
  service: { name: ${name}, url: "https://localhost:${port}" }
  routes:
    - name: get
      paths: [/${name}]
      grpc:
        protos:
          - name: shop/v1/catalog.proto
            content: |
              ${indent(CATALOG_PROTO, 14)}
        service: shop.v1.Catalog
        method: GetItem
        pattern: /${name}/{item_id}
`;

beforeAll(async () => {
  pki = makePki();
  stranger = makePki();
  const creds = (p: Pki) => {
    const leaf = p.leaf('localhost', ['localhost']);
    return ServerCredentials.createSsl(null, [
      { cert_chain: Buffer.from(leaf.cert), private_key: Buffer.from(leaf.key) },
    ]);
  };
  trusted = await startGrpcServer({ credentials: creds(pki) });
  untrusted = await startGrpcServer({ credentials: creds(stranger) });
  sluice = await startSluice({
    yaml: `${route('trusted', trusted.port)}---${route('untrusted', untrusted.port)}`,
    env: { NODE_EXTRA_CA_CERTS: pki.caFile },
  });
}, 30_000);

afterAll(async () => {
  await sluice?.stop();
  await trusted?.close();
  await untrusted?.close();
  pki?.remove();
  stranger?.remove();
});

describe('grpc over TLS', () => {
  it('an https service is called over a TLS channel verified against the trusted CA', async () => {
    const r = await call(sluice.proxyUrl, '/trusted/tls-1');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      itemId: 'tls-1',
      price: { currencyCode: 'EUR', units: '9007199254740993' },
    });
    expect(trusted.calls.GetItem).toBe(1);
  });

  it('a certificate from an untrusted CA: 503 UNAVAILABLE, the service never called', async () => {
    const r = await call(sluice.proxyUrl, '/untrusted/x');
    expect(r.status).toBe(503);
    expect(r.json).toMatchObject({ code: 'SLC_ERR_GRPC_STATUS', grpcStatus: 'UNAVAILABLE' });
    expect(untrusted.calls.GetItem ?? 0).toBe(0);
  });
});
