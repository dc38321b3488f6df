/**
 * docs/reference/ is what the code says today: the CLI pages from each command's --help, the
 * metrics from the registries, the CRD fields from the schemas (test/docs/reference.ts renders
 * them; `make docs` writes them). A flag, metric or field added without `make docs` fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderReference } from './reference.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('docs/reference', async () => {
  const pages = await renderReference();

  it.each(Object.keys(pages))('%s is current (make docs)', (rel) => {
    expect(readFileSync(join(ROOT, rel), 'utf8')).toBe(pages[rel]);
  });

  it('holds every command, the metrics of both roles and every top-level field of the CRDs', () => {
    for (const c of ['run', 'validate', 'dataplane', 'controller', 'migrate', 'crds'])
      expect(pages['docs/reference/cli.md']).toContain(`## sluice ${c}\n`);
    expect(pages['docs/reference/metrics.md']).toMatch(
      /\| `sluice_requests_total` \| counter \| `route`, `method`, `status_class` \|/,
    );
    expect(pages['docs/reference/metrics.md']).toContain('| `sluice_controller_leader` | gauge |');
    for (const f of ['spec.service', 'spec.routes[].paths', 'spec.plugin', 'status.conditions'])
      expect(pages['docs/reference/crds.md']).toContain(`| \`${f}\` |`);
  });
});
