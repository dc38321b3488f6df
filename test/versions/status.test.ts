/**
 * Status of refused versions configurations, k8s-free: the controller's build() over objects as a
 * user applies them. Each refusal is Accepted=False on the GatewayRoute, its message naming the
 * field (Invalid for the object's own rules, Conflicted for a version path another route holds),
 * and the refused GatewayRoute's routes are not in the table while the others' are.
 */
import { describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { parseFiles } from '../../controller/source/file.ts';

const route = (name: string, spec: string, created = '2026-01-01T00:00:00Z') => `
apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: ${name}, creationTimestamp: "${created}" }
spec:
  service: { name: ${name}, url: "http://${name}:8080" }
  routes: [{ name: r, paths: ["/${name}"] }]
${spec}`;

function statusOf(yaml: string, name: string) {
  const loaded = parseFiles([{ file: 'in.yaml', text: yaml }]);
  expect(loaded.diagnostics).toEqual([]);
  const built = build(loaded.resources);
  const accepted = built.status[`GatewayRoute/default/${name}`].conditions.find(
    (c) => c.type === 'Accepted',
  )!;
  const ids = built.snapshot.table.routes.map((r) => r.id);
  return { accepted, ids };
}

describe('versions status', () => {
  it.each([
    [
      'canary weights that do not sum to 100',
      `  versions:
    - name: v1
      path: /v1
      backends: [{ url: "http://a:1", weight: 60 }, { url: "http://b:1", weight: 30 }]`,
      'spec.versions[0].backends: weights sum to 90, not 100',
    ],
    [
      'two versions with the same header value',
      `  versions:
    - { name: v1, header: "1" }
    - { name: v2, header: "1" }`,
      'spec.versions[1].header: "1" is already used by spec.versions[0]',
    ],
    [
      'two versions with the same path (a trailing slash is the same path)',
      `  versions:
    - { name: v1, path: /v1 }
    - { name: v2, path: /v1/ }`,
      'spec.versions[1].path: "/v1/" is already used by spec.versions[0]',
    ],
    [
      'a default naming no version',
      `  versioning: { default: v3 }
  versions: [{ name: v1, path: /v1 }]`,
      'spec.versioning.default: names no version in spec.versions: "v3"',
    ],
    [
      'a sunset before the deprecation date',
      `  versions:
    - name: v1
      path: /v1
      deprecation: { date: "2026-06-01T00:00:00Z", sunset: "2026-01-01T00:00:00Z" }`,
      'spec.versions[0].deprecation.sunset: 2026-01-01T00:00:00Z is before deprecation.date 2026-06-01T00:00:00Z',
    ],
    [
      'a weight out of range (the schema)',
      `  versions:
    - name: v1
      path: /v1
      backends: [{ url: "http://a:1", weight: 150 }, { url: "http://b:1", weight: -50 }]`,
      'spec.versions[0].backends[0].weight',
    ],
  ])('%s is refused: Accepted=False Invalid naming the field', (_what, spec, message) => {
    const { accepted, ids } = statusOf(route('bad', spec) + '\n---\n' + route('good', ''), 'bad');
    expect(accepted).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(accepted.message).toContain(message);
    expect(ids).toEqual(['route/default/good/r/0']);
  });

  it('a version path another (older) route holds is Conflicted, naming spec.versions[i].path', () => {
    const yaml =
      route('legacy', '', '2025-01-01T00:00:00Z').replace('["/legacy"]', '["/v2/api"]') +
      '\n---\n' +
      route('api', '  versions: [{ name: v1, path: /v1 }, { name: v2, path: /v2 }]');
    const { accepted, ids } = statusOf(yaml, 'api');
    expect(accepted).toMatchObject({ status: 'False', reason: 'Conflicted' });
    expect(accepted.message).toMatch(
      /^spec\.versions\[1\]\.path: route\/default\/api\/r\/0\/v2\/path is left out/,
    );
    expect(ids).toEqual(['route/default/legacy/r/0', 'route/default/api/r/0/v1/path']);
  });

  it('a valid versioned route is Accepted', () => {
    const { accepted } = statusOf(route('ok', '  versions: [{ name: v1, path: /v1 }]'), 'ok');
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
  });
});
