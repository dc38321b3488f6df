/** The proxy bench's targets and scenarios: what runs, what it must answer, and how to wait for it. */
import { join } from 'node:path';
import { CHARGE_BODY, CHARGE_REQUEST, GET_PATH, ITEM_BODY, PORTS, POST_PATH } from '../fixtures.ts';
import { http, waitReady as waitAnswer } from '../lib/http.ts';
import { NODE, SLUICE_NODE_FLAGS } from '../lib/machine.ts';
import type { Proc } from '../lib/processes.ts';

export const UPSTREAM_URL = `http://127.0.0.1:${PORTS.upstream}`;

export type Scenario = 'get' | 'post';
export const SCENARIOS: Record<
  Scenario,
  { title: string; method: string; path: string; body: string | null; expect: string }
> = {
  get: { title: `GET ${GET_PATH}`, method: 'GET', path: GET_PATH, body: null, expect: ITEM_BODY },
  post: {
    title: `POST ${POST_PATH} (${Buffer.byteLength(CHARGE_REQUEST)}-byte JSON body)`,
    method: 'POST',
    path: POST_PATH,
    body: CHARGE_REQUEST,
    expect: CHARGE_BODY,
  },
};

export interface Target {
  name: string;
  port: number;
  /** argv; run from the repository root, pinned to TARGET_CORE when taskset exists. */
  cmd: string[];
  env?: Record<string, string>;
  /** Extra ports the target listens on (checked free first). */
  extraPorts?: number[];
}

export function builtinTargets(work: string): Target[] {
  const sluice = (name: string, port: number, yaml: string): Target => ({
    name,
    port,
    extraPorts: [PORTS.admin],
    cmd: [
      NODE,
      ...SLUICE_NODE_FLAGS,
      'bin/sluice.ts',
      'run',
      '-f',
      yaml,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--admin-host',
      '127.0.0.1',
      '--admin-port',
      String(PORTS.admin),
      '--no-access-log',
      '--log-level',
      'warn',
      '--drain-timeout-ms',
      '2000',
      '--state-dir',
      join(work, `state-${port}`),
    ],
  });
  return [
    { name: 'direct', port: PORTS.direct, cmd: [NODE, 'bench/upstream.ts', String(PORTS.direct)] },
    {
      name: 'floor',
      port: PORTS.floor,
      cmd: [NODE, 'bench/floor.ts'],
      env: { BENCH_PORT: String(PORTS.floor), BENCH_UPSTREAM_URL: UPSTREAM_URL },
    },
    sluice('sluice', PORTS.sluice, 'bench/bench.yaml'),
    sluice('sluice+transformer', PORTS.sluiceTransformer, 'bench/bench-transformer.yaml'),
    sluice('sluice+cache', PORTS.sluiceCache, 'bench/bench-cache.yaml'),
  ];
}

/** Waits until the target answers GET on the bench's item path. */
export const waitReady = (p: Proc, port: number, sent: [string, string][] = []) =>
  waitAnswer(p, `http://127.0.0.1:${port}${GET_PATH}`, undefined, Object.fromEntries(sent));

/** The target must give the upstream's exact bodies; a difference is a note that invalidates its rows. */
export async function check(port: number, sent: [string, string][] = []): Promise<string[]> {
  const notes: string[] = [];
  for (const s of Object.values(SCENARIOS)) {
    try {
      const headers: Record<string, string> = Object.fromEntries(sent.map(([n, v]) => [n.toLowerCase(), v]));
      if (s.body !== null) headers['content-type'] = 'application/json';
      const r = await http(s.method, `http://127.0.0.1:${port}${s.path}`, s.body, { headers });
      if (r.status !== 200 || r.body !== s.expect)
        notes.push(`${s.method} ${s.path}: status ${r.status}, body ${JSON.stringify(r.body.slice(0, 120))}`);
    } catch (err) {
      notes.push(`${s.method} ${s.path}: ${(err as Error).message}`);
    }
  }
  return notes;
}

export async function upstreamConnections(): Promise<number | null> {
  try {
    return (
      JSON.parse((await http('GET', `${UPSTREAM_URL}/__bench/stats`, null)).body) as { connections: number }
    ).connections;
  } catch {
    return null;
  }
}
