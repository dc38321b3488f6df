/**
 * validateRouteTable: the data plane's check at the door. Whatever the controller believes,
 * a table is only run when this returns no errors; each error names the route (or upstream)
 * id and the field, so the controller can put it on the object that caused it.
 */
import { captureGroups, captureRefsProblem, pathRegexProblem } from './path-regex.ts';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { HANDLER_MANIFESTS, PLUGIN_MANIFESTS } from './catalog.ts';
import { type PluginInstance, RouteTable, Snapshot } from './route-table.ts';
import { arrivedTableHashes, tableHash, unpackTable } from './wire.ts';
import type { ConfigProblem, TableError } from './config-problem.ts';
import type { HandlerSite } from './manifest.ts';
import { endpointProblems } from './endpoints.ts';
import { listenerProblems } from './listeners.ts';
import { regexProblem } from './regex.ts';
import { rewritePathProblem } from './path-grammar.ts';
import { CONFIG_MAX_DEPTH, deeperThan } from './limits.ts';

export type { TableError } from './config-problem.ts';

const checkTable = TypeCompiler.Compile(RouteTable);
const checkSnapshot = TypeCompiler.Compile(Snapshot);
const pluginCheckers = new Map(
  PLUGIN_MANIFESTS.map((m) => [
    m.name as string,
    {
      schema: TypeCompiler.Compile(m.schema),
      checks: m.checks as ((c: unknown) => ConfigProblem[]) | undefined,
    },
  ]),
);
/** Each kind's entry schema: a failed union says only "handler"; the kind named by `type` says which field. */
const handlerSchemas = new Map(
  HANDLER_MANIFESTS.map((m) => [m.kind as string, TypeCompiler.Compile(m.schema)]),
);
const handlerCheckers = new Map(
  HANDLER_MANIFESTS.map((m) => [
    m.kind as string,
    {
      upstreams: m.upstreams as (h: unknown) => { field: string; id: string }[],
      checks: (m as { checks?: (h: unknown, route: HandlerSite) => ConfigProblem[] }).checks,
    },
  ]),
);

/** "/routes/3/plugins/0/config" → { index: 3, field: "plugins[0].config" } */
function splitPointer(pointer: string): { collection?: string; index?: number; field: string } {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let collection: string | undefined;
  let index: number | undefined;
  if (
    (parts[0] === 'routes' ||
      parts[0] === 'upstreams' ||
      parts[0] === 'certificates' ||
      parts[0] === 'listeners') &&
    /^\d+$/.test(parts[1] ?? '')
  ) {
    collection = parts.shift();
    index = Number(parts.shift());
  }
  return { collection, index, field: toField(parts) };
}

export function toField(parts: string[]): string {
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || '(root)';
}

function idOf(table: unknown, collection: string | undefined, index: number | undefined): string | undefined {
  if (collection === undefined || index === undefined) return undefined;
  const entry = (table as Record<string, unknown[]>)[collection]?.[index] as { id?: unknown } | undefined;
  return typeof entry?.id === 'string' ? entry.id : `${collection}[${index}]`;
}

export function validateRouteTable(table: unknown): TableError[] {
  // Optimization: the compiled Check first, Errors (an interpreter walking the schema: ~135 ms
  // for 10,000 routes against ~22 ms) only to describe a table that fails it.
  if (!checkTable.Check(table)) {
    const errors: TableError[] = [];
    const explained = new Set<number>();
    for (const e of checkTable.Errors(table)) {
      const { collection, index, field } = splitPointer(e.path);
      const id = idOf(table, collection, index);
      if (collection === 'routes' && field === 'handler' && index !== undefined) {
        const handler = (table as { routes: { handler?: { type?: unknown } }[] }).routes[index].handler;
        const kind = handlerSchemas.get(String(handler?.type));
        if (kind !== undefined) {
          if (!explained.has(index))
            for (const k of kind.Errors(handler))
              errors.push({
                id,
                field: toField(['handler', ...k.path.split('/').slice(1)]),
                message: k.message,
              });
          explained.add(index);
          continue;
        }
      }
      errors.push({ id, field, message: e.message });
      if (errors.length >= 50) return errors;
    }
    if (errors.length) return errors;
  }
  return checkShaped(table as RouteTable);
}

/**
 * What the schema cannot say: unique ids, known upstreams, URLs, endpoints (endpoints.ts), each
 * plugin's own config schema and checks, each handler's checks, one certificate per host.
 * (Whether a certificate's PEM parses is found when its SecureContext is built:
 * dataplane/tls/certificates.ts.)
 */
function checkShaped(t: RouteTable): TableError[] {
  const errors: TableError[] = [];

  const onListeners = new Set(t.listeners?.flatMap((l) => l.certificates ?? []));
  const certificateIds = new Set<string>();
  if (t.certificates !== undefined) {
    const hostOwner = new Map<string, string>();
    t.certificates.forEach((c, i) => {
      if (certificateIds.has(c.id))
        errors.push({ id: c.id, field: 'id', message: `duplicate certificate id (certificates[${i}])` });
      certificateIds.add(c.id);
      // Listeners' certificates are chosen among each listener's own (listenerProblems).
      if (onListeners.has(c.id)) return;
      c.hosts.forEach((h, j) => {
        const owner = hostOwner.get(h);
        if (owner !== undefined)
          errors.push({ id: c.id, field: `hosts[${j}]`, message: `host ${h} is already served by ${owner}` });
        else hostOwner.set(h, c.id);
      });
    });
  }
  const listenerIds = new Set<string>();
  if (t.listeners !== undefined) errors.push(...listenerProblems(t, certificateIds, listenerIds));

  const upstreamIds = new Set<string>();
  t.upstreams.forEach((u, i) => {
    if (upstreamIds.has(u.id))
      errors.push({ id: u.id, field: 'id', message: `duplicate upstream id (upstreams[${i}])` });
    upstreamIds.add(u.id);
    try {
      const url = new URL(u.url);
      if (url.search || url.hash || url.username || url.password)
        errors.push({ id: u.id, field: 'url', message: 'must not carry a query, fragment or credentials' });
      if (u.protocol === 'h2c' && url.protocol !== 'http:')
        errors.push({ id: u.id, field: 'protocol', message: 'h2c is cleartext: the url must be http://' });
    } catch {
      errors.push({ id: u.id, field: 'url', message: `not a valid URL: ${u.url}` });
    }
    for (const e of endpointProblems(u)) errors.push({ id: u.id, ...e });
  });
  const routeIds = new Set<string>();
  const instanceProblems = new Map<PluginInstance, { path: string[]; message: string }[]>();
  t.routes.forEach((r, i) => {
    if (routeIds.has(r.id))
      errors.push({ id: r.id, field: 'id', message: `duplicate route id (routes[${i}])` });
    routeIds.add(r.id);
    const rewritten = r.rewrite?.path;
    if (rewritten !== undefined) {
      const problem = rewritePathProblem(rewritten.value);
      if (problem) errors.push({ id: r.id, field: 'rewrite.path.value', message: problem });
      if (r.stripPrefix)
        errors.push({
          id: r.id,
          field: 'rewrite.path',
          message: 'stripPrefix is a path rewrite already: give one',
        });
      if (rewritten.type === 'ReplacePrefixMatch' && r.match.path.type !== 'Prefix')
        errors.push({
          id: r.id,
          field: 'rewrite.path.type',
          message: 'ReplacePrefixMatch needs a Prefix match',
        });
      if (rewritten.type === 'ReplaceFullPathWithCaptures') {
        const m = r.match.path;
        const problem =
          m.type !== 'RegularExpression'
            ? 'ReplaceFullPathWithCaptures needs a RegularExpression path match'
            : pathRegexProblem(m.value) === undefined
              ? captureRefsProblem(rewritten.value, captureGroups(m.value))
              : undefined; // the match's own problem is reported below
        if (problem) errors.push({ id: r.id, field: 'rewrite.path', message: problem });
      }
    }
    r.match.headers?.forEach((h, j) => {
      const problem = h.type === 'RegularExpression' ? regexProblem(h.value) : undefined;
      if (problem) errors.push({ id: r.id, field: `match.headers[${j}].value`, message: problem });
    });
    r.match.query?.forEach((q, j) => {
      const problem = q.type === 'RegularExpression' ? regexProblem(q.value) : undefined;
      if (problem) errors.push({ id: r.id, field: `match.query[${j}].value`, message: problem });
    });
    if (r.match.path.type === 'RegularExpression') {
      const problem = pathRegexProblem(r.match.path.value);
      if (problem) errors.push({ id: r.id, field: 'match.path.value', message: problem });
    }
    r.listeners?.forEach((l, j) => {
      if (!listenerIds.has(l))
        errors.push({ id: r.id, field: `listeners[${j}]`, message: `unknown listener ${l}` });
    });
    const handler = handlerCheckers.get(r.handler.type)!;
    for (const u of handler.upstreams(r.handler))
      if (!upstreamIds.has(u.id))
        errors.push({ id: r.id, field: `handler.${u.field}`, message: `unknown upstream ${u.id}` });
    for (const e of handler.checks?.(r.handler, r) ?? [])
      errors.push({ id: r.id, field: e.field ? `handler.${e.field}` : 'handler', message: e.message });
    r.plugins.forEach((p, j) => {
      // Optimization: an unpacked table shares one object per instance (config/wire.ts), so its
      // config is checked once, not once per route (10,000 times for a plugin 5,000 routes share).
      let found = instanceProblems.get(p);
      if (found === undefined) {
        found = pluginProblems(p);
        instanceProblems.set(p, found);
      }
      for (const e of found)
        errors.push({
          id: r.id,
          field: toField(['plugins', String(j), 'config', ...e.path]),
          message: e.message,
        });
    });
  });
  return errors;
}

/** A plugin instance's config problems (path below config): its schema's, else its own checks'. */
function pluginProblems(p: PluginInstance): { path: string[]; message: string }[] {
  const checker = pluginCheckers.get(p.name)!;
  if (!checker.schema.Check(p.config))
    return [...checker.schema.Errors(p.config)].map((e) => ({
      path: e.path.split('/').slice(1),
      message: e.message,
    }));
  return (checker.checks?.(p.config) ?? []).map((e) => ({
    path: e.field ? e.field.split('.') : [],
    message: `${p.name}: ${e.message}`,
  }));
}

/** A snapshot as PUT /config receives it: shape, hash and table. */
export function validateSnapshot(body: unknown): TableError[] {
  // First, so nothing below (the schema's error walk, the canonical JSON of the hash) meets a
  // value deep enough to overflow its stack.
  const deep = deeperThan(body, CONFIG_MAX_DEPTH);
  if (deep !== null)
    return [
      {
        // The first levels of the path: enough to find the place, not 65 of them.
        field: `${toField(deep.slice(0, 8))}…`,
        message: `nests deeper than ${CONFIG_MAX_DEPTH} levels of objects and arrays`,
      },
    ];
  // A pushed table is packed (config/wire.ts): unpacked first, so the rest judges a RouteTable.
  const unpacked = unpackTable((body as { table?: unknown } | null)?.table);
  if (unpacked.length) return unpacked;
  if (!checkSnapshot.Check(body)) {
    const shapeErrors = [...checkSnapshot.Errors(body)].filter((e) => !e.path.startsWith('/table'));
    if (shapeErrors.length)
      return shapeErrors.map((e) => ({ field: toField(e.path.split('/').slice(1)), message: e.message }));
    const table = (body as { table?: unknown }).table;
    return validateRouteTable(table);
  }
  const s = body as Snapshot;
  const errors = checkShaped(s.table); // the table's shape is part of Snapshot's, checked above
  // The table's text as pushed, when it hashes to the claim (config/wire.ts), else the parsed table.
  if (!errors.length && !arrivedTableHashes(s) && tableHash(s.table) !== s.hash)
    errors.push({ field: 'hash', message: 'does not match the sha256 of the canonical JSON of table' });
  return errors;
}
