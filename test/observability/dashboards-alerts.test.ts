/**
 * What the chart ships for SREs: the alerts (charts/sluice/files/alerts.yaml) pass `promtool
 * check rules` and `promtool test rules` (alerts.test.yaml: a case per alert), and every metric
 * the Grafana dashboard and the alerts query is one the data plane or the controller exports, so
 * renaming a metric fails here rather than blanking a panel. promtool runs when installed; CI
 * installs it and sets SLUICE_REQUIRE_PROMTOOL=1, so there a missing promtool fails the test.
 * The chart renders both (a ConfigMap labelled for the Grafana sidecar, a PrometheusRule) only
 * when their values switch them on.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import { withPluginMetrics } from '../../dataplane/runtime/declared.ts';
import { CHART, find, render } from '../chart/helm.ts';

const FILES = join(CHART, 'files');
const dashboard = JSON.parse(readFileSync(join(FILES, 'dashboard.json'), 'utf8')) as {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
};
const alerts = parse(readFileSync(join(FILES, 'alerts.yaml'), 'utf8')) as {
  groups: { rules: { alert: string; expr: string }[] }[];
};

/** Every series name the two registries can expose (histograms as _bucket, _sum and _count). */
async function exportedNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const registry of [
    withPluginMetrics(new Metrics({ analyticsConsumers: 1 })).registry,
    new ControllerMetrics().registry,
  ]) {
    for (const m of await registry.getMetricsAsJSON()) {
      names.add(m.name);
      if (String(m.type) === 'histogram')
        for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s);
    }
  }
  return names;
}

/** The metric names a PromQL expression reads (ours and the process/Node.js standard ones). */
const metricsIn = (expr: string) =>
  [...expr.matchAll(/\b(?:sluice|process|nodejs)_[a-z0-9_]+\b/g)].map((m) => m[0]);

function promtool(args: string[]) {
  const run = spawnSync('promtool', args, { cwd: FILES, encoding: 'utf8' });
  if ((run.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    if (process.env.SLUICE_REQUIRE_PROMTOOL === '1') throw new Error('promtool is not installed');
    console.warn('promtool is not installed: not run (Debian: apt-get install prometheus)');
    return null;
  }
  return run;
}

describe('alerts', () => {
  it('pass promtool check rules', () => {
    const run = promtool(['check', 'rules', 'alerts.yaml']);
    if (run === null) return;
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('SUCCESS: 6 rules found');
  });

  it('pass promtool test rules, with a test case for every alert', () => {
    const cases = parse(readFileSync(join(FILES, 'alerts.test.yaml'), 'utf8')) as {
      tests: { alert_rule_test: { alertname: string }[] }[];
    };
    const tested = new Set(cases.tests.flatMap((t) => t.alert_rule_test.map((a) => a.alertname)));
    expect([...tested].sort()).toEqual(alerts.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort());
    const run = promtool(['test', 'rules', 'alerts.test.yaml']);
    if (run === null) return;
    expect(run.status, run.stdout + run.stderr).toBe(0);
  });

  it('have a runbook in the README under their name', () => {
    const readme = readFileSync(join(CHART, '..', '..', 'README.md'), 'utf8');
    for (const g of alerts.groups)
      for (const r of g.rules) expect(readme, r.alert).toContain(`#### ${r.alert}`);
  });
});

describe('dashboard and alerts read metrics that exist', () => {
  it('every metric a panel or an alert queries is exported by the data plane or the controller', async () => {
    const exported = await exportedNames();
    const queried = [
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => [p.title, t.expr])),
      ...alerts.groups.flatMap((g) => g.rules.map((r) => [r.alert, r.expr])),
    ];
    expect(queried.length).toBeGreaterThan(20);
    const missing = queried.flatMap(([where, expr]) =>
      metricsIn(expr)
        .filter((n) => !exported.has(n))
        .map((n) => `${where}: ${n}`),
    );
    expect(missing).toEqual([]);
  });

  it('the check itself finds a renamed metric', async () => {
    const exported = await exportedNames();
    expect(metricsIn('rate(sluice_request_total[5m])').filter((n) => !exported.has(n))).toEqual([
      'sluice_request_total',
    ]);
  });
});

describe('the chart', () => {
  it('ships neither by default; the switches render the dashboard ConfigMap and the PrometheusRule', async () => {
    const plain = await render({});
    expect(plain.some((m) => m.kind === 'PrometheusRule' || m.metadata.name.endsWith('-dashboard'))).toBe(
      false,
    );
    const on = await render({
      set: { 'metrics.grafanaDashboard.enabled': 'true', 'metrics.prometheusRule.enabled': 'true' },
    });
    const cm = find(on, 'ConfigMap', 'gw-sluice-dashboard');
    expect(cm.metadata.labels?.grafana_dashboard).toBe('1');
    expect(JSON.parse(cm.data['sluice.json'])).toEqual(dashboard);
    const rule = find(on, 'PrometheusRule', 'gw-sluice');
    expect(rule.spec).toEqual(alerts);
  });
});
