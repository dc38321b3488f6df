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
}

/** Reads the files and compiles them; problems name the file, the object and the field. */
export async function loadConfig(paths: string[]): Promise<LoadedConfig> {
  const loaded = await loadFiles(paths);
  const result = build(loaded.resources);
  const problems: FileProblem[] = [...loaded.diagnostics, ...result.diagnostics].map((d) => ({
    where: describe(d, loaded),
    field: d.field,
    message: d.message,
  }));
  return { snapshot: result.snapshot, problems };
}

function describe(
  d: { object?: { kind: string; namespace?: string; name: string }; file?: string },
  loaded: Awaited<ReturnType<typeof loadFiles>>,
): string {
  const file = d.file ?? (d.object ? loaded.fileOf?.(d.object) : undefined);
  const obj = d.object ? `${d.object.kind} ${d.object.namespace ?? 'default'}/${d.object.name}` : '';
  return [file, obj].filter(Boolean).join(': ');
}
