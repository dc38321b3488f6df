/**
 * Timeouts of upstream tries (the wait for response headers, then the idle time between body
 * chunks), kept here rather than by undici.
 *
 * Optimization, measured: undici arms a new "fast timer" object for every request's headers
 * timeout (its keep-alive timer between requests is a native one, and switching kind re-creates
 * the timer), and a cleared fast timer stays in undici's timer array until its next 500 ms tick.
 * So every request left an object that outlived two scavenges: under load they were most of what
 * was promoted to the old generation (`--trace-gc-nvp`: ~80 KB a scavenge; a heap-sampling
 * profile of the objects promoted: 63 % undici's timers), which grew the old space from ~37 to
 * ~150 MB between mark-compacts (peak RSS) and paid a ~13 ms mark-compact every few seconds (the
 * tail). Here a long timeout is a deadline on the try itself, in an intrusive list: arming,
 * touching and clearing allocate nothing and a finished try is unlinked at once. A ticker checks
 * the list every TICK_MS while it is not empty, so a deadline fires 0–2 ticks late, never early,
 * as undici's own fast timers do. Timeouts up to NATIVE_MS are exact native timers (as undici
 * does too).
 */

/** Something with a deadline: an upstream try. */
export abstract class Expiring {
  /** When it expires (coarse ms, see `now`); 0: not watched. */
  deadline = 0;
  /** Its neighbours in the list while watched. */
  prevWatched: Expiring | null = null;
  nextWatched: Expiring | null = null;
  /** A native timer for a short timeout. */
  timer: NodeJS.Timeout | null = null;

  /** Its time is up. */
  abstract expire(): void;
}

export const TICK_MS = 500;
export const NATIVE_MS = 1000;

let head: Expiring | null = null;
let ticker: NodeJS.Timeout | null = null;
/** The clock as of the last tick (or the first deadline set since the list was empty). */
let now = 0;

/** Starts (or restarts) `e`'s countdown of `ms`; 0: none. */
export function arm(e: Expiring, ms: number): void {
  disarm(e);
  if (ms <= 0) return;
  if (ms <= NATIVE_MS) {
    e.timer = setTimeout(fire, ms, e);
    return;
  }
  if (ticker === null) {
    now = Date.now();
    ticker = setInterval(tick, TICK_MS);
    ticker.unref();
  }
  // `now` is at most one tick old: one tick more keeps the deadline from coming early.
  e.deadline = now + ms + TICK_MS;
  e.nextWatched = head;
  if (head !== null) head.prevWatched = e;
  head = e;
}

/** The countdown starts again from now (a body chunk came), as armed. */
export function touch(e: Expiring, ms: number): void {
  if (e.timer !== null) e.timer.refresh();
  else if (e.deadline !== 0) e.deadline = now + ms + TICK_MS;
}

export function disarm(e: Expiring): void {
  if (e.timer !== null) {
    clearTimeout(e.timer);
    e.timer = null;
  }
  if (e.deadline === 0) return;
  e.deadline = 0;
  const { prevWatched: prev, nextWatched: next } = e;
  if (prev === null) head = next;
  else prev.nextWatched = next;
  if (next !== null) next.prevWatched = prev;
  e.prevWatched = null;
  e.nextWatched = null;
}

function fire(e: Expiring): void {
  e.timer = null;
  e.expire();
}

function tick(): void {
  now = Date.now();
  let e = head;
  while (e !== null) {
    const next = e.nextWatched;
    if (e.deadline <= now) {
      disarm(e);
      e.expire();
    }
    e = next;
  }
  if (head === null && ticker !== null) {
    clearInterval(ticker);
    ticker = null;
  }
}
