/**
 * ext-auth: nginx's auth_request as ingress-nginx's auth-url sets it up. Before the request goes
 * on, a sub-request goes to the authentication service: the client's headers (its body not sent,
 * as `proxy_pass_request_body off`), the service's own Host, and X-Original-URL,
 * X-Original-Method, X-Sent-From, X-Real-IP, X-Forwarded-For and X-Auth-Request-Redirect.
 *   - 2xx: the request goes on; each of `responseHeaders` is set on it from that answer (removed
 *     when the answer lacks it, so a client's copy never passes as the service's);
 *   - 401: passed back with the service's WWW-Authenticate, or with `signin` a 302 there, the
 *     original URL in its `rd` parameter;
 *   - 403: passed back;
 *   - anything else, a redirect included, or no answer within `timeout` (default 5s): 500, as
 *     nginx answers for an auth_request that errs.
 * The client going away aborts the sub-request.
 */
import { request } from 'undici';
import { endAttemptSpan, startFetchSpan } from '../../observability/tracing.ts';
import { answered, answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { finishRequest } from '../../pipeline/finish.ts';
import { parseDuration } from '../../config/duration.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';

const DEFAULT_TIMEOUT_MS = 5_000;
/** The service's answer body is read and dropped, at most this much (it is never forwarded). */
const MAX_BODY_BYTES = 64 * 1024;

export default definePlugin(manifest, {
  create(config) {
    const method = (config.method ?? 'GET').toUpperCase();
    const timeoutMs =
      config.timeout === undefined
        ? DEFAULT_TIMEOUT_MS
        : (parseDuration(config.timeout) ?? DEFAULT_TIMEOUT_MS);
    const copied = (config.responseHeaders ?? []).map((h) => h.toLowerCase());
    const param = config.signinRedirectParam ?? 'rd';
    const hooks = {
      async onRequest(ctx: RequestContext): Promise<void> {
        const original = originalOf(ctx);
        const headers = subrequestHeaders(ctx, original, method, config.requestRedirect);
        const span =
          ctx.span === null ? null : startFetchSpan(ctx.span, 'ext-auth', method, config.url, headers);
        const signal = ctx.signal
          ? AbortSignal.any([ctx.signal.asAbortSignal(), AbortSignal.timeout(timeoutMs)])
          : AbortSignal.timeout(timeoutMs);
        let status = 0;
        let answer: Record<string, string | string[] | undefined>;
        try {
          const res = await request(config.url, {
            method: method as 'GET',
            headers,
            signal,
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
            // undici's request follows no redirect: a 3xx is an answer like any other, a 500 here.
          });
          status = res.statusCode;
          answer = res.headers;
          await drain(res.body);
          if (span !== null) endAttemptSpan(span, status, null);
        } catch (err) {
          if (span !== null) endAttemptSpan(span, status, err as Error);
          if (ctx.signal?.aborted) {
            // The client is gone: nothing to answer, one log line and metric sample (499).
            ctx.done = true;
            finishRequest(ctx, 'SLC_ERR_CLIENT_CLOSED');
            return;
          }
          // The client is still here: an aborted signal is the timeout's.
          const code = (err as { code?: string }).code;
          const late =
            signal.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
          answerProblem(ctx, 'SLC_ERR_EXT_AUTH_FAILED', {
            detail: late
              ? `the authentication service did not answer within ${timeoutMs} ms`
              : status === 0
                ? 'the authentication service could not be reached'
                : 'the authentication service answer could not be read',
          });
          return;
        }
        if (status >= 200 && status < 300) {
          for (const name of copied) {
            const v = answer[name];
            if (v === undefined || v === '') delete ctx.headers[name];
            else ctx.headers[name] = Array.isArray(v) ? v.join(', ') : v;
          }
          return;
        }
        if (status === 401 && config.signin !== undefined) {
          answered(ctx);
          ctx.status = 302;
          ctx.res.writeHead(302, {
            location: signinLocation(config.signin, param, original),
            'cache-control': 'no-store',
          });
          ctx.res.end();
          return;
        }
        if (status === 401) {
          const challenge = answer['www-authenticate'];
          answerProblem(ctx, 'SLC_ERR_EXT_AUTH_UNAUTHORIZED', {
            ...(typeof challenge === 'string' && { headers: { 'www-authenticate': challenge } }),
          });
          return;
        }
        if (status === 403) {
          answerProblem(ctx, 'SLC_ERR_EXT_AUTH_FORBIDDEN');
          return;
        }
        answerProblem(ctx, 'SLC_ERR_EXT_AUTH_FAILED', {
          detail: `the authentication service answered ${status} (only 2xx, 401 and 403 are read)`,
        });
      },
    };
    return { bind: () => hooks };
  },
});

/** The request as the client sent it: nginx's $scheme (a trusted proxy's), $http_host and $request_uri. */
interface Original {
  scheme: string;
  host: string;
  uri: string;
}

function originalOf(ctx: RequestContext): Original {
  const h = ctx.req.headers;
  const host = (h.host ?? (h[':authority'] as string | undefined) ?? '').toString();
  const query = ctx.query === '' ? '' : `?${ctx.query}`;
  return {
    scheme: ctx.headers['x-forwarded-proto'] ?? 'http',
    host,
    uri: ctx.req.url ?? `${ctx.path}${query}`,
  };
}

/** The sub-request's headers: the client's (its body's left out), with ingress-nginx's additions. */
export function subrequestHeaders(
  ctx: Pick<RequestContext, 'headers' | 'clientAddress' | 'method'>,
  o: Original,
  method: string,
  requestRedirect: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.headers))
    if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'expect') headers[k] = v;
  headers['x-original-url'] = `${o.scheme}://${o.host}${o.uri}`;
  headers['x-original-method'] = ctx.method;
  headers['x-sent-from'] = 'nginx-ingress-controller';
  headers['x-real-ip'] = ctx.clientAddress;
  headers['x-auth-request-redirect'] = requestRedirect ?? o.uri;
  // A body-less request: a GET's content-type would mislead; nginx keeps it, and so do we for other methods.
  if (method === 'GET' || method === 'HEAD') delete headers['content-type'];
  return headers;
}

/** signin with its variables expanded and, unless it has one, the rd parameter: the original URL. */
export function signinLocation(signin: string, param: string, o: Original): string {
  const escaped = encodeURIComponent(o.uri);
  const url = signin.replace(/\$(escaped_request_uri|request_uri|host|scheme)\b/g, (_, v: string) =>
    v === 'host' ? o.host : v === 'scheme' ? o.scheme : v === 'request_uri' ? o.uri : escaped,
  );
  if (new RegExp(`[?&]${param}=`).test(url)) return url;
  return `${url}${url.includes('?') ? '&' : '?'}${param}=${encodeURIComponent(`${o.scheme}://${o.host}`)}${escaped}`;
}

async function drain(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<void> {
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > MAX_BODY_BYTES) {
      body.destroy();
      return;
    }
  }
}
