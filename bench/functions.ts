/**
 * `node bench/functions.ts <dump> [<base dump>]`: where a target's instructions go, function by
 * function, from the callgrind dumps `BENCH_KEEP_LOGS=1 node bench/instructions.ts` keeps (each
 * target's folder holds `<scenario>.out`, the measured requests' dump, and `perf.map`, which names
 * its JavaScript when the run had `BENCH_NODE_FLAGS=--perf-basic-prof`). In thousands of
 * instructions a request, each function's own (what it ran, not what it called). With a base
 * dump: both, and the difference, largest first, e.g. what plain GET does beyond the floor:
 *
 *   node bench/functions.ts /tmp/sluice-bench-instr-XXXX/plain/GET.out /tmp/sluice-bench-instr-XXXX/floor/GET.out
 *
 * A function's name leaves out V8's tier and where node_modules or this checkout are, so one
 * function compiled twice, or one library in two folders, is one row. Options: --top N (40),
 * --requests N (the count in the run's folder, else 3000).
 */
import fs from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { selfCosts } from './lib/callgrind.ts';
import { ROOT } from './lib/machine.ts';
import { perfMap } from './lib/perf-map.ts';
import { fmt, table } from './lib/table.ts';

/** A function's instructions, by name (see functionName): a dump's own, per request. */
export function perRequest(dump: string, requests: number): Map<string, number> {
  const mapFile = join(dirname(dump), 'perf.map');
  const name = fs.existsSync(mapFile) ? perfMap(mapFile) : () => null;
  const out = new Map<string, number>();
  for (const [key, n] of selfCosts(dump).functions) {
    const f = functionName(key, name);
    out.set(f, (out.get(f) ?? 0) + n / requests);
  }
  return out;
}

/**
 * `key`: callgrind's `name [object]`. JIT code (`0x… [???]`) is named by the perf map, without
 * V8's tier mark; a library's path from its node_modules on; this checkout's files relative to it.
 */
export function functionName(key: string, name: (address: number) => string | null): string {
  const jit = /^0x([0-9a-f]+) \[\?\?\?\]$/.exec(key);
  if (jit === null) return withoutParameters(key.replace(/ \[[^\]]*\]$/, ''));
  const js = name(Number.parseInt(jit[1], 16));
  if (js === null) return `JIT code at 0x${jit[1]}`;
  const f = js
    .replace(/^JS:[~^+*]?'?/, '')
    .replace(/(?:file:\/\/)?\/\S*\/node_modules\//, '')
    .replaceAll(`file://${ROOT}/`, '');
  // A named function without its line and column (two versions of a library are one row); an
  // anonymous one keeps them (its only name).
  return f.startsWith(' ') ? f.trimStart() : f.replace(/:\d+:\d+$/, '');
}

/** C++ without its parameter list (overloads are one row): the last parenthesized group, balanced. */
function withoutParameters(f: string): string {
  const end = f.replace(/ const$/, '');
  if (!end.endsWith(')')) return f;
  for (let i = end.length - 1, depth = 0; i >= 0; i--) {
    if (end[i] === ')') depth++;
    else if (end[i] === '(' && --depth === 0) return end.slice(0, i);
  }
  return f;
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '40' }, requests: { type: 'string' } },
  });
  const [dump, base] = positionals;
  if (dump === undefined) throw new Error('usage: node bench/functions.ts <dump> [<base dump>] [--top N]');
  const requestsOf = (d: string) => {
    if (values.requests !== undefined) return Number(values.requests);
    const file = join(dirname(d), '..', 'requests');
    return fs.existsSync(file) ? Number(fs.readFileSync(file, 'utf8')) : 3000;
  };
  const a = perRequest(dump, requestsOf(dump));
  const b = base === undefined ? null : perRequest(base, requestsOf(base));
  const k = (n: number | undefined) => fmt((n ?? 0) / 1000, 2);
  const sum = (m: Map<string, number>) => [...m.values()].reduce((s, n) => s + n, 0);
  let rows: string[][];
  if (b === null) {
    rows = [...a].sort((x, y) => y[1] - x[1]).map(([f, n]) => [k(n), f]);
    rows = [[k(sum(a)), '(all)'], ...rows.slice(0, Number(values.top))];
  } else {
    const names = new Set([...a.keys(), ...b.keys()]);
    const diff = (f: string) => (a.get(f) ?? 0) - (b.get(f) ?? 0);
    rows = [...names]
      .sort((x, y) => Math.abs(diff(y)) - Math.abs(diff(x)))
      .slice(0, Number(values.top))
      .map((f) => [k(diff(f)), k(a.get(f)), k(b.get(f)), f]);
    rows = [[k(sum(a) - sum(b)), k(sum(a)), k(sum(b)), '(all)'], ...rows];
  }
  const header = b === null ? ['thousands', 'function'] : ['difference', 'dump', 'base', 'function'];
  process.stdout.write(
    `instructions a request, thousands: each function's own (not what it called)\n\n${table(header, rows)}\n`,
  );
}

if (import.meta.main) main();
