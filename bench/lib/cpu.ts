/** CPU time from Linux /proc: per process tree, this process, and per core. */
import { readdirSync, readFileSync } from 'node:fs';

export type ProcessTable = Map<number, { ppid: number; ticks: number }>;

/** utime+stime (all threads) of every process, by pid, with its parent. */
export function processTable(): ProcessTable {
  const table: ProcessTable = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
      table.set(Number(entry), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // exited meanwhile
    }
  }
  return table;
}

/** CPU ticks of pid and all its descendants (0 for no pid). */
export function treeTicks(pid: number | undefined, table: ProcessTable = processTable()): number {
  let total = 0;
  const queue = pid === undefined ? [] : [pid];
  while (queue.length) {
    const p = queue.pop()!;
    total += table.get(p)?.ticks ?? 0;
    for (const [child, info] of table) if (info.ppid === p) queue.push(child);
  }
  return total;
}

/** This process with its reaped children (the load generator once it has exited). */
export function selfTicks(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
}

/** Busy and total ticks: the whole machine ("cpu") and each core ("cpu0"…). */
export function coreTicks(): Map<string, { busy: number; total: number }> {
  const out = new Map<string, { busy: number; total: number }>();
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    if (!line.startsWith('cpu')) continue;
    const [name, ...rest] = line.split(/\s+/);
    const v = rest.map(Number);
    // user nice system idle iowait irq softirq steal (guest is already in user)
    const idle = v[3] + v[4];
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    out.set(name, { busy: total - idle, total });
  }
  return out;
}

/** Busy and total ticks of the whole machine. */
export function machineTicks(): { busy: number; total: number } {
  return coreTicks().get('cpu')!;
}
