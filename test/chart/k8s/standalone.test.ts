/**
 * The standalone preset's wiring: no controller, no RBAC; the data-plane Deployment runs
 * `sluice run` on the ConfigMap the chart makes of standalone.config. Rendered, applied, the
 * pod run locally as its Deployment says (local-pod.ts): it serves the route at once.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ok } from '../../helpers/kubectl.ts';
import { stopAllSluice } from '../../helpers/processes.ts';
import { startUpstream, type Upstream } from '../../helpers/servers.ts';
import { find, PRESETS, render, renderText, ROOT } from '../helm.ts';
import { startLocalPod } from './local-pod.ts';

const NS = `sluice-chart-alone-${randomBytes(3).toString('hex')}`;
let up: Upstream;

beforeAll(async () => {
  up = await startUpstream();
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'charts/sluice/crds')]);
  await ok(['create', 'namespace', NS]);
});
afterAll(async () => {
  await stopAllSluice();
  await up?.close();
});

it('standalone: the data plane serves standalone.config from its ConfigMap, ready at once', async () => {
  const opts = {
    namespace: NS,
    files: [PRESETS[0]],
    values: {
      standalone: {
        config: `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: alone }
spec:
  service: { name: alone, url: "${up.url}" }
  routes: [{ name: main, paths: ["/alone"] }]
`,
      },
    },
  };
  const manifests = await render(opts);
  expect(manifests.filter((m) => m.kind === 'Deployment').map((m) => m.metadata.name)).toEqual([
    'gw-sluice-dataplane',
  ]);
  await ok(['apply', '-n', NS, '-f', '-'], await renderText(opts));
  const pod = await startLocalPod(
    find(manifests, 'Deployment', 'gw-sluice-dataplane'),
    NS,
    0,
    'readinessProbe',
  );
  expect(pod.args[0]).toBe('run');
  const r = await fetch(pod.url('http', '/alone/1'));
  expect(r.status).toBe(200);
  expect(((await r.json()) as { url: string }).url).toBe('/alone/1');
});
