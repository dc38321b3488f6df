/**
 * Metric names dashboards can rely on, on both /metrics outputs (the data plane's admin port and
 * the controller's registry, which its /metrics serves as is): the Node.js and process metrics
 * keep prom-client's standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, …:
 * what stock Node.js dashboards query), every other metric is `sluice_`-prefixed, and both pass
 * `promtool check metrics`. promtool runs when it is installed; .ci/run installs it and sets
 * SLUICE_REQUIRE_PROMTOOL=1 so CI fails rather than run without it. Without promtool the same
 * test still checks what promtool would check most often (HELP, TYPE, `_total` on counters only).
 */
import { spawnSync } from 'node:child_process';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControllerMetrics } from '../../controller/metrics.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

/** A few of the names stock Node.js dashboards (e.g. Grafana's "NodeJS Application Dashboard") query. */
const STANDARD = [
  'process_cpu_seconds_total',
  'process_cpu_user_seconds_total',
  'process_resident_memory_bytes',
  'process_start_time_seconds',
  'process_open_fds',
  'nodejs_heap_size_used_bytes',
  'nodejs_heap_size_total_bytes',
  'nodejs_external_memory_bytes',
  'nodejs_eventloop_lag_seconds',
  'nodejs_active_handles_total',
  'nodejs_gc_duration_seconds',
  'nodejs_version_info',
];

/**
 * promtool's findings on prom-client's own standard names, kept as they are: these gauges end in
 * `_total`, and renaming them would break the dashboards the standard names exist for.
 */
const STOCK_FINDINGS = new Set(
  ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'].map(
    (n) => `${n} non-counter metrics should not have "_total" suffix`,
  ),
);

/** Every default metric prom-client registers, by name. */
function defaultNames(): Set<string> {
  const r = new Registry();
  collectDefaultMetrics({ register: r });
  return new Set(r.getMetricsAsArray().map((m) => m.name));
}

/** name → {type, help} from the `# TYPE` and `# HELP` lines. */
function families(text: string): Map<string, { type?: string; help?: string }> {
  const out = new Map<string, { type?: string; help?: string }>();
  for (const line of text.split('\n')) {
    const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (!m) continue;
    const f = out.get(m[2]) ?? {};
    if (m[1] === 'TYPE') f.type = m[3];
    else f.help = m[3];
    out.set(m[2], f);
  }
  return out;
}

let up: Upstream;
let dp: DataPlane;
const scrapes: Record<'dataplane' | 'controller', string> = { dataplane: '', controller: '' };
beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [route('a', 'u', '/a'), route('e', 'e', '/e')],
      // An upstream of endpoints: sluice_upstream_endpoints has samples.
      [
        upstream('u', up.url),
        { ...upstream('e', 'http://svc.test.invalid:8080'), endpoints: [{ address: '127.0.0.1', port: 9 }] },
      ],
    ),
  });
  await request(`${dp.proxyUrl}/a/x`).then((r) => r.body.dump()); // request and upstream series with samples
  scrapes.dataplane = await (await request(`${dp.adminUrl}/metrics`)).body.text();
  const controller = new ControllerMetrics();
  controller.builds.labels('ok').inc();
  controller.buildSeconds.observe(0.01);
  scrapes.controller = await controller.registry.metrics();
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
});

describe.each(['dataplane', 'controller'] as const)('%s /metrics', (which) => {
  it('has the standard Node.js and process names, and sluice_ on every other metric', () => {
    const names = [...families(scrapes[which]).keys()];
    for (const n of STANDARD) expect(names).toContain(n);
    const defaults = defaultNames();
    const ours = names.filter((n) => !defaults.has(n));
    expect(ours.length).toBeGreaterThan(5);
    for (const n of ours) expect(n).toMatch(which === 'controller' ? /^sluice_controller_/ : /^sluice_/);
    // No default metric under a prefix (what sluice_process_*, sluice_controller_nodejs_* were).
    for (const n of ours) expect(defaults.has(n.replace(/^sluice_(controller_)?/, ''))).toBe(false);
  });

  it('names every metric with a HELP and a TYPE, and `_total` on counters only', () => {
    const stockTotals = new Set([...STOCK_FINDINGS].map((f) => f.split(' ')[0]));
    for (const [name, f] of families(scrapes[which])) {
      expect(f.help, name).toMatch(/\S/);
      expect(f.type, name).toMatch(/^(counter|gauge|histogram|summary|untyped)$/);
      expect(name, name).toMatch(/^[a-z_][a-z0-9_]*$/);
      if (f.type === 'counter') expect(name).toMatch(/_total$/);
      else if (!stockTotals.has(name)) expect(name).not.toMatch(/_total$/);
    }
  });

  it('passes promtool check metrics (when promtool is installed; CI installs it)', () => {
    const run = spawnSync('promtool', ['check', 'metrics'], { input: scrapes[which], encoding: 'utf8' });
    if ((run.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
      if (process.env.SLUICE_REQUIRE_PROMTOOL === '1') throw new Error('promtool is not installed');
      // The test above checked the commonest rules; promtool adds the rest.
      console.warn('promtool is not installed: not run (Debian: apt-get install prometheus)');
      return;
    }
    // Exit 3: lint findings only (the text parsed). Anything else is a parse error or worse.
    const findings = `${run.stdout}${run.stderr}`.split('\n').filter((l) => l.trim() !== '');
    expect([0, 3], findings.join('\n')).toContain(run.status);
    expect(findings.filter((f) => !STOCK_FINDINGS.has(f))).toEqual([]);
  });
});
