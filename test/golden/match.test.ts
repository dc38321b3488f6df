/**
 * Golden tests of the data plane's route matching: every test/golden/match/<case>.in.yaml holds
 * `{ table: <RouteTable>, requests: [{ method, target, host?, headers? }] }`. The table must pass
 * validateRouteTable and is built once with buildRuntime; each request is read the way ingress
 * reads it (the target normalized by normalizeTarget, the Host and headers by readIngressHeaders)
 * and matched. The YAML of [{ request, route, chain }] (route: the chosen route id or null;
 * chain: its plugin names in the order they run, then the handler kind; a refused request gives
 * { request, refused: <why> }) must equal <case>.out.yaml.
 *
 * To add a case: write test/golden/match/<behaviour-in-kebab-case>.in.yaml, starting with a
 * comment that says what it shows, its routes in the order the controller's precedence pass
 * would give them (the matcher takes the first that matches); run `make golden`
 * (UPDATE_GOLDEN=1 vitest run test/golden); read the new .out.yaml and check it says what the
 * comment claims; commit both files.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { normalizeTarget } from '../../dataplane/config/path-grammar.ts';
import type { RouteTable } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { createLogger } from '../../dataplane/observability/log.ts';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import { Background } from '../../dataplane/pipeline/background.ts';
import type { RuntimeDeps } from '../../dataplane/pipeline/route.ts';
import { buildRuntime, type Runtime } from '../../dataplane/runtime/build-runtime.ts';
import { readIngressHeaders } from '../../dataplane/server/ingress-headers.ts';
import { Stores } from '../../dataplane/stores/open-stores.ts';
import { PoolRegistry } from '../../dataplane/upstream/pools.ts';
import { expectGolden, toGoldenYaml, UPDATE_GOLDEN } from '../helpers/golden.ts';

interface MatchRequest {
  method: string;
  target: string;
  host?: string;
  headers?: Record<string, string>;
}

const DIR = join(import.meta.dirname, 'match');
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

const pools = new PoolRegistry();
const stores = new Stores();
const deps: RuntimeDeps = {
  log: createLogger('silent'),
  metrics: new Metrics({ processMetrics: false }),
  limits: { maxBodyBytes: 1024 * 1024, replicasHint: 1 },
  accessLog: false,
  stores,
  background: new Background(),
};

afterAll(async () => {
  await pools.closeAll();
  await stores.close();
});

/** What ingress does with a request up to the route lookup (dataplane/server/handle.ts). */
function matchOne(rt: Runtime, request: MatchRequest) {
  const target = normalizeTarget(request.target);
  if ('error' in target) return { request, refused: target.error };
  const rawHeaders = [
    ...(request.host === undefined ? [] : ['Host', request.host]),
    ...Object.entries(request.headers ?? {}).flat(),
  ];
  const ing = readIngressHeaders({ rawHeaders } as IncomingMessage, false);
  if ('error' in ing) return { request, refused: ing.error };
  const route = rt.matcher.match(target.path, request.method, ing.host, ing.headers, target.query);
  return { request, route: route?.id ?? null, chain: route?.chain ?? null };
}

describe('match golden files', () => {
  it.each(cases)('%s', (name) => {
    const input = parse(readFileSync(join(DIR, `${name}.in.yaml`), 'utf8')) as {
      table: RouteTable;
      requests: MatchRequest[];
    };
    expect(validateRouteTable(input.table)).toEqual([]);
    expect(input.requests.length).toBeGreaterThan(0);
    const rt = buildRuntime(`golden-${name}`, input.table, pools, deps);
    try {
      const out = input.requests.map((r) => matchOne(rt, r));
      expectGolden(toGoldenYaml(out), join(DIR, `${name}.out.yaml`));
    } finally {
      rt.close();
    }
  });

  it('every .out.yaml has its .in.yaml', () => {
    if (UPDATE_GOLDEN) return;
    const orphans = readdirSync(DIR).filter(
      (f) => f.endsWith('.out.yaml') && !existsSync(join(DIR, f.replace(/\.out\.yaml$/, '.in.yaml'))),
    );
    expect(orphans).toEqual([]);
  });
});
