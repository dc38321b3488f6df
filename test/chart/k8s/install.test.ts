/**
 * helm 3.6.2 itself against the API server: install refuses a wrong value naming the field;
 * install prints NOTES with the first curl line; upgrade keeps the generated admin token
 * (lookup reads it back) instead of rotating it under running pods.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { ok } from '../../helpers/kubectl.ts';
import { CHART, helm, PRESETS } from '../helm.ts';

const NS = `sluice-chart-helm-${randomBytes(3).toString('hex')}`;
const token = async () =>
  JSON.parse(await ok(['get', 'secret', 'gw-sluice-admin-token', '-n', NS, '-o', 'json'])).data
    .token as string;

afterAll(async () => {
  await helm(['uninstall', 'gw', '-n', NS]);
});

it('helm install refuses a wrong value type, naming the field, and installs nothing', async () => {
  const r = await helm([
    'install',
    'bad',
    CHART,
    '-n',
    NS,
    '--create-namespace',
    '--set',
    'controller.replicas=many',
  ]);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/controller\.replicas: Invalid type\. Expected: integer, given: string/);
  expect((await helm(['list', '-n', NS, '-q'])).stdout.trim()).toBe('');
});

it('helm install prints the first curl line; helm upgrade keeps the admin token', async () => {
  const installed = await helm(['install', 'gw', CHART, '-n', NS, '--create-namespace', '-f', PRESETS[1]]);
  expect(installed.code, installed.stderr).toBe(0);
  expect(installed.stdout).toContain('kubectl port-forward -n');
  expect(installed.stdout).toMatch(/curl -i http:\/\/127\.0\.0\.1:8080\/anything/);
  const first = await token();
  expect(Buffer.from(first, 'base64').toString()).toMatch(/^[A-Za-z0-9]{48}$/);
  const upgraded = await helm([
    'upgrade',
    'gw',
    CHART,
    '-n',
    NS,
    '-f',
    PRESETS[1],
    '--set',
    'dataplane.logLevel=debug',
  ]);
  expect(upgraded.code, upgraded.stderr).toBe(0);
  expect(await token()).toBe(first);
});
