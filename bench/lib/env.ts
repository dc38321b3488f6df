/** Bench settings from the environment (BENCH_DURATION, …): whole numbers, checked. */
export function envInt(name: string, fallback: number, min: number): number {
  const n = Number(process.env[name] || fallback);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name}: a whole number >= ${min}`);
  return n;
}
