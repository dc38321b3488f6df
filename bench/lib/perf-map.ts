/**
 * The names of a Node process's JavaScript from its perf map: with `--perf-basic-prof`, V8 writes
 * `/tmp/perf-<pid>.map`, a line per code object it makes (`start size name`, start and size in
 * hex; name e.g. `JS:*'match file:///…/router.ts:107:8`, whose `*` is the tier: `~` interpreted,
 * `^` Sparkplug, `+` Maglev, `*` Turbofan). Callgrind knows that code only by its address.
 */
import fs from 'node:fs';

/**
 * Names an address by the code that covers it. Where several do (V8 frees code and makes new code
 * in its place), the one written last, which was there when the process was last dumped.
 */
export function perfMap(file: string): (address: number) => string | null {
  const entries: [start: number, end: number, name: string][] = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m !== null) {
      const start = Number.parseInt(m[1], 16);
      entries.push([start, start + Number.parseInt(m[2], 16), m[3]]);
    }
  }
  const named = new Map<number, string | null>();
  return (address) => {
    let name = named.get(address);
    if (name !== undefined) return name;
    name = null;
    for (let i = entries.length - 1; i >= 0 && name === null; i--)
      if (entries[i][0] <= address && address < entries[i][1]) name = entries[i][2];
    named.set(address, name);
    return name;
  };
}
