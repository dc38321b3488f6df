/**
 * A grpc route to an https upstream of endpoints: the channel dials the endpoint's address, but
 * the TLS server name, the name the certificate is checked against and the :authority are the
 * url's (the certificate names only svc.test.invalid, never 127.0.0.1). The data plane trusts
 * the test CA through the process's default CA list, set before its first TLS channel (this
 * file runs in its own worker).
 */
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { ServerCredentials } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tableHash } from '../../dataplane/config/wire.ts';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { call, gatewayRoute, rule, snapshotOf } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';

let pki: Pki;
let srv: TestGrpcServer;
let dp: DataPlane;

beforeAll(async () => {
  pki = makePki();
  setDefaultCACertificates([...getCACertificates('default'), pki.ca]);
  const leaf = pki.leaf('svc', ['svc.test.invalid']);
  srv = await startGrpcServer({
    credentials: ServerCredentials.createSsl(null, [
      { cert_chain: Buffer.from(leaf.cert), private_key: Buffer.from(leaf.key) },
    ]),
  });
  dp = await startTestDataPlane();
});

afterAll(async () => {
  await dp?.close();
  await srv?.close();
  pki?.remove();
});

/** Service `name` at `url` (its upstream id follows), its one endpoint the server's address. */
function serve(name: string, url: string): void {
  const built = snapshotOf([
    gatewayRoute(name, url, [rule('get', '/v1/items', 'GetItem', { annotation: true })]),
  ]);
  const t = structuredClone(built.table);
  t.upstreams = t.upstreams.map((u) => ({ ...u, endpoints: [{ address: '127.0.0.1', port: srv.port }] }));
  const s: Snapshot = { hash: tableHash(t), table: t };
  expect(dp.holder.apply(s)).toMatchObject({ result: 'applied' });
}

it('calls the endpoint over TLS checked against the url’s host (not the address), with the url’s :authority', async () => {
  serve('secure', `https://svc.test.invalid:${srv.port}`);
  const r = await call(dp.proxyUrl, '/v1/items/tls-1');
  expect(r.status).toBe(200);
  expect(r.json.itemId).toBe('tls-1');
  expect(srv.authority.GetItem).toBe(`svc.test.invalid:${srv.port}`);

  // The same endpoint behind a url its certificate does not name: refused, no call made.
  serve('other', `https://other.test.invalid:${srv.port}`);
  const refused = await call(dp.proxyUrl, '/v1/items/x');
  expect(refused.status).toBe(503);
  expect(refused.json).toMatchObject({ code: 'SLC_ERR_GRPC_STATUS', grpcStatus: 'UNAVAILABLE' });
  expect(srv.calls.GetItem).toBe(1);
});
