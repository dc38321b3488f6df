/**
 * The TLS listener asks for a client certificate only while a route of the current snapshot
 * carries mtls-auth: seen by openssl s_client (-msg shows the server's CertificateRequest),
 * before and after a snapshot that adds such a route.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, upstream } from '../helpers/tables.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { certificate, tlsSnapshot } from '../tls/tls-helpers.ts';
import { type ClientPki, makeClientPki, mtlsPlugin } from './client-pki.ts';

const HOST = 'api.example.test';
const run = promisify(execFile);
let serverPki: Pki;
let ca: ClientPki;
let up: Upstream;
let dp: DataPlane;
let port: number;

const snapshotWith = (mtls: boolean) =>
  tlsSnapshot(
    [
      route('plain', 'u', '/plain'),
      ...(mtls
        ? [
            route('m', 'u', '/m', {
              plugins: [mtlsPlugin('m', ca)],
            }),
          ]
        : []),
    ],
    [upstream('u', up.url)],
    [certificate('server', [HOST], serverPki.leaf('server', [HOST]))],
  );

beforeAll(async () => {
  serverPki = makePki();
  ca = makeClientPki();
  up = await startUpstream();
  dp = await startTestDataPlane({ httpsPort: 0, initialSnapshot: snapshotWith(false) });
  port = Number(new URL(dp.httpsUrl).port);
});
afterAll(async () => {
  await dp.close();
  await up.close();
  ca.remove();
  serverPki.remove();
});

async function certificateRequested(): Promise<boolean> {
  const { stdout } = await run('sh', [
    '-c',
    `openssl s_client -connect 127.0.0.1:${port} -servername ${HOST} -CAfile ${serverPki.caFile} -msg </dev/null`,
  ]);
  expect(stdout).toContain('ServerHello');
  return stdout.includes('CertificateRequest');
}

describe('client certificate request on the TLS listener', () => {
  it('is not made without an mtls-auth route, and is once a snapshot adds one', async () => {
    expect(await certificateRequested()).toBe(false);
    expect(dp.holder.apply(snapshotWith(true)).result).toBe('applied');
    expect(await certificateRequested()).toBe(true);
  });
});
