/**
 * The admin port's certificate renewed in place: its Secret updated the kubelet's way (a new
 * ..data directory swapped in), the data plane serves the new certificate to new connections
 * without a restart; a pair that does not load (the new certificate with the old key) is
 * refused and the old certificate kept. In-process data plane, real TLS handshakes.
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { createLogger } from '../../dataplane/observability/log.ts';
import { SecretVolume } from '../helpers/secret-volume.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { makePki, type Pki } from './pki.ts';
import { handshake } from './tls-helpers.ts';

let pki: Pki;
let volume: SecretVolume;
let dp: DataPlane;
const lines: { msg: string }[] = [];
const pair = (name: string) => {
  const leaf = pki.leaf(name, [name]);
  return { 'tls.crt': readFileSync(leaf.certFile), 'tls.key': readFileSync(leaf.keyFile) };
};
const served = async () => {
  const port = Number(new URL(dp.adminUrl).port);
  return (await handshake(port, 'admin.sluice.test', pki.ca)).cert.subject.CN;
};
const until = async (what: string, cond: () => Promise<boolean>, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

beforeAll(async () => {
  pki = makePki();
  volume = new SecretVolume(pair('admin-a'));
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  dp = await startTestDataPlane({
    adminTls: { certFile: volume.file('tls.crt'), keyFile: volume.file('tls.key') },
    adminTlsReloadMs: 20,
    log: createLogger('info', sink),
  });
});
afterAll(async () => {
  await dp?.close();
  volume?.remove();
  pki?.remove();
});

it('serves the renewed certificate to new connections, no restart', async () => {
  expect(await served()).toBe('admin-a');
  volume.update(pair('admin-b'));
  await until('admin-b served', async () => (await served()) === 'admin-b');
  expect(lines.map((l) => l.msg)).toContain('admin certificate changed: serving the new one');
  // The admin API answers over it, checked against the CA for the new name.
  const agent = new Agent({ connect: { ca: pki.ca, servername: 'admin-b' } });
  const r = await request(`${dp.adminUrl}/healthz`, { dispatcher: agent });
  expect(r.statusCode).toBe(200);
  await r.body.dump();
  await agent.close();
});

it('a certificate with a key that is not its own is refused: the served one stays', async () => {
  const b = pair('admin-c');
  volume.update({ 'tls.crt': b['tls.crt'], 'tls.key': pair('admin-d')['tls.key'] });
  await until('the refusal logged', async () =>
    lines.some((l) => l.msg === 'admin certificate changed but does not load: still serving the old one'),
  );
  expect(await served()).toBe('admin-b');
});
