/**
 * Rotating the admin port's CA (a new CA and certificate in the Secret both the controller and
 * the data plane mount; the chart's admin-tls Secret when it is generated again): the controller
 * re-reads --admin-ca-file when it changes and trusts the old CA for a grace period, the data
 * plane serves the new certificate within its reload interval. In the order that keeps pushing
 * (the controller's copy first) no push fails; in the other, pushes fail only until the
 * controller's copy arrives, and then go through: none is lost. A real Publisher against an
 * in-process data plane over TLS, both reading kubelet-style Secret volumes.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RotatingFile } from '../../bin/lib/rotating-file.ts';
import { Publisher } from '../../controller/publish/publisher.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { SecretVolume } from '../helpers/secret-volume.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { makePki, type Pki } from './pki.ts';
import { handshake } from './tls-helpers.ts';

const NAME = 'gw-sluice-admin.sluice.svc';
let up: Upstream;
let pkis: Pki[];
let dpVolume: SecretVolume;
let ctlVolume: SecretVolume;
let dp: DataPlane;
const v = (n: number) => snapshot([route(`r${n}`, 'u', `/v${n}`)], [upstream('u', up.url)]);
const secret = (pki: Pki) => {
  const leaf = pki.leaf(NAME, [NAME]);
  return { 'tls.crt': readFileSync(leaf.certFile), 'tls.key': readFileSync(leaf.keyFile), 'ca.crt': pki.ca };
};
const until = async (what: string, cond: () => Promise<boolean>, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};
const servedBy = async (pki: Pki) =>
  (await handshake(Number(new URL(dp.adminUrl).port), NAME, pki.ca)).authorized;

/** One publish of snapshot n through a Publisher trusting `ca`: 'applied', or the failure it logged. */
async function push(n: number, ca: () => readonly string[]): Promise<string> {
  let outcome = '';
  const p = new Publisher({
    token: 'test-admin-token',
    tls: { ca, serverName: NAME },
    resyncMs: 3_600_000,
    backoffMs: { base: 60_000, max: 60_000 },
    // A failure is told twice (onPush 'error', then the log line with the cause): the log says why.
    onPush: (r) => {
      if (r !== 'error') outcome ||= r;
    },
    log: (_level, msg, extra) => {
      outcome ||= `${msg}: ${String(extra.err)}`;
    },
  });
  p.setPods([{ key: dp.adminUrl, name: 'pod-0', url: dp.adminUrl }]);
  p.publish(v(n));
  p.setActive(true);
  await until('an outcome', async () => outcome !== '');
  p.stop();
  return outcome;
}

beforeAll(async () => {
  up = await startUpstream();
  pkis = [makePki(), makePki()];
  dpVolume = new SecretVolume(secret(pkis[0]));
  ctlVolume = new SecretVolume({ 'ca.crt': pkis[0].ca });
  dp = await startTestDataPlane({
    adminTls: { certFile: dpVolume.file('tls.crt'), keyFile: dpVolume.file('tls.key') },
    adminTlsReloadMs: 20,
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
  for (const x of [dpVolume, ctlVolume]) x?.remove();
  for (const p of pkis ?? []) p.remove();
});

describe('a new admin CA', () => {
  it("the controller's copy first: it trusts both CAs, every push goes through", async () => {
    const ca = new RotatingFile(ctlVolume.file('ca.crt'));
    expect(await push(1, ca.values)).toBe('applied');
    ctlVolume.update({ 'ca.crt': pkis[1].ca });
    expect(ca.values()).toHaveLength(2);
    expect(await push(2, ca.values)).toBe('applied'); // the pod still serves the old certificate
    dpVolume.update(secret(pkis[1]));
    await until('the new certificate served', () => servedBy(pkis[1]));
    expect(await push(3, ca.values)).toBe('applied');
  });

  it("the data plane's copy first: pushes fail until the controller's copy arrives, then go through", async () => {
    const ca = new RotatingFile(ctlVolume.file('ca.crt'), { graceMs: 0 });
    dpVolume.update(secret(pkis[0]));
    await until('the first certificate served again', () => servedBy(pkis[0]));
    expect(await push(4, ca.values)).toMatch(/failing.*(certificate|self[- ]signed|unable to verify)/i);
    ctlVolume.update({ 'ca.crt': pkis[0].ca });
    expect(await push(5, ca.values)).toBe('applied');
    expect(dp.holder.hash).toBe(v(5).hash);
  });
});
