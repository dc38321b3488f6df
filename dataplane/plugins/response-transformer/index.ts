/**
 * response-transformer: edits the upstream's response before it leaves: headers in the
 * response hook, JSON body fields through a tap (body-tap.ts). Its tap is added in the last
 * phase, so it sees the upstream's bytes before idempotency (or a cache) records them: a replay
 * returns the transformed response. A header value whose looked-up parts would carry CR, LF or
 * NUL is left out (the response has started; counted as unsafe_header) rather than altered.
 */
import { type Sources, template } from '../../config/template.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { applyHeaderVerbs, compileHeaderVerbs } from '../../pipeline/transform/headers.ts';
import { compileFieldVerbs } from '../../pipeline/transform/json-fields.ts';
import { RequestSources } from '../../pipeline/transform/sources.ts';
import { TRANSFORM_SKIPPED } from '../transform-skipped.ts';
import { definePlugin } from '../types.ts';
import { BodyTransform } from './body-tap.ts';
import { manifest } from './manifest.ts';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export default definePlugin(manifest, {
  metrics: [TRANSFORM_SKIPPED],
  create(config, deps) {
    const skip = deps.metrics.of(TRANSFORM_SKIPPED);
    const headers = compileHeaderVerbs(config, template);
    const body = compileFieldVerbs(
      {
        remove: config.remove?.body,
        rename: config.rename?.body,
        replace: config.replace?.body,
        add: config.add?.body,
      },
      template,
    );
    const max = config.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const skipped = (ctx: RequestContext, reason: string) =>
      skip(ctx.route.id, 'response-transformer', reason);
    const sources = (ctx: RequestContext): Sources => new RequestSources(ctx, null, false);
    return {
      bind() {
        return {
          ...(body !== null && {
            onRequest(ctx: RequestContext): void {
              if (ctx.method !== 'HEAD')
                ctx.addTap(new BodyTransform(body, sources(ctx), max, (reason) => skipped(ctx, reason)));
            },
          }),
          ...(headers !== null && {
            onResponse(ctx: RequestContext, out: Record<string, string | string[]>): void {
              if (applyHeaderVerbs(headers, out, sources(ctx)) !== null) skipped(ctx, 'unsafe_header');
            },
          }),
        };
      },
    };
  },
});
