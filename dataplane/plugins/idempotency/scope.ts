/**
 * Whose key is it (spec §2.1 rule 1, §5.3): records are scoped to the caller, so the same key
 * from two callers never collides and knowing a key alone reads nothing. The caller is the
 * consumer the authenticate phase found; without one, a hash of the Authorization header the
 * client presented. The record id hashes scope and key together: neither is stored in clear.
 */
// crypto.hash: the one-shot digest, ~1 µs cheaper per call than createHash().update().digest().
import { hash } from 'node:crypto';
import type { RequestContext } from '../../pipeline/context.ts';

/** The caller's scope, or null when the request carries no identity. */
export function callerScope(ctx: RequestContext): string | null {
  if (ctx.consumer !== null) return `consumer\n${ctx.consumer.id}`;
  const authorization = ctx.req.headers.authorization;
  if (authorization === undefined || authorization === '') return null;
  return `authorization\n${hash('sha256', authorization)}`;
}

export function recordId(scope: string, key: string): string {
  return hash('sha256', `${scope}\n${key}`);
}
