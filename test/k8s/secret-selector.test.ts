/**
 * The Secrets the controller caches, against a real API server: its label selector
 * (SECRET_LABEL_SELECTOR, the runner's) leaves Helm's release records with the server, listed or
 * arriving by watch, while every other Secret is cached as before.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SECRET_LABEL_SELECTOR } from '../../controller/runner.ts';
import type { KubeObject } from '../../controller/source/informers.ts';
import { Kube, loadKubeConfig } from '../../controller/source/kube.ts';
import { Watched } from '../../controller/source/watched.ts';
import { ok } from '../helpers/kubectl.ts';

const NS = `sluice-secret-types-${randomBytes(3).toString('hex')}`;
const secret = (name: string, type: string, labels = '{}') => `
apiVersion: v1
kind: Secret
metadata: { name: ${name}, labels: ${labels} }
type: ${type}
data: { release: ${Buffer.from(name.repeat(100)).toString('base64')} }
`;
// As Helm 3 writes them: type helm.sh/release.v1, labelled owner=helm (and name, status, version).
const helm = (name: string) =>
  secret(
    name,
    'helm.sh/release.v1',
    `{ owner: helm, name: app, status: deployed, version: "${name.at(-1)}" }`,
  );

let kube: Kube;
beforeAll(async () => {
  kube = new Kube(loadKubeConfig());
  await ok(['create', 'namespace', NS]);
}, 60_000);
afterAll(async () => {
  await ok(['delete', 'namespace', NS, '--wait=false']).catch(() => {});
});

it('Helm release records are never sent; other Secrets are, listed and watched', async () => {
  await ok(
    ['apply', '-n', NS, '-f', '-'],
    [
      secret('api-keys', 'Opaque'),
      secret('tls', 'kubernetes.io/tls'),
      helm('sh.helm.release.v1.app.v1'),
      helm('sh.helm.release.v1.app.v2'),
      secret('labelled', 'Opaque', '{ owner: team-a }'),
    ].join('---'),
  );
  const events: string[] = [];
  const secrets = new Watched<KubeObject>(
    kube,
    'secrets',
    [NS],
    (type, obj) => events.push(`${type} ${obj.metadata.name}`),
    {},
    { labelSelector: SECRET_LABEL_SELECTOR },
  ).start();
  try {
    await secrets.synced;
    const names = () => [...secrets.cache.values()].map((s) => s.metadata.name).sort();
    expect(names()).toEqual(['api-keys', 'labelled', 'tls']);
    // While watching: a new revision's record arrives as nothing; a new Opaque Secret as itself.
    events.length = 0;
    await ok(['apply', '-n', NS, '-f', '-'], helm('sh.helm.release.v1.app.v3'));
    await ok(['apply', '-n', NS, '-f', '-'], secret('more-keys', 'Opaque'));
    for (let i = 0; i < 100 && !events.includes('added more-keys'); i++) await sleep(50);
    expect(events).toEqual(['added more-keys']);
    expect(names()).toEqual(['api-keys', 'labelled', 'more-keys', 'tls']);
  } finally {
    secrets.stop();
  }
}, 60_000);
