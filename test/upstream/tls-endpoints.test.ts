/**
 * An https upstream of endpoints: the connection goes to the endpoint's address, but the TLS
 * server name, the name the certificate is checked against and the Host header are the url's.
 * The data plane trusts the test CA through the process's default CA list (this file runs in
 * its own worker).
 */
import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  createSecureContext,
  getCACertificates,
  type SecureContext,
  setDefaultCACertificates,
  type TLSSocket,
} from 'node:tls';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { makePki, type Pki } from '../tls/pki.ts';

let pki: Pki;
let dp: DataPlane;
let server: ReturnType<typeof createServer>;
let port: number;
const seen: { servername: string; host: string }[] = [];
/** Every ClientHello's server name, handshakes the client then refused included. */
const hellos: string[] = [];

beforeAll(async () => {
  pki = makePki();
  setDefaultCACertificates([...getCACertificates('default'), pki.ca]);
  const leaf = pki.leaf('svc', ['svc.test.invalid']);
  const context = createSecureContext({ cert: leaf.cert, key: leaf.key });
  const SNICallback = (name: string, cb: (err: Error | null, ctx: SecureContext) => void) => {
    hellos.push(name);
    cb(null, context);
  };
  server = createServer({ cert: leaf.cert, key: leaf.key, SNICallback }, (req, res) => {
    seen.push({ servername: (req.socket as TLSSocket).servername as string, host: req.headers.host ?? '' });
    res.end('secure');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  dp = await startTestDataPlane();
});
afterAll(async () => {
  await dp.close();
  server.closeAllConnections();
  server.close();
  pki.remove();
});

/** `id`: the controller's ids differ when the url does (a hash of the settings). */
const serve = (id: string, url: string) =>
  expect(
    dp.holder.apply(
      snapshot(
        [route('s', id, '/s')],
        [{ ...upstream(id, url), endpoints: [{ address: '127.0.0.1', port }] }],
      ),
    ).result,
  ).toBe('applied');

it('sends the url’s host as SNI and Host, and checks the certificate against it', async () => {
  serve('u1', 'https://svc.test.invalid:8443');
  const res = await request(`${dp.proxyUrl}/s`);
  expect(res.statusCode).toBe(200);
  expect(await res.body.text()).toBe('secure');
  expect(seen.at(-1)).toEqual({ servername: 'svc.test.invalid', host: 'svc.test.invalid:8443' });
});

it('refuses an endpoint whose certificate does not name the url’s host', async () => {
  serve('u2', 'https://other.test.invalid');
  const res = await request(`${dp.proxyUrl}/s`);
  expect(res.statusCode).toBe(502);
  // The endpoint was reached and asked for the url's name: the certificate is what failed.
  expect(hellos.at(-1)).toBe('other.test.invalid');
  expect(JSON.parse(await res.body.text())).toMatchObject({ code: 'SLC_ERR_UPSTREAM_UNAVAILABLE' });
});
