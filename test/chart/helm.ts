/**
 * The real helm (node_modules/.bin/helm, v3.6.2: the oldest Helm the chart supports) on the
 * chart: lint, template, and the rendered manifests parsed into objects.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';

export const ROOT = join(import.meta.dirname, '..', '..');
export const CHART = join(ROOT, 'charts', 'sluice');
export const HELM = join(ROOT, 'node_modules', '.bin', 'helm');
export const PRESETS = ['standalone', 'small', 'production', 'kind'].map((p) =>
  join(ROOT, 'helm', `${p}.yaml`),
);

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export function helm(args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(HELM, args, { timeout: 30_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code) || 1 : 0, stdout, stderr }),
    );
  });
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // biome-ignore lint/suspicious/noExplicitAny: rendered manifests are read field by field in tests
  [key: string]: any;
}

export interface RenderOptions {
  /** Values files, in order. */
  files?: string[];
  /** Values as an object, written to a file given after `files` (what --set cannot say, like []). */
  values?: object;
  /** --set-json is not in Helm 3.6: --set and --set-string pairs. */
  set?: Record<string, string>;
  namespace?: string;
  release?: string;
}

/** A values object as a file, for -f. */
export function valuesFile(values: object): string {
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-values-')), 'values.yaml');
  writeFileSync(file, stringify(values));
  return file;
}

export function templateArgs(o: RenderOptions = {}): string[] {
  const files = [...(o.files ?? []), ...(o.values ? [valuesFile(o.values)] : [])];
  return [
    'template',
    o.release ?? 'gw',
    CHART,
    '--namespace',
    o.namespace ?? 'sluice',
    ...files.flatMap((f) => ['-f', f]),
    ...Object.entries(o.set ?? {}).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
  ];
}

/** helm template, as text; throws with helm's message on failure. */
export async function renderText(o: RenderOptions = {}): Promise<string> {
  const r = await helm(templateArgs(o));
  if (r.code !== 0) throw new Error(`helm template failed (${r.code}):\n${r.stderr}`);
  return r.stdout;
}

/** helm template, parsed: every non-empty document. */
export async function render(o: RenderOptions = {}): Promise<Manifest[]> {
  return parseAllDocuments(await renderText(o))
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

export function find(ms: Manifest[], kind: string, name: string): Manifest {
  const m = ms.find((x) => x.kind === kind && x.metadata.name === name);
  if (m === undefined)
    throw new Error(`no ${kind} ${name} in: ${ms.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return m;
}
