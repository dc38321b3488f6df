/**
 * idempotency config: the spec's idempotency-key mechanism (§2.1, §3, §4.2, §4.3, §8). Every
 * field has a default, so `config: {}` is the spec's contract: POST and PATCH, keys of 32–64
 * characters, records kept 24 hours, 409 while a first request runs. Durations are strings
 * ("250ms", "10s", "24h").
 */
import { type Static, Type } from '@sinclair/typebox';
import { HEADER_NAME_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';
import { DURATION_PATTERN, parseDuration } from '../../config/duration.ts';
import type { ConfigProblem } from '../../config/config-problem.ts';

const duration = (description: string) =>
  Type.String({ pattern: DURATION_PATTERN, maxLength: 32, description });
const TOKEN = HEADER_NAME_PATTERN;
const SHORT_LEASE = 'must be at least 100ms';
const [MIN, MAX] = ['(has(self.min) ? self.min : 32)', '(has(self.max) ? self.max : 64)'];

export const IdempotencyConfig = Type.Object(
  {
    methods: Type.Optional(
      Type.Array(
        Type.Union(
          [Type.Literal('POST'), Type.Literal('PATCH'), Type.Literal('PUT'), Type.Literal('DELETE')],
          { description: 'POST, PATCH, PUT or DELETE.' },
        ),
        {
          minItems: 1,
          maxItems: 4,
          description:
            'Methods the key applies to (default POST and PATCH); other methods pass through untouched.',
        },
      ),
    ),
    required: Type.Optional(
      Type.Boolean({
        description: 'A request of those methods without Idempotency-Key gets 400 (default false).',
      }),
    ),
    keyLength: Type.Optional(
      Type.Object(
        {
          min: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 255, description: 'Default 32 (the spec minimum).' }),
          ),
          max: Type.Optional(
            Type.Integer({ minimum: 1, maximum: 255, description: 'Default 64 (the spec maximum).' }),
          ),
        },
        {
          additionalProperties: false,
          description: 'Accepted key lengths, in characters.',
          'x-kubernetes-validations': [
            {
              rule: `${MIN} <= ${MAX}`,
              message: 'is above keyLength.max (min defaults to 32, max to 64)',
              fieldPath: '.min',
            },
          ],
        },
      ),
    ),
    ttl: Type.Optional(duration('How long a record is kept, from its creation (default 24h).')),
    lease: Type.Optional(
      duration(
        'How long a replica may hold a record IN_PROGRESS without renewing (default 10s; renewed every third of it while ' +
          'the upstream call runs). After a crash, the key can be taken over once this lapses.',
      ),
    ),
    inProgress: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            Type.Union([Type.Literal('conflict'), Type.Literal('wait')], {
              description:
                '"conflict" (default): answer 409 at once; "wait": wait for the first request to finish.',
            }),
          ),
          wait: Type.Optional(
            duration('With mode wait: the longest wait before answering 409 (default 10s).'),
          ),
          retryAfter: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 3600,
              description: 'Retry-After seconds on a 409 (default 1).',
            }),
          ),
        },
        {
          additionalProperties: false,
          description: 'What a request finds when the same key is still running.',
        },
      ),
    ),
    fingerprint: Type.Optional(
      Type.Object(
        {
          headers: Type.Optional(
            Type.Array(Type.String({ pattern: TOKEN, maxLength: 256, description: 'A header name.' }), {
              maxItems: 32,
              description:
                'Request headers the operation depends on; their values are part of the fingerprint ' +
                '(default Authorization and User-Agent, as the spec names).',
            }),
          ),
        },
        {
          additionalProperties: false,
          description: 'What, besides method, route, path, query and body, makes two requests differ.',
        },
      ),
    ),
    maxResponseBytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 64 * 1024 * 1024,
        description:
          'Largest response body stored (default 1 MiB). A larger response is sent to the client in full but stored ' +
          'without its body: a replay gets the status and headers, an empty body and X-Sluice-Replay-Body: omitted.',
      }),
    ),
    async: Type.Optional(
      Type.Object(
        {
          enabled: Type.Boolean({
            description:
              'Answer 202 Accepted at once and run the upstream call in the background (spec §4.3).',
          }),
          operationsPath: Type.Optional(
            Type.String({
              pattern: "^/[A-Za-z0-9\\-._~!$&'()+,=:@/]*[A-Za-z0-9\\-._~!$&'()+,=:@]$",
              maxLength: 256,
              description:
                'Where the caller looks an operation up: GET <operationsPath>/<key> (default /operations). A route ' +
                'carrying this plugin must match that path.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'Asynchronous operations: 202 Accepted at once, the result looked up later by its key.',
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Idempotency-Key handling: one execution per (caller, key); retries get the stored response.',
    'x-kubernetes-validations': [
      {
        rule: "!has(self.lease) || duration(self.lease) >= duration('100ms')",
        message: SHORT_LEASE,
        fieldPath: '.lease',
      },
    ],
  },
);
export type IdempotencyConfig = Static<typeof IdempotencyConfig>;

/** What the schema cannot say; field paths are relative to the config. */
export function checkIdempotencyConfig(c: IdempotencyConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const min = c.keyLength?.min ?? 32;
  const max = c.keyLength?.max ?? 64;
  if (min > max)
    problems.push({ field: 'keyLength.min', message: `(${min}) is above keyLength.max (${max})` });
  if (c.lease !== undefined && (parseDuration(c.lease) ?? 0) < 100)
    problems.push({ field: 'lease', message: SHORT_LEASE });
  return problems;
}

/** Where an asynchronous operation is looked up when async.operationsPath is not given. */
export const OPERATIONS_PATH = '/operations';

export const manifest = pluginManifest({
  name: 'idempotency',
  phase: 'idempotency',
  schema: IdempotencyConfig,
  checks: checkIdempotencyConfig,
  needs: { requestBody: true, responseBody: true },
  sharedState: { what: 'idempotency records', why: 'a retry landing on another worker would execute again' },
  // The 202's Location: GET <operationsPath>/<key> must reach this plugin on a route of the same caller.
  ownPaths: (c) =>
    c.async?.enabled
      ? [
          {
            name: 'operations',
            path: c.async.operationsPath ?? OPERATIONS_PATH,
            methods: ['GET', 'HEAD'],
            field: 'async.operationsPath',
          },
        ]
      : [],
});
