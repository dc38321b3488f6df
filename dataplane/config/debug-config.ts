/**
 * What GET /debug/config answers, on a data plane's admin port and on the controller's metrics
 * port: the snapshot that runs (or was built), so an operator can diff what runs where, with
 * every value that came from a Secret replaced by REDACTED. What is a Secret's is never guessed
 * from field names: it is what the controller put there from one, by the contract's own
 * declarations: beside each secretKeyRef of a plugin config, the field its manifest's `secrets`
 * names (resolvedSecretField, the one the controller's resolution writes), and each TLS
 * certificate's private key. Certificates themselves are public and stay. The hash is the real
 * snapshot's (GET /config's, the pods'), never one of the redacted text.
 */
import { canonicalJson } from './canonical-json.ts';
import { pluginManifest } from './catalog.ts';
import { resolvedSecretField } from './manifest.ts';
import type { PluginInstance, RouteTable, Snapshot } from './route-table.ts';

export const REDACTED = '<redacted>';

export interface DebugConfig {
  /** The hash of the snapshot as it runs, unredacted. */
  hash: string;
  /** Says the table below is not the one that runs, and what was taken out. */
  redacted: string;
  table: RouteTable;
}

const WHAT_IS_REDACTED =
  `values from Secrets read "${REDACTED}": in plugin configs the field each plugin resolves ` +
  'beside a secretKeyRef (sha256 or value), and certificates[].key; the hash is that of the unredacted snapshot';

export function debugConfig(snapshot: Snapshot): DebugConfig {
  return { hash: snapshot.hash, redacted: WHAT_IS_REDACTED, table: redactTable(snapshot.table) };
}

/**
 * The answer's text: canonical JSON, so the controller's (the table as built) and a pod's (the
 * table as parsed from the wire, keys sorted) read byte for byte alike when they hold the same.
 */
export function debugConfigText(snapshot: Snapshot): string {
  return canonicalJson(debugConfig(snapshot));
}

/** A copy of the table without Secret values; the input is not touched (it is the running one). */
export function redactTable(table: RouteTable): RouteTable {
  return {
    ...table,
    routes: table.routes.map((r) => ({ ...r, plugins: r.plugins.map(redactPlugin) })),
    ...(table.certificates && { certificates: table.certificates.map((c) => ({ ...c, key: REDACTED })) }),
  };
}

function redactPlugin(p: PluginInstance): PluginInstance {
  const field = resolvedSecretField(pluginManifest(p.name));
  return { ...p, config: redactResolved(p.config, field) as PluginInstance['config'] };
}

/** Every object holding a secretKeyRef loses its resolved `field`; everything else is copied as is. */
function redactResolved(v: unknown, field: string): unknown {
  if (Array.isArray(v)) return v.map((x) => redactResolved(x, field));
  if (v === null || typeof v !== 'object') return v;
  const holdsRef = 'secretKeyRef' in v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v))
    out[k] = holdsRef && k === field ? REDACTED : redactResolved(x, field);
  return out;
}
