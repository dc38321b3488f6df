/**
 * key-auth: the caller presents an API key (a header, or a query parameter); its SHA-256 is
 * looked up among the consumers' key hashes (the data plane never holds a key in clear, and
 * a hash lookup reveals nothing about how close a wrong key was). Found: the consumer becomes
 * the request's identity (rate limits, idempotency scope, logs). The key is removed before the
 * request goes upstream. Missing or wrong: 401 with WWW-Authenticate, nothing else runs.
 */
import { createHash } from 'node:crypto';
import { answerProblem, refusedRepeated } from '../../pipeline/answer.ts';
import type { Consumer, RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';

const CHALLENGE = { 'www-authenticate': 'ApiKey realm="sluice"' };

export default definePlugin(manifest, {
  create(config) {
    const byHash = new Map<string, Consumer>();
    for (const c of config.consumers) {
      if (!c.sha256) throw new Error(`key-auth: consumer ${c.name} has no resolved key (sha256)`);
      byHash.set(c.sha256, {
        id: c.name,
        credentialId: `${c.secretKeyRef.name}/${c.secretKeyRef.key}`,
        source: 'key-auth',
      });
    }
    const names = (config.keyNames ?? ['X-API-Key']).map((n) => n.toLowerCase());
    const inQuery = config.in === 'query';
    const consumerHeader = config.consumerHeader?.toLowerCase();
    const hooks = {
      onRequest(ctx: RequestContext): void {
        if (consumerHeader) delete ctx.headers[consumerHeader];
        if (!inQuery && refusedRepeated(ctx, names)) return;
        const key = inQuery ? takeFromQuery(ctx, names) : takeFromHeaders(ctx, names);
        if (key === undefined) {
          answerProblem(ctx, 'SLC_ERR_CREDENTIALS_MISSING', {
            detail: 'an API key is required',
            headers: CHALLENGE,
          });
          return;
        }
        const consumer = byHash.get(createHash('sha256').update(key).digest('hex'));
        if (consumer === undefined) {
          answerProblem(ctx, 'SLC_ERR_CREDENTIALS_INVALID', {
            detail: 'the API key is not valid',
            headers: CHALLENGE,
          });
          return;
        }
        ctx.consumer = consumer;
        if (consumerHeader) ctx.headers[consumerHeader] = consumer.id;
      },
    };
    return { bind: () => hooks };
  },
});

/** The key from the first header that has one; every key header is removed either way. */
function takeFromHeaders(ctx: RequestContext, names: string[]): string | undefined {
  let key: string | undefined;
  for (const n of names) {
    const v = ctx.headers[n];
    if (v !== undefined) {
      key ??= v;
      delete ctx.headers[n];
    }
  }
  return key;
}

/** The key from the query; its parameters are removed from what is forwarded. */
function takeFromQuery(ctx: RequestContext, names: string[]): string | undefined {
  if (ctx.query === '') return undefined;
  let key: string | undefined;
  const kept: string[] = [];
  for (const part of ctx.query.split('&')) {
    const eq = part.indexOf('=');
    const name = (eq === -1 ? part : part.slice(0, eq)).toLowerCase();
    if (names.includes(name)) {
      if (key === undefined) {
        try {
          key = decodeURIComponent((eq === -1 ? '' : part.slice(eq + 1)).replaceAll('+', ' '));
        } catch {
          key = '';
        }
      }
    } else kept.push(part);
  }
  ctx.query = kept.join('&');
  return key;
}
