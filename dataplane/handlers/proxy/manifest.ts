/**
 * proxy: the route's request goes to one upstream and its response streams back. Which upstream:
 * the entry's `upstream`, its canary's some of the time, or one of its weighted `backends`
 * (Gateway API backendRefs with weights), picked once per request.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { handlerManifest } from '../../config/manifest.ts';
import { HEADER_NAME_PATTERN, HEADER_VALUE_PATTERN } from '../../config/http-grammar.ts';
import { headerNames, headerValues, section } from '../../config/transform-schema.ts';

/** A weighted canary: `weight` percent of the requests go to `upstream` instead of the handler's. */
export const Canary = Type.Object(
  {
    /** The canary's upstream (table.upstreams). */
    upstream: Type.String({ minLength: 1 }),
    /** The percentage of requests it gets: 0 none, 100 all. */
    weight: Type.Integer({ minimum: 0, maximum: 100 }),
    /** Keep a caller on one side: by consumer id (after authentication) or by a request cookie's value. */
    sticky: Type.Optional(
      Type.Union([
        Type.Object({ consumer: Type.Literal(true) }, { additionalProperties: false }),
        Type.Object({ cookie: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
      ]),
    ),
  },
  { additionalProperties: false },
);
export type Canary = Static<typeof Canary>;

/**
 * A mirror: a copy of the route's requests (all, or `fraction` of them) goes to `upstream` too,
 * its answer discarded (handlers/proxy/mirror.ts).
 */
export const Mirror = Type.Object(
  {
    upstream: Type.String({ minLength: 1 }),
    /** The share of requests copied; absent: every one. */
    fraction: Type.Optional(
      Type.Object(
        {
          numerator: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
          denominator: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type Mirror = Static<typeof Mirror>;

/**
 * Error pages (ingress-nginx's custom-http-errors with a default-backend): an upstream answer of
 * one of `statuses` is dropped and the request is answered by `upstream` instead, and so is a
 * request the upstream has no endpoint for (handlers/proxy/error-pages.ts).
 */
export const ErrorPages = Type.Object(
  {
    /** The upstream that answers (table.upstreams). */
    upstream: Type.String({ minLength: 1 }),
    /** The upstream statuses it answers in place of; empty: only requests without an endpoint. */
    statuses: Type.Array(Type.Integer({ minimum: 400, maximum: 599 }), { maxItems: 64, uniqueItems: true }),
    /** Literal headers of the error request (who asks: X-Namespace, X-Ingress-Name, …). */
    headers: Type.Optional(
      Type.Record(
        Type.String({ pattern: HEADER_NAME_PATTERN }),
        Type.String({ pattern: HEADER_VALUE_PATTERN, maxLength: 1024 }),
        { maxProperties: 16 },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ErrorPages = Static<typeof ErrorPages>;

/** Gateway API's limits: at most 16 backendRefs, each weight at most 1,000,000. */
const MAX_BACKENDS = 16;
const MAX_WEIGHT = 1_000_000;

/**
 * Request header edits for one backend only (Gateway API's backendRefs[].filters
 * RequestHeaderModifier), in the request-transformer's shape and by its one definition of header
 * verbs (pipeline/transform/headers.ts): remove, replace (when present), add (when absent),
 * append. Values are literal ("{{" refused): they are applied when the backend is picked, after
 * every plugin of the route.
 */
export const HeaderEdits = Type.Object(
  {
    remove: section({ headers: Type.Optional(headerNames('Headers removed.')) }, 'Removed.'),
    replace: section({ headers: Type.Optional(headerValues('Replaced when present.')) }, 'Replaced.'),
    add: section({ headers: Type.Optional(headerValues('Added when absent.')) }, 'Added.'),
    append: section({ headers: Type.Optional(headerValues('Added next to any value.')) }, 'Appended.'),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type HeaderEdits = Static<typeof HeaderEdits>;

/** One of a route's weighted backends. */
export const WeightedBackend = Type.Object(
  {
    /** Its upstream (table.upstreams): its endpoints, balance, retries and breaker are that upstream's. */
    upstream: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * Instead of an upstream: its share of the requests is answered with this problem, calling
     * nothing. A Gateway API backendRef that does not resolve: the spec answers its share 500.
     */
    problem: Type.Optional(Type.Literal('SLC_ERR_BACKEND_INVALID')),
    /** Its share of the requests: its weight over the sum of the weights; 0: none. */
    weight: Type.Integer({ minimum: 0, maximum: MAX_WEIGHT }),
    /** Header edits of the requests this backend gets (with an upstream only). */
    requestHeaders: Type.Optional(HeaderEdits),
  },
  { additionalProperties: false },
);
export type WeightedBackend = Static<typeof WeightedBackend>;

/**
 * Exactly one of `upstream` and `backends`. Two fields rather than `backends` alone: a route of
 * one backend (every GatewayRoute, and most HTTPRoute rules) keeps the entry it always had, so
 * its table hashes as before and its request path does no weighted pick at all.
 */
export const ProxyHandler = Type.Object(
  {
    type: Type.Literal('proxy'),
    /** The upstream every request goes to (table.upstreams), but a canary's share. */
    upstream: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * Several upstreams sharing the requests by weight (at least one weight above 0; an upstream
     * may be named twice, its weights then add up). Each request goes to one, picked before its
     * first try (handlers/proxy/weighted.ts): its retries stay on that upstream, as a canary's do.
     */
    backends: Type.Optional(Type.Array(WeightedBackend, { minItems: 1, maxItems: MAX_BACKENDS })),
    /** Only beside `upstream`: a share of its requests goes to another upstream. */
    canary: Type.Optional(Canary),
    /** Copies of the requests to other upstreams, answers discarded; the route then reads bodies whole. */
    mirrors: Type.Optional(Type.Array(Mirror, { minItems: 1, maxItems: 16 })),
    /** Answers from another upstream in place of some of the upstream's error answers. */
    errorPages: Type.Optional(ErrorPages),
  },
  { additionalProperties: false },
);
export type ProxyHandler = Static<typeof ProxyHandler>;

function checkProxy(h: ProxyHandler): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  h.mirrors?.forEach((m, i) => {
    if (m.fraction !== undefined && m.fraction.numerator > m.fraction.denominator)
      problems.push({ field: `mirrors[${i}].fraction`, message: 'the numerator is above the denominator' });
  });
  if (h.backends === undefined) {
    if (h.upstream === undefined) problems.push({ field: '', message: 'needs upstream or backends' });
    return problems;
  }
  if (h.upstream !== undefined)
    problems.push({ field: 'backends', message: 'upstream and backends exclude each other: give one' });
  if (h.canary !== undefined)
    problems.push({
      field: 'canary',
      message: 'a canary goes with upstream only: backends carry their own weights',
    });
  if (!h.backends.some((b) => b.weight > 0))
    problems.push({ field: 'backends', message: 'at least one backend needs a weight above 0' });
  h.backends.forEach((b, i) => {
    if ((b.upstream === undefined) === (b.problem === undefined))
      problems.push({ field: `backends[${i}]`, message: 'needs exactly one of upstream and problem' });
    for (const verb of ['replace', 'add', 'append'] as const)
      b.requestHeaders?.[verb]?.headers?.forEach((e, j) => {
        if (e.includes('{{'))
          problems.push({
            field: `backends[${i}].requestHeaders.${verb}.headers[${j}]`,
            message: 'a backend header value is literal: "{{" is not allowed',
          });
      });
  });
  return problems;
}

export const manifest = handlerManifest({
  kind: 'proxy',
  schema: ProxyHandler,
  upstreams: (h) => [
    ...(h.upstream !== undefined ? [{ field: 'upstream', id: h.upstream }] : []),
    ...(h.backends ?? []).flatMap((b, i) =>
      b.upstream !== undefined ? [{ field: `backends[${i}].upstream`, id: b.upstream }] : [],
    ),
    ...(h.canary ? [{ field: 'canary.upstream', id: h.canary.upstream }] : []),
    ...(h.mirrors ?? []).map((m, i) => ({ field: `mirrors[${i}].upstream`, id: m.upstream })),
    ...(h.errorPages ? [{ field: 'errorPages.upstream', id: h.errorPages.upstream }] : []),
  ],
  // Every mirror and the main call send the same bytes: read once, within the body limit.
  needs: { requestBody: (h) => h.mirrors !== undefined },
  checks: checkProxy,
});
