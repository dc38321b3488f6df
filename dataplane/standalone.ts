/**
 * Standalone mode: the same GatewayRoute / GatewayPlugin / Secret YAML a user would
 * `kubectl apply`, read from files and run through the controller's pure pipeline
 * (validate → compile → snapshot) in this process. The only data-plane file that imports
 * controller/.
 */
import { build } from '../controller/build.ts';
import { loadFiles, STDIN, STDIN_NAME } from '../controller/source/file.ts';
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

/** Why files without a GatewayRoute are not served. */
export const NO_ROUTES =
  'holds no routes (no GatewayRoute): sluice run refuses it, as it would answer 404 to everything';

/**
 * Reads the files (a directory: its *.yaml and *.yml; "-": standard input) and compiles them;
 * problems name the file, the object and the field. An empty file is a problem (file.ts); files
 * that hold objects but no route are one when they are to be served (`serve`: sluice run; not
 * sluice validate, which may check a file of GatewayPlugins alone).
 */
export async function loadConfig(paths: string[], o: { serve?: boolean } = {}): Promise<LoadedConfig> {
  const loaded = await loadFiles(paths);
  const result = build(loaded.resources);
  const toProblem = (d: Parameters<typeof describe>[0] & { field?: string; message: string }) => ({
    where: describe(d, loaded),
    field: d.field,
    message: d.message,
  });
  const notes = loaded.diagnostics.filter((d) => d.ignored).map(toProblem);
  const problems = [...loaded.diagnostics.filter((d) => !d.ignored), ...result.diagnostics].map(toProblem);
  // Serving no route answers 404 to everything: never what files to serve are for. (A pushed
  // snapshot may be empty: the controller's when every GatewayRoute is deleted.)
  if (o.serve && !problems.length && result.snapshot.table.routes.length === 0)
    problems.push({
      where: paths.map((p) => (p === STDIN ? STDIN_NAME : p)).join(', '),
      field: undefined,
      message: NO_ROUTES,
    });
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
