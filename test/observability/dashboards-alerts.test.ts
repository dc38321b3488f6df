/**
 * What the chart ships for SREs: the alerts (charts/sluice/files/alerts.yaml) pass `promtool
 * check rules` and `promtool test rules` (alerts.test.yaml: a case per alert), and every metric
 * the Grafana dashboard and the alerts query is one the data plane or the controller exports, so
 * renaming a metric fails here rather than blanking a panel. promtool runs when installed; CI
 * installs it and sets SLUICE_REQUIRE_PROMTOOL=1, so there a missing promtool fails the test.
 * The chart renders both (a ConfigMap labelled for the Grafana sidecar, a PrometheusRule) only
 * when their values switch them on; its rules pass promtool too, carry an absolute runbook_url
 * that lands on a section of docs/runbooks.md, and in standalone mode read no metric only the
 * controller exports (such an alert would always fire there).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import { withPluginMetrics } from '../../dataplane/runtime/declared.ts';
import { CHART, find, type Manifest, PRESETS, ROOT, render } from '../chart/helm.ts';
import { anchorsOf, slug } from '../helpers/markdown.ts';

const FILES = join(CHART, 'files');
const dashboard = JSON.parse(readFileSync(join(FILES, 'dashboard.json'), 'utf8')) as {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
};
interface Rules {
  groups: { name: string; rules: { alert: string; expr: string; annotations: Record<string, string> }[] }[];
}
const alerts = parse(readFileSync(join(FILES, 'alerts.yaml'), 'utf8')) as Rules;
const DEFAULT_RUNBOOKS = 'https://github.com/sluice-dev/sluice/blob/main/docs/runbooks.md';

const rulesOf = (ms: Manifest[]) => find(ms, 'PrometheusRule', 'gw-sluice').spec as Rules;
const alertsOf = (r: Rules) => r.groups.flatMap((g) => g.rules);

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

function promtool(args: string[], cwd = FILES) {
  const run = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
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

  it('each has an absolute runbook_url: a section of a page of the repository that exists', () => {
    const anchors = new Map<string, Set<string>>();
    for (const r of alertsOf(alerts)) {
      const url = new URL(r.annotations.runbook_url);
      expect(url.protocol, r.alert).toBe('https:');
      expect(`${url.origin}${url.pathname}`, r.alert).toBe(DEFAULT_RUNBOOKS);
      // .../blob/main/<path>: the path in this repository.
      const file = join(ROOT, url.pathname.replace(/^\/[^/]+\/[^/]+\/blob\/[^/]+\//, ''));
      expect(existsSync(file), file).toBe(true);
      if (!anchors.has(file)) anchors.set(file, anchorsOf(readFileSync(file, 'utf8')));
      expect(anchors.get(file), r.alert).toContain(url.hash.slice(1));
      expect(url.hash, r.alert).toBe(`#${r.alert.toLowerCase()}`);
    }
    expect(anchors.size).toBe(1);
  });

  it('the anchor check can fail: a heading that is not there is not found', () => {
    const page = anchorsOf(readFileSync(join(ROOT, 'docs', 'runbooks.md'), 'utf8'));
    expect(page.has('sluicehigherrorratio')).toBe(true);
    expect(page.has('sluicehigherrorratios')).toBe(false);
    expect(slug('Alerts and runbooks (v2)')).toBe('alerts-and-runbooks-v2');
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

  it('runbook_url: metrics.prometheusRule.runbookBaseURL + # + the alert, absolute', async () => {
    const ms = await render({
      values: {
        metrics: { prometheusRule: { enabled: true, runbookBaseURL: 'https://wiki.example.com/sre/sluice' } },
      },
    });
    const rules = alertsOf(rulesOf(ms));
    expect(rules.length).toBe(alertsOf(alerts).length);
    for (const r of rules)
      expect(r.annotations.runbook_url).toBe(`https://wiki.example.com/sre/sluice#${r.alert.toLowerCase()}`);
  });

  it('the rendered rules pass promtool check rules, with the standalone preset too', async () => {
    for (const [name, files, count] of [
      ['defaults', [], alertsOf(alerts).length],
      ['standalone', [PRESETS[0]], 4],
    ] as const) {
      const rules = rulesOf(
        await render({ files: [...files], set: { 'metrics.prometheusRule.enabled': 'true' } }),
      );
      const dir = mkdtempSync(join(tmpdir(), 'sluice-rules-'));
      writeFileSync(join(dir, 'rules.yaml'), stringify(rules));
      const run = promtool(['check', 'rules', 'rules.yaml'], dir);
      if (run === null) return;
      expect(run.status, `${name}: ${run.stdout}${run.stderr}`).toBe(0);
      expect(run.stdout, name).toContain(`SUCCESS: ${count} rules found`);
    }
  });

  it('standalone: no alert reads a metric only the controller exports (it would always fire); with a controller they are there', async () => {
    const names = async (registry: { getMetricsAsJSON(): Promise<{ name: string }[]> }) =>
      new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const dataplane = await names(withPluginMetrics(new Metrics({ analyticsConsumers: 1 })).registry);
    const controllerOnly = [...(await names(new ControllerMetrics().registry))].filter(
      (n) => !dataplane.has(n),
    );
    expect(controllerOnly).toContain('sluice_controller_leader');
    const needsController = (r: Rules) =>
      alertsOf(r)
        .filter((a) => metricsIn(a.expr).some((m) => controllerOnly.includes(m)))
        .map((a) => a.alert);
    const on = { 'metrics.prometheusRule.enabled': 'true' };
    const [standalone, production] = await Promise.all([
      render({ files: [PRESETS[0]], set: on }),
      render({ files: [PRESETS[2]], set: on }),
    ]);
    expect(needsController(rulesOf(standalone))).toEqual([]);
    expect(alertsOf(rulesOf(standalone)).map((a) => a.alert)).toContain('SluiceHighErrorRatio');
    expect(needsController(rulesOf(production)).sort()).toEqual([
      'SluiceConfigNotProgrammed',
      'SluiceControllerNotLeading',
    ]);
  });
});
