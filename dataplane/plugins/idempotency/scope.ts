/**
 * Whose key is it (spec §2.1 rule 1, §5.3): records are scoped to the caller, so the same key
 * from two callers never collides and knowing a key alone reads nothing. The caller is the
 * consumer the authenticate phase found; without one, a hash of the Authorization header the
 * client presented. The record id hashes scope and key together: neither is stored in clear.
 */
// crypto.hash: the one-shot digest, ~1 µs cheaper per call than createHash().update().digest().
import { hash } from 'node:crypto';
import type { RequestContext } from '../../pipeline/context.ts';

/**
 * Optimization: the Authorization header last hashed on each connection, with its scope. A
 * keep-alive client sends the same header on every request, and comparing it with the last one
 * costs a few hundred instructions where a SHA-256 call costs ~5 thousand (bench/instructions.ts,
 * the idempotent first execution). Only an exact match of the whole value counts (as
 * bearer.ts's lastOnConnection); the scope is a function of the header alone, so one map serves
 * every plugin instance.
 */
const lastOnConnection = new WeakMap<object, { authorization: string; scope: string }>();

/** The caller's scope, or null when the request carries no identity. */
export function callerScope(ctx: RequestContext): string | null {
  if (ctx.consumer !== null) return `consumer\n${ctx.consumer.id}`;
  const authorization = ctx.req.headers.authorization;
  if (authorization === undefined || authorization === '') return null;
  // (A request whose connection is gone has no socket: hashed, not remembered.)
  const connection: object | null = ctx.req.socket ?? null;
  const last = connection === null ? undefined : lastOnConnection.get(connection);
  if (last !== undefined && last.authorization === authorization) return last.scope;
  const scope = authorizationScope(authorization);
  if (connection !== null) lastOnConnection.set(connection, { authorization, scope });
  return scope;
}

/** The scope of a caller known only by its Authorization header: the header hashed. */
export const authorizationScope = (authorization: string): string =>
  `authorization\n${hash('sha256', authorization)}`;

export function recordId(scope: string, key: string): string {
  return hash('sha256', `${scope}\n${key}`);
}
