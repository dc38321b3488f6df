/**
 * request-transformer: edits the upstream request: its path (a rewrite over the path's own
 * parameters), query parameters, JSON body fields and headers, with values from templates.
 * Everything is compiled in `create`; a request pays only for what the config asks (the common
 * header-only config is a few object writes). Templates read the request as it came to the
 * transformer. A header value whose looked-up parts would carry CR, LF or NUL refuses the request
 * (400) rather than being altered. The body is read here, and only when the config has body
 * rules: other routes keep streaming theirs.
 */
import { type Sources, template } from '../../config/template.ts';
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { finishRequest } from '../../pipeline/finish.ts';
import { readBody } from '../../upstream/body.ts';
import { BodyTooLargeError } from '../../upstream/errors.ts';
import { applyHeaderVerbs, compileHeaderVerbs, NO_SOURCES } from '../../pipeline/transform/headers.ts';
import {
  applyFieldVerbs,
  compileFieldVerbs,
  type FieldVerbs,
  isJsonType,
  parseObject,
} from '../../pipeline/transform/json-fields.ts';
import { RequestSources } from '../../pipeline/transform/sources.ts';
import { TRANSFORM_SKIPPED } from '../transform-skipped.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';
import { captureParams, compilePathRewrite, renderPath } from '../../pipeline/transform/path-rewrite.ts';
import { applyQueryVerbs, compileQueryVerbs } from './query.ts';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export default definePlugin(manifest, {
  metrics: [TRANSFORM_SKIPPED],
  create(config, deps) {
    const skip = deps.metrics.of(TRANSFORM_SKIPPED);
    const headers = compileHeaderVerbs(config, template);
    const query = compileQueryVerbs(config, template);
    const body = compileFieldVerbs(
      {
        remove: config.remove?.body,
        rename: config.rename?.body,
        replace: config.replace?.body,
        add: config.add?.body,
      },
      template,
    );
    const rewrite = config.path ? compilePathRewrite(config.path, template) : null;
    const maxBodyBytes = config.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const text = JSON.stringify(config);
    // Templates read headers as they came: a copy is taken only when header verbs could change what they read.
    const copyHeaders = headers !== null && /\{\{\s*header\./.test(text);
    // Only literal values (X-Gateway-Version): no sources to make per request.
    const literalOnly = !text.includes('{{');
    const plain = query === null && body === null && rewrite === null;

    return {
      bind() {
        const skipped = (ctx: RequestContext, reason: string) =>
          skip(ctx.route.id, 'request-transformer', reason);

        const transformBody = (ctx: RequestContext, v: FieldVerbs, sources: Sources): void => {
          const bytes = ctx.body;
          if (bytes === null || bytes.length === 0) return;
          const parsed = !isJsonType(ctx.headers['content-type'])
            ? 'not_json'
            : bytes.length > maxBodyBytes
              ? 'too_large'
              : parseObject(bytes);
          if (typeof parsed === 'string') {
            skipped(ctx, parsed);
            return;
          }
          applyFieldVerbs(v, parsed, sources);
          const out = Buffer.from(JSON.stringify(parsed));
          ctx.body = out;
          ctx.headers['content-length'] = String(out.length);
        };

        const finish = (ctx: RequestContext, sources: Sources): void => {
          if (body !== null) transformBody(ctx, body, sources);
          if (headers !== null) {
            const refused = applyHeaderVerbs(headers, ctx.headers, sources);
            if (refused !== null)
              answerProblem(ctx, 'SLC_ERR_BAD_REQUEST', {
                detail: `the ${refused} header would carry a character a header cannot hold`,
              });
          }
        };

        // The benchmarked case (X-Gateway-Version): literal header values, checked when compiled,
        // cannot be refused: the hook is the header verbs alone.
        if (plain && literalOnly && headers !== null)
          return {
            onRequest: (ctx: RequestContext) => void applyHeaderVerbs(headers, ctx.headers, NO_SOURCES),
          };

        return {
          onRequest(ctx: RequestContext): void | Promise<void> {
            if (plain) {
              finish(ctx, new RequestSources(ctx, null, copyHeaders));
              return;
            }
            const params = rewrite === null ? null : captureParams(rewrite, ctx.path);
            const sources = new RequestSources(ctx, params, copyHeaders);
            if (rewrite !== null && params !== null) {
              const path = renderPath(rewrite, sources);
              if (typeof path !== 'string')
                return answerProblem(ctx, 'SLC_ERR_BAD_PATH_VALUE', { detail: path.error });
              ctx.upstreamPath = path;
            }
            if (query !== null) ctx.query = applyQueryVerbs(query, ctx.query, sources);
            if (body === null || ctx.body !== null || !ctx.hasBody) return finish(ctx, sources);
            return readBody(ctx.req, ctx.route.maxBodyBytes).then(
              (bytes) => {
                ctx.body = bytes;
                finish(ctx, sources);
              },
              // As the chain's own body read (pipeline/run-chain.ts): too large is 413, a client gone mid-body gets nothing.
              (err) => {
                if (err instanceof BodyTooLargeError)
                  return answerProblem(ctx, 'SLC_ERR_BODY_TOO_LARGE', { close: true });
                if (!ctx.req.destroyed && !ctx.res.destroyed) throw err;
                ctx.done = true;
                finishRequest(ctx, 'SLC_ERR_BAD_REQUEST');
              },
            );
          },
        };
      },
    };
  },
});
