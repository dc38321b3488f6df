/**
 * basic-auth: the caller presents "Authorization: Basic" credentials, checked against htpasswd
 * hashes (htpasswd.ts) the controller copied from Secrets. Good: the user becomes the request's
 * identity (rate limits, idempotency scope, logs) and, as nginx's auth_basic does, the
 * Authorization header still goes upstream. Missing or wrong: 401 with a Basic challenge of the
 * realm, nothing else runs.
 *
 * A bcrypt check costs tens of milliseconds of CPU by design; a credential verified once is
 * remembered (by its SHA-256, never in clear) for the snapshot's life, bounded, so a client
 * sending it on every request pays that once.
 */
import { createHash } from 'node:crypto';
import { answerProblem, refusedRepeated } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { readHtpasswd, verifyPassword } from './htpasswd.ts';
import { manifest } from './manifest.ts';

/** Credentials remembered as verified, at most (the oldest forgotten first). */
const REMEMBERED = 1024;

export default definePlugin(manifest, {
  create(config) {
    const users = new Map<string, string>();
    for (const c of config.credentials) {
      if (c.value === undefined)
        throw new Error(`basic-auth: ${c.secretKeyRef.name}/${c.secretKeyRef.key} has no resolved value`);
      const text = Buffer.from(c.value, 'base64').toString('utf8');
      if (c.user !== undefined) {
        if (!users.has(c.user)) users.set(c.user, text.trim());
      } else for (const [u, h] of readHtpasswd(text).users) if (!users.has(u)) users.set(u, h);
    }
    const challenge = { 'www-authenticate': `Basic realm="${config.realm ?? 'sluice'}"` };
    const consumerHeader = config.consumerHeader?.toLowerCase();
    const verified = new Set<string>();
    const hooks = {
      async onRequest(ctx: RequestContext): Promise<void> {
        if (consumerHeader) delete ctx.headers[consumerHeader];
        if (refusedRepeated(ctx, ['authorization'])) return;
        const given = basicCredentials(ctx.headers.authorization);
        if (given === undefined) {
          answerProblem(ctx, 'SLC_ERR_CREDENTIALS_MISSING', {
            detail: 'Basic credentials are required',
            headers: challenge,
          });
          return;
        }
        const hash = users.get(given.user);
        const digest = createHash('sha256').update(`${given.user}\0${given.password}`).digest('base64');
        const ok =
          hash !== undefined && (verified.has(digest) || (await verifyPassword(given.password, hash)));
        if (!ok) {
          answerProblem(ctx, 'SLC_ERR_CREDENTIALS_INVALID', {
            detail: 'the user name or password is not valid',
            headers: challenge,
          });
          return;
        }
        if (!verified.has(digest)) {
          if (verified.size >= REMEMBERED) verified.delete(verified.values().next().value as string);
          verified.add(digest);
        }
        ctx.consumer = { id: given.user, credentialId: `basic:${given.user}`, source: 'basic-auth' };
        if (consumerHeader) ctx.headers[consumerHeader] = given.user;
      },
    };
    return { bind: () => hooks };
  },
});

/** "Basic base64(user:password)" read (RFC 7617; the scheme is case-insensitive), or undefined. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  const m = header === undefined ? null : /^basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (m === null) return undefined;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon <= 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}
