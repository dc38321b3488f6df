/**
 * Which endpoint of an upstream the next try goes to (route-table.ts `balance`). Pure choices
 * over the live endpoint list; the list itself, and its in-flight counts, are pools.ts's.
 *
 * - round-robin: each endpoint in turn.
 * - least-request: the fewest requests in flight, found by a scan that starts at the next turn,
 *   so ties (all idle, the common case at low load) go round robin. Not power-of-two-choices:
 *   P2C answers stale or costly load information (many balancers herding onto one "least"
 *   endpoint); here the counts are this process's own and exact, a Service has tens of
 *   endpoints (a scan of tens of integers is well under a microsecond), and an exact minimum
 *   never sends to the busier of two random picks while an idle endpoint exists.
 * - consistent-hash: rendezvous (highest random weight) hashing of a header's or cookie's value:
 *   each endpoint scores the value, the highest wins. An endpoint that leaves moves only the
 *   values it won; one that joins takes only the values it now wins. Scores depend on the value
 *   and the endpoint's address alone, so every data plane maps a value to the same endpoint.
 *   A request without the value goes round robin.
 *
 * A retry passes the endpoint of the try before as `avoid`: it goes to another where there is
 * another (for consistent-hash: the value's second choice).
 *
 * Session affinity (hashOn.cookie.set, ingress-nginx's affinity: cookie): `stick` gives a request
 * without the cookie a random value, put in its Cookie header so the hash picks by it, and the
 * Set-Cookie that makes the client send it back: its next requests hash to the same endpoint on
 * every data plane, and move only if that endpoint leaves.
 */
import { randomBytes } from 'node:crypto';
import type { Balance, StickyCookie } from '../config/route-table.ts';

/** What a policy reads of an endpoint. */
export interface Candidate {
  /** Requests this process sent to it whose response has not ended. */
  readonly inFlight: number;
  /** hash32 of the endpoint's address and port: its rendezvous seed. */
  readonly seed: number;
}

type HashOn = NonNullable<Balance['hashOn']>;

export class Balancer {
  readonly #policy: Balance['policy'];
  readonly #hashOn: HashOn | undefined;
  /** The next turn's index (taken modulo the list's length as it is then). */
  #next = 0;

  constructor(balance: Balance | undefined) {
    this.#policy = balance?.policy ?? 'round-robin';
    this.#hashOn = balance?.hashOn;
  }

  /**
   * Session affinity: for a request without the cookie, a new value added to its Cookie header
   * (the hash reads it there; the upstream sees what later requests will send) and the
   * Set-Cookie to answer with; null when the request has one, or the balance sets none.
   */
  stick(headers: Record<string, string>): string | null {
    const on = this.#hashOn;
    if (on === undefined || !('cookie' in on) || on.set === undefined) return null;
    if (cookieValue(headers.cookie, on.cookie)) return null;
    const value = randomBytes(16).toString('hex');
    const pair = `${on.cookie}=${value}`;
    headers.cookie = headers.cookie ? `${headers.cookie}; ${pair}` : pair;
    return setCookie(pair, on.set);
  }

  /** null: the list is empty. */
  pick<T extends Candidate>(list: readonly T[], headers: Record<string, string>, avoid: T | null): T | null {
    const n = list.length;
    if (n < 2) return n === 1 ? list[0] : null;
    if (this.#policy === 'least-request') return this.#least(list, avoid);
    if (this.#policy === 'consistent-hash') {
      const value = hashValue(headers, this.#hashOn!);
      if (value !== undefined) return rendezvous(list, hash32(value), avoid);
    }
    let i = this.#turn(n);
    if (list[i] === avoid) i = this.#turn(n);
    return list[i];
  }

  #turn(n: number): number {
    const i = this.#next < n ? this.#next : 0;
    this.#next = i + 1;
    return i;
  }

  #least<T extends Candidate>(list: readonly T[], avoid: T | null): T {
    const n = list.length;
    const start = this.#turn(n);
    let best: T | null = null;
    for (let j = 0; j < n; j++) {
      const e = list[start + j < n ? start + j : start + j - n];
      if (e !== avoid && (best === null || e.inFlight < best.inFlight)) best = e;
    }
    return best!; // n ≥ 2: at most one is avoided
  }
}

/** The highest score of hash and seed wins; `avoid` (a retry's last endpoint) only when it is alone. */
export function rendezvous<T extends Candidate>(list: readonly T[], hash: number, avoid: T | null): T {
  let best = list[0];
  let bestScore = -1;
  for (const e of list) {
    if (e === avoid) continue;
    // fmix32 is a bijection: two endpoints (two seeds) never tie on one value.
    const score = fmix32(hash ^ e.seed);
    if (score > bestScore) {
      best = e;
      bestScore = score;
    }
  }
  return best;
}

/** The request's value to hash: the header's, or the cookie's; undefined when absent or empty. */
export function hashValue(headers: Record<string, string>, on: HashOn): string | undefined {
  const value = 'header' in on ? headers[on.header] : cookieValue(headers.cookie, on.cookie);
  return value ? value : undefined;
}

/** The value of cookie `name` in a Cookie header ("a=1; b=2"), the first if repeated. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  let at = 0;
  while (at < header.length) {
    let end = header.indexOf(';', at);
    if (end === -1) end = header.length;
    const eq = header.indexOf('=', at);
    if (eq !== -1 && eq < end && header.slice(at, eq).trim() === name)
      return header.slice(eq + 1, end).trim();
    at = end + 1;
  }
  return undefined;
}

/** FNV-1a over the string's UTF-16 code units, then fmix32: an unsigned 32-bit hash. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return fmix32(h);
}

/** MurmurHash3's finalizer: every input bit moves every output bit (unsigned result). */
function fmix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The Set-Cookie of a session-affinity cookie: HttpOnly always, as ingress-nginx sets it. */
export function setCookie(pair: string, c: StickyCookie): string {
  return (
    `${pair}; Path=${c.path}` +
    (c.maxAgeS !== undefined ? `; Max-Age=${c.maxAgeS}` : '') +
    (c.sameSite !== undefined ? `; SameSite=${c.sameSite}` : '') +
    (c.secure || c.sameSite === 'None' ? '; Secure' : '') +
    '; HttpOnly'
  );
}
