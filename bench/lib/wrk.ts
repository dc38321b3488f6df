/** Reading wrk's output (run with --latency). */

export interface WrkFigures {
  requests: number;
  seconds: number;
  p50ms: number | null;
  p99ms: number | null;
  non2xx: number;
  /** Socket errors: connect + read + write + timeout. */
  errors: number;
}

/** A duration as wrk prints it (value and unit) in ms. */
export function ms(value: string, unit: string): number {
  const n = Number(value);
  return unit === 'us' ? n / 1000 : unit === 'ms' ? n : unit === 's' ? n * 1000 : n * 60_000;
}

export function parseWrk(out: string): WrkFigures {
  const done = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(out);
  if (!done) throw new Error(`cannot read wrk's output:\n${out}`);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)`, 'm').exec(out);
    return m ? ms(m[1], m[2]) : null;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests: Number(done[1]),
    seconds: ms(done[2], done[3]) / 1000,
    p50ms: pct('50'),
    p99ms: pct('99'),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}
