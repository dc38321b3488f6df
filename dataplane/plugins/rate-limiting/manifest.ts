/**
 * rate-limiting config: the spec's shape (§2.3: `minute: 100, policy: local`) plus second, hour
 * and day. Fixed windows, counted per process (`local`) or across every replica (`redis`), there
 * exactly (a Redis trip per decision) or synced every `syncMs` (none: approximate).
 */
import { type Static, Type } from '@sinclair/typebox';
import { HEADER_NAME_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';
import type { ConfigProblem } from '../../config/config-problem.ts';

const limit = (window: string) =>
  Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: `Requests allowed per ${window}.` }),
  );

const NO_WINDOW = 'set at least one of second, minute, hour, day';
const NO_HEADER = 'is required with limitBy: header';
const SYNC_NOT_REDIS = 'is only for policy: redis';

export const RateLimitingConfig = Type.Object(
  {
    second: limit('second'),
    minute: limit('minute'),
    hour: limit('hour'),
    day: limit('day'),
    policy: Type.Optional(
      Type.Union([Type.Literal('local'), Type.Literal('redis')], {
        description:
          'local (default): counted in each data-plane process; redis: one count across all replicas.',
      }),
    ),
    limitBy: Type.Optional(
      Type.Union(
        [Type.Literal('consumer'), Type.Literal('credential'), Type.Literal('ip'), Type.Literal('header')],
        {
          description:
            'Whose requests share a count (default consumer; a request with no consumer or credential counts by IP).',
        },
      ),
    ),
    header: Type.Optional(
      Type.String({
        pattern: HEADER_NAME_PATTERN,
        maxLength: 256,
        description: 'With limitBy header: the request header whose value is counted (absent: by IP).',
      }),
    ),
    scope: Type.Optional(
      Type.Union([Type.Literal('route'), Type.Literal('service')], {
        description:
          'route (default): one count per path of a route (each path is its own entry); service: one count across every route of the GatewayRoute. Each plugin keeps its own count.',
      }),
    ),
    syncMs: Type.Optional(
      Type.Integer({
        minimum: 10,
        maximum: 60_000,
        description:
          'redis policy: decide in each replica and add its counts to Redis every syncMs, instead of one Redis ' +
          'round trip per decision. No request waits for Redis; between syncs a replica admits at most its share ' +
          '(the room left ÷ --replicas-hint), so near the limit the fleet may admit somewhat more. Absent (default): exact.',
      }),
    ),
    failMode: Type.Optional(
      Type.Union([Type.Literal('open'), Type.Literal('closed')], {
        description:
          'redis policy, when Redis cannot answer: open (default) counts locally at limit ÷ --replicas-hint; closed answers 503.',
      }),
    ),
    hideHeaders: Type.Optional(
      Type.Boolean({ description: 'Do not send RateLimit-Policy / RateLimit headers.' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Requests allowed per window; over it, 429 with Retry-After.',
    // The API server's copy of checkRateLimitingConfig (same messages, same fields).
    'x-kubernetes-validations': [
      { rule: 'has(self.second) || has(self.minute) || has(self.hour) || has(self.day)', message: NO_WINDOW },
      {
        rule: "!has(self.limitBy) || self.limitBy != 'header' || has(self.header)",
        message: NO_HEADER,
        fieldPath: '.header',
        reason: 'FieldValueRequired',
      },
      {
        rule: "!has(self.syncMs) || (has(self.policy) && self.policy == 'redis')",
        message: SYNC_NOT_REDIS,
        fieldPath: '.syncMs',
        reason: 'FieldValueForbidden',
      },
    ],
  },
);
export type RateLimitingConfig = Static<typeof RateLimitingConfig>;

export const WINDOWS = { second: 1, minute: 60, hour: 3_600, day: 86_400 } as const;

/** What the schema cannot say; field paths are relative to the config ('' = the config itself). */
export function checkRateLimitingConfig(c: RateLimitingConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (!Object.keys(WINDOWS).some((w) => c[w as keyof typeof WINDOWS] !== undefined))
    problems.push({ field: '', message: NO_WINDOW });
  if (c.limitBy === 'header' && c.header === undefined)
    problems.push({ field: 'header', message: NO_HEADER });
  if (c.syncMs !== undefined && c.policy !== 'redis')
    problems.push({ field: 'syncMs', message: SYNC_NOT_REDIS });
  return problems;
}

export const manifest = pluginManifest({
  name: 'rate-limiting',
  phase: 'rate-limit',
  schema: RateLimitingConfig,
  checks: checkRateLimitingConfig,
});
