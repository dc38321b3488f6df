/**
 * THE layer table of the data plane, lowest first. One source for two readers: the import-graph
 * test checks every import against it, and docs/architecture.md shows it
 * (`make docs` writes it there; layer-table.test.ts fails when the two differ).
 */
export interface Layer {
  /**
   * What sits on this layer, as paths under dataplane/: a folder ('config/'), a file ('main.ts'),
   * or one file of every folder of a folder ('plugins/<name>/manifest.ts': `<…>` is one segment).
   */
  parts: readonly string[];
  /**
   * The parts import one another freely (one whole): the contract, whose catalog lists the
   * manifests and whose manifests use its grammars. Otherwise a part imports only itself and
   * lower layers.
   */
  whole?: true;
  /** What it holds, for docs/architecture.md. */
  holds: string;
}

export const LAYERS: readonly Layer[] = [
  {
    parts: ['config/', 'plugins/<name>/manifest.ts', 'handlers/<kind>/manifest.ts'],
    whole: true,
    holds:
      'the contract: route table schema, `validateRouteTable`, the catalog, the path and HTTP grammars, and ' +
      "each plugin's and handler kind's manifest (plain data: name, phase, schema, checks, needs)",
  },
  {
    parts: ['errors/', 'observability/', 'tls/'],
    holds: "every error code once and its one renderer; metrics and logger; the TLS listener's settings",
  },
  { parts: ['stores/'], holds: 'idempotency and rate-limit stores, Redis and memory' },
  {
    parts: ['upstream/'],
    holds:
      'pools, `call.ts` (the one upstream call: timeouts, deadline, retries and budget, breaker, metrics), ' +
      'bodies, end-to-end response headers',
  },
  {
    parts: ['pipeline/'],
    holds: 'the request context, `run-chain.ts` (the one chain runner), phases, finishing a request',
  },
  {
    parts: ['plugins/', 'handlers/'],
    holds:
      'one folder per plugin and per terminal handler kind (`index.ts`: what it does), which never ' +
      'import each other',
  },
  {
    parts: ['runtime/'],
    holds:
      '`buildRuntime`, the router, the registry (each manifest mapped to its implementation), the holder ' +
      'that swaps runtimes',
  },
  {
    parts: ['server/', 'state/'],
    holds:
      'the proxy port (bare node:http), ingress, WebSocket upgrades, the admin port (fastify); the last ' +
      'good snapshot on disk',
  },
  {
    parts: ['main.ts', 'standalone.ts'],
    holds: "one data plane's wiring; file mode (the one data-plane file that imports `controller/`)",
  },
  {
    parts: ['cluster/'],
    holds:
      '`--workers N`: the primary (admin port, state, configuration to every worker, restarts, summed ' +
      "metrics) and the worker's side of IPC",
  },
];

/** Where a file of dataplane/ sits: its layer (0 lowest) and the part it belongs to. */
export interface Place {
  layer: number;
  /** Imports inside one part (or one whole layer) are free. */
  part: string;
}

const matches = (part: string, path: string): boolean => {
  if (!part.includes('<')) return part.endsWith('/') ? path.startsWith(part) : path === part;
  const pattern = part.replace(/[.]/g, '\\.').replace(/<[^>]+>/g, '[^/]+');
  return new RegExp(`^${pattern}$`).test(path);
};

/** `path` relative to dataplane/; the first part that matches, lowest layer first; undefined when none does. */
export function placeOf(path: string, layers: readonly Layer[] = LAYERS): Place | undefined {
  for (const [layer, l] of layers.entries())
    for (const part of l.parts)
      if (matches(part, path)) return { layer, part: l.whole ? l.parts.join(' ') : part };
  return undefined;
}
