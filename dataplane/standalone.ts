/**
 * Standalone mode: the same GatewayRoute / GatewayPlugin / Secret YAML a user would
 * `kubectl apply`, read from files and run through the controller's pure pipeline
 * (validate → compile → snapshot) in this process. The only data-plane file that imports
 * controller/.
 */
import { build } from '../controller/build.ts';
import { loadFiles } from '../controller/source/file.ts';
import type { Snapshot } from './config/route-table.ts';

export interface FileProblem {
  /** file, or file + object, e.g. "examples/gateway.yaml: GatewayRoute default/charges" */
  where: string;
  field?: string;
  message: string;
}

export interface LoadedConfig {
  snapshot: Snapshot;
  problems: FileProblem[];
  /** Objects of kinds sluice does not own (a Deployment beside the routes): skipped, not a problem. */
  notes: FileProblem[];
}

/**
 * Reads the files (a directory: its *.yaml and *.yml; "-": standard input) and compiles them;
 * problems name the file, the object and the field.
 */
export async function loadConfig(paths: string[]): Promise<LoadedConfig> {
  const loaded = await loadFiles(paths);
  const result = build(loaded.resources);
  const toProblem = (d: Parameters<typeof describe>[0] & { field?: string; message: string }) => ({
    where: describe(d, loaded),
    field: d.field,
    message: d.message,
  });
  const notes = loaded.diagnostics.filter((d) => d.ignored).map(toProblem);
  const problems = [...loaded.diagnostics.filter((d) => !d.ignored), ...result.diagnostics].map(toProblem);
  return { snapshot: result.snapshot, problems, notes };
}

function describe(
  d: { object?: { kind: string; namespace?: string; name: string }; file?: string },
  loaded: Awaited<ReturnType<typeof loadFiles>>,
): string {
  const file = d.file ?? (d.object ? loaded.fileOf?.(d.object) : undefined);
  const obj = d.object ? `${d.object.kind} ${d.object.namespace ?? 'default'}/${d.object.name}` : '';
  return [file, obj].filter(Boolean).join(': ');
}
