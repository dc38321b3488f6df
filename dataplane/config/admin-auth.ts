/**
 * The admin API's bearer token, as both ends of it hold one: the data plane checks it, the
 * controller sends it (and checks it on its own GET /debug/config). A string, or a function
 * giving the tokens valid now, newest first: a token file during a rotation gives the new token
 * and, for a grace period, the old one (bin/lib/rotating-file.ts), so that neither end refuses the
 * other while the kubelet updates each pod's copy of the Secret at its own moment.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export type AdminTokens = string | (() => readonly string[]);

export const tokenList = (t: AdminTokens): readonly string[] =>
  typeof t === 'string' ? (t ? [t] : []) : t();

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Whether an Authorization header carries one of the tokens: digests of equal length, compared in constant time. */
export function authorizedBy(header: string | undefined, tokens: AdminTokens): boolean {
  if (header === undefined) return false;
  const presented = digest(header);
  let ok = false;
  // Every token compared, whichever matches: the time taken says nothing of which one did.
  for (const t of tokenList(tokens)) ok = timingSafeEqual(presented, digest(`Bearer ${t}`)) || ok;
  return ok;
}
