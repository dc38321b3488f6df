/**
 * proxy-cache config: an RFC 9111 shared cache in front of the route's upstream. `config: {}`
 * is the RFC's behaviour: GET and HEAD, only what the response allows (Cache-Control, Expires,
 * Vary, the Authorization rules), no default TTL, memory store of 64 MiB. Durations are
 * strings ("250ms", "10s", "1h").
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { DURATION_PATTERN, parseDuration } from '../../config/duration.ts';
import { HEADER_NAME_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';

const MEMORY_WITH_REDIS = 'is for store "memory"; this plugin uses store "redis"';
const NO_GET =
  'must include GET: HEAD is answered from GET entries and POST responses are stored as GET entries';
const SHORT_LOCK = 'must be at least 100ms';
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
const DEFAULT_MAX_ENTRY = 1024 * 1024;

const duration = (description: string) =>
  Type.String({ pattern: DURATION_PATTERN, maxLength: 32, description });

export const ProxyCacheConfig = Type.Object(
  {
    store: Type.Optional(
      Type.Union([Type.Literal('memory'), Type.Literal('redis')], {
        description:
          '"memory" (default): this process only, bounded by memory.maxBytes; "redis": shared by every replica ' +
          '(the data plane must run with --redis).',
      }),
    ),
    memory: Type.Optional(
      Type.Object(
        {
          maxBytes: Type.Optional(
            Type.Integer({
              minimum: 1024,
              maximum: 64 * 1024 * 1024 * 1024,
              description:
                'Bound of the memory store, least recently used entries evicted first (default 64 MiB).',
            }),
          ),
        },
        { additionalProperties: false, description: 'The memory store (store "memory").' },
      ),
    ),
    maxEntryBytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 512 * 1024 * 1024,
        description: 'A response whose body is larger is passed through and not stored (default 1 MiB).',
      }),
    ),
    methods: Type.Optional(
      Type.Array(
        Type.Union([Type.Literal('GET'), Type.Literal('HEAD'), Type.Literal('POST')], {
          description: 'GET, HEAD or POST.',
        }),
        {
          minItems: 1,
          maxItems: 3,
          uniqueItems: true,
          description:
            'Methods the cache handles (default GET and HEAD). POST (spec §4.4 rule 4, RFC 9110 §9.3.3): a POST is ' +
            'always forwarded; its response is stored, as the GET of its URI, only with explicit freshness ' +
            '(max-age, s-maxage or Expires) and a Content-Location equal to the request path.',
          'x-kubernetes-validations': [{ rule: "'GET' in self", message: NO_GET }],
        },
      ),
    ),
    varyHeaders: Type.Optional(
      Type.Array(
        Type.String({ pattern: HEADER_NAME_PATTERN, maxLength: 256, description: 'A header name.' }),
        {
          maxItems: 16,
          description:
            'Request headers whose values are always part of the key (one stored variant each), beside what the ' +
            "response's Vary selects (checked on every hit).",
        },
      ),
    ),
    maxStaleWhileRevalidate: Type.Optional(
      duration(
        "Upper bound on a response's stale-while-revalidate (default 1h): served stale while one background request revalidates.",
      ),
    ),
    maxStaleIfError: Type.Optional(
      duration(
        "Upper bound on a response's stale-if-error (default 1d): served stale when the upstream fails or answers 5xx.",
      ),
    ),
    keepForRevalidation: Type.Optional(
      duration(
        'How long a stale entry with a validator (ETag, Last-Modified) is kept for conditional revalidation (default 10m).',
      ),
    ),
    lock: Type.Optional(
      Type.Object(
        {
          wait: Type.Optional(
            duration(
              'Concurrent misses for one key wait this long for the first to store its response, then go to the upstream ' +
                'themselves (default 5s; 0ms: no coalescing).',
            ),
          ),
          ttl: Type.Optional(
            duration(
              'Lifetime of the cross-replica miss lock in Redis (default 10s; released when the miss ends).',
            ),
          ),
        },
        {
          additionalProperties: false,
          description: 'Coalescing of concurrent misses for one key.',
          'x-kubernetes-validations': [
            {
              rule: "!has(self.ttl) || duration(self.ttl) >= duration('100ms')",
              message: SHORT_LOCK,
              fieldPath: '.ttl',
            },
          ],
        },
      ),
    ),
    sharePublic: Type.Optional(
      Type.Boolean({
        description:
          'On authenticated routes (a consumer is set), a response marked Cache-Control: public is stored once for ' +
          "every caller (default true); otherwise, and always for other responses, entries are the caller's own.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'An RFC 9111 shared cache in front of the upstream ({} is the RFC: GET and HEAD, memory store).',
    // The API server's copy of checkProxyCacheConfig (same messages; the controller's names the sizes).
    'x-kubernetes-validations': [
      {
        rule: "!has(self.store) || self.store != 'redis' || !has(self.memory)",
        message: MEMORY_WITH_REDIS,
        fieldPath: '.memory',
      },
      {
        rule:
          "(has(self.store) && self.store == 'redis') || " +
          `(has(self.maxEntryBytes) ? self.maxEntryBytes : ${DEFAULT_MAX_ENTRY}) <= ` +
          `(has(self.memory) && has(self.memory.maxBytes) ? self.memory.maxBytes : ${DEFAULT_MAX_BYTES})`,
        message: 'is above memory.maxBytes: no entry that size could be kept',
        fieldPath: '.maxEntryBytes',
      },
    ],
  },
);

export type ProxyCacheConfig = Static<typeof ProxyCacheConfig>;

export function checkProxyCacheConfig(c: ProxyCacheConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const maxBytes = c.memory?.maxBytes ?? DEFAULT_MAX_BYTES;
  const maxEntry = c.maxEntryBytes ?? DEFAULT_MAX_ENTRY;
  if (c.store === 'redis' && c.memory !== undefined)
    problems.push({ field: 'memory', message: MEMORY_WITH_REDIS });
  if ((c.store ?? 'memory') === 'memory' && maxEntry > maxBytes)
    problems.push({
      field: 'maxEntryBytes',
      message: `(${maxEntry}) is above memory.maxBytes (${maxBytes}): no entry that size could be kept`,
    });
  if (c.methods !== undefined && !c.methods.includes('GET'))
    problems.push({ field: 'methods', message: NO_GET });
  const lockTtl = parseDuration(c.lock?.ttl ?? '10s') ?? 0;
  if (lockTtl < 100) problems.push({ field: 'lock.ttl', message: SHORT_LOCK });
  return problems;
}

export const manifest = pluginManifest({
  name: 'proxy-cache',
  phase: 'cache',
  schema: ProxyCacheConfig,
  checks: checkProxyCacheConfig,
  needs: { responseBody: true },
});
