/**
 * aggregate: one request, several backend calls in parallel, one JSON object with a member per
 * call (the spec's §1.7 and §4.1). The user writes `routes[].aggregate` in a GatewayRoute; the
 * route table carries the same calls with their upstreams resolved and durations in ms. Call
 * paths are templates over the parameters `pattern` captures (the request-transformer's syntax:
 * "/users/{{ path.user_id }}/orders"), each value one encoded segment.
 */
import { type Static, Type } from '@sinclair/typebox';
import { BackendRef, BackendUrl, ONE_BACKEND_RULE } from '../../config/backend-ref.ts';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { DURATION_PATTERN, MAX_TIMEOUT_MS, parseDuration } from '../../config/duration.ts';
import { handlerManifest } from '../../config/manifest.ts';
import { compileTemplate } from '../../config/template.ts';
import { PATH_PATTERN, PATH_TEMPLATE, PathParams } from '../../config/transform-schema.ts';

/** A call's name is its member in the answer: a plain JSON-friendly identifier. */
const CALL_NAME = '^[A-Za-z_][A-Za-z0-9_-]*$';
/** The answer's member listing the failed optional calls; no call may take its name. */
export const ERRORS_MEMBER = 'errors';

export const DEFAULT_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const MAX_CALLS = 16;

const Duration = (description: string) =>
  Type.String({ pattern: DURATION_PATTERN, maxLength: 32, description });

const Call = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: CALL_NAME,
      description: `The member of the answer holding this call's JSON (not "${ERRORS_MEMBER}").`,
    }),
    url: Type.Optional(BackendUrl('Address of the service called, e.g. http://users.shop:8080.')),
    backendRef: Type.Optional(BackendRef),
    method: Type.Optional(
      Type.Literal('GET', {
        description: 'GET (the default and, for now, the only method: an aggregate reads).',
      }),
    ),
    path: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: PATH_TEMPLATE,
      description:
        'The path called, e.g. "/users/{{ path.user_id }}/orders": each {{ value }} is one encoded segment ' +
        "(the service url's path is prepended).",
    }),
    timeout: Type.Optional(
      Duration("Time allowed for this call, body included (default: the aggregate's timeout)."),
    ),
    required: Type.Optional(
      Type.Boolean({
        description:
          'A failed required call fails the whole answer (502, or 504 on time-out); an optional one leaves its ' +
          'member null and is listed in "errors" (default true).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'One backend call: exactly one of url or backendRef.',
    'x-kubernetes-validations': [ONE_BACKEND_RULE],
  },
);

export const AggregateSpec = Type.Object(
  {
    pattern: Type.Optional(
      Type.String({
        maxLength: 2048,
        pattern: PATH_PATTERN,
        description:
          'The request path, a "{name}" for each segment captured, e.g. "/api/user-profile/{user_id}"; a request ' +
          'that does not fit it gets 404.',
      }),
    ),
    timeout: Type.Optional(
      Duration(
        'Overall deadline: the answer is sent by then, unfinished calls counted as timed out (default 5s).',
      ),
    ),
    maxBodyBytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64 * 1024 * 1024,
        description: 'Bytes of backend answers kept in all; a call past it fails (default 1 MiB).',
      }),
    ),
    calls: Type.Array(Call, {
      minItems: 1,
      maxItems: MAX_CALLS,
      description: 'The calls, made in parallel; the answer has their members in this order.',
      'x-kubernetes-validations': [
        { rule: 'self.all(c, self.exists_one(o, o.name == c.name))', message: 'call names must be unique' },
        {
          rule: `self.all(c, c.name != '${ERRORS_MEMBER}')`,
          message: `no call may be named ${ERRORS_MEMBER}`,
        },
      ],
    }),
  },
  {
    additionalProperties: false,
    description:
      'Answer with one JSON object combining several backend calls made in parallel (instead of proxying to ' +
      'the service). GET and HEAD only.',
  },
);
export type AggregateSpec = Static<typeof AggregateSpec>;

const TableCall = Type.Object(
  {
    name: Type.String({ minLength: 1, pattern: CALL_NAME }),
    upstream: Type.String({ minLength: 1 }),
    method: Type.Literal('GET'),
    path: Type.String({ minLength: 1, pattern: PATH_TEMPLATE }),
    timeoutMs: Type.Integer({ minimum: 1, maximum: MAX_TIMEOUT_MS }),
    required: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const AggregateHandler = Type.Object(
  {
    type: Type.Literal('aggregate'),
    pattern: Type.Optional(Type.String({ pattern: PATH_PATTERN })),
    timeoutMs: Type.Integer({ minimum: 1, maximum: MAX_TIMEOUT_MS }),
    maxBodyBytes: Type.Integer({ minimum: 1 }),
    calls: Type.Array(TableCall, { minItems: 1, maxItems: MAX_CALLS }),
  },
  { additionalProperties: false },
);
export type AggregateHandler = Static<typeof AggregateHandler>;

/** What both sides share: names unique and not "errors", paths that compile over declared parameters. */
function checkCalls(c: {
  pattern?: string;
  calls: readonly { name: string; path: string }[];
}): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const params = new PathParams(c.pattern, 'pattern', problems);
  const seen = new Map<string, number>();
  c.calls.forEach((call, j) => {
    const first = seen.get(call.name);
    if (call.name === ERRORS_MEMBER)
      problems.push({
        field: `calls[${j}].name`,
        message: `"${ERRORS_MEMBER}" is the answer's list of failed calls`,
      });
    else if (first !== undefined)
      problems.push({
        field: `calls[${j}].name`,
        message: `"${call.name}" is already the name of calls[${first}]`,
      });
    else seen.set(call.name, j);
    for (const seg of call.path.split('/').slice(1)) {
      const t = compileTemplate(seg);
      const field = `calls[${j}].path`;
      if ('error' in t) problems.push({ field, message: `the path ${t.error}` });
      else if (t.parts.some((p) => typeof p === 'string' && /[{}]/.test(p)))
        problems.push({ field, message: 'the path has "{" or "}" outside a {{ template }}' });
      else {
        const p = params.undeclared(t, field);
        if (p !== null) problems.push(p);
      }
    }
  });
  return problems;
}

const ms = (text: string | undefined, fallback: number) =>
  text === undefined ? fallback : (parseDuration(text) ?? fallback);

function checkSpec(c: AggregateSpec): ConfigProblem[] {
  const problems = checkCalls(c);
  const duration = (field: string, text: string | undefined) => {
    const v = text === undefined ? 1 : parseDuration(text);
    if (v === undefined || v < 1 || v > MAX_TIMEOUT_MS)
      problems.push({ field, message: `${JSON.stringify(text)} must be between 1ms and 596h` });
  };
  duration('timeout', c.timeout);
  c.calls.forEach((call, j) => {
    duration(`calls[${j}].timeout`, call.timeout);
  });
  return problems;
}

export const manifest = handlerManifest({
  kind: 'aggregate',
  schema: AggregateHandler,
  upstreams: (h) => h.calls.map((c, j) => ({ field: `calls[${j}].upstream`, id: c.upstream })),
  checks: checkCalls,
  route: {
    field: 'aggregate',
    schema: AggregateSpec,
    checks: checkSpec,
    methods: ['GET', 'HEAD'],
    backends: (config) => {
      const calls = (config as { calls?: unknown } | null | undefined)?.calls;
      if (!Array.isArray(calls)) return [];
      return calls.map((call: { url?: unknown; backendRef?: unknown } | null, j) => ({
        field: `calls[${j}]`,
        url: call?.url,
        backendRef: call?.backendRef,
      }));
    },
    // Each call's upstream carries its timeout as the deadline to response headers, retries
    // included, so a call never outlives its time waiting on the upstream.
    upstreams: (c, urls) => {
      const overall = ms(c.timeout, DEFAULT_TIMEOUT_MS);
      return c.calls.map((call, j) => ({
        url: urls[j],
        requestMs: Math.min(overall, ms(call.timeout, overall)),
      }));
    },
    entry: (c, ids) => {
      const overall = ms(c.timeout, DEFAULT_TIMEOUT_MS);
      return {
        type: 'aggregate' as const,
        ...(c.pattern !== undefined && { pattern: c.pattern }),
        timeoutMs: overall,
        maxBodyBytes: c.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
        calls: c.calls.map((call, j) => ({
          name: call.name,
          upstream: ids[j],
          method: 'GET' as const,
          path: call.path,
          timeoutMs: Math.min(overall, ms(call.timeout, overall)),
          required: call.required ?? true,
        })),
      };
    },
  },
});
