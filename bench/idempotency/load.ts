/** Load for bench/idempotency.ts: wrk with a Lua script that writes each key, or undici loops without wrk. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { CHARGE_REQUEST } from '../fixtures.ts';
import { LOAD_CORE, pinned } from '../lib/machine.ts';
import { trackLoader, untrackLoader } from '../lib/processes.ts';
import { parseWrk } from '../lib/wrk.ts';

import { HEADERS, PORT, REPLAY_KEYS, RUN, type Scenario, opts, replayKey, withKey } from './setup.ts';

let loadRuns = 0;

export type Ms = number | null;
export type Load = {
  requests: number;
  seconds: number;
  p50ms: Ms;
  p99ms: Ms;
  non2xx: number;
  errors: number;
};

export function runLoad(work: string, s: Scenario, seconds: number): Promise<Load> {
  const fresh = `fresh-${RUN}-${String(++loadRuns).padStart(2, '0')}-`;
  return opts.loadgen === 'wrk' ? wrk(work, s, seconds, fresh) : undiciLoad(s, seconds, fresh);
}

export async function wrk(work: string, s: Scenario, seconds: number, fresh: string): Promise<Load> {
  const key = {
    none: '',
    fresh: `"${fresh}" .. string.format("%018d", n)`,
    replay: `"replay-${RUN}-" .. string.format("%020d", n % ${REPLAY_KEYS})`,
  }[s.keys];
  const lua = join(work, `${s.name}.lua`);
  fs.writeFileSync(
    lua,
    `wrk.method = "POST"\nwrk.body = [[${CHARGE_REQUEST}]]\n` +
      Object.entries(HEADERS).reduce((a, [k, v]) => `${a}wrk.headers["${k}"] = "${v}"\n`, '') +
      (key &&
        `local n = -1\nrequest = function()\n  n = n + 1\n  wrk.headers["Idempotency-Key"] = ${key}\n` +
          '  return wrk.format()\nend\n'),
  );
  // -t1: one Lua state, so its counter n makes every fresh key unique.
  const cmd = `wrk -t1 -c${opts.connections} -d${seconds}s --latency --timeout 5s -s`.split(' ');
  const argv = pinned(LOAD_CORE, [...cmd, lua, `http://127.0.0.1:${PORT}${s.path}`]);
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  trackLoader(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  const [code] = await once(child, 'exit');
  untrackLoader(child);
  if (code !== 0) throw new Error(`wrk exited with ${code}:\n${out}`);
  return parseWrk(out);
}

/** Without wrk: `connections` loops on one undici Pool, in this process (on core 0 when pinned). */
export async function undiciLoad(s: Scenario, seconds: number, fresh: string): Promise<Load> {
  const pool = new Pool(`http://127.0.0.1:${PORT}`, { connections: opts.connections });
  const lat: number[] = [];
  const st = { n: 0, non2xx: 0, errors: 0 };
  const t0 = performance.now();
  const loop = async () => {
    while (performance.now() - t0 < seconds * 1000) {
      const i = st.n++;
      const key = { none: null, fresh: fresh + String(i).padStart(18, '0'), replay: replayKey(i) }[s.keys];
      const t = performance.now();
      try {
        const req = { path: s.path, method: 'POST', headers: withKey(key), body: CHARGE_REQUEST } as const;
        const r = await pool.request(req);
        await r.body.dump();
        if (r.statusCode >= 300) st.non2xx++;
        lat.push(performance.now() - t);
      } catch {
        st.errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.connections }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  await pool.close();
  lat.sort((a, b) => a - b);
  const at = (q: number) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(q * lat.length))] : null);
  const { non2xx, errors } = st;
  return { requests: lat.length, seconds: elapsed, p50ms: at(0.5), p99ms: at(0.99), non2xx, errors };
}
