/** The idempotency config, with its defaults filled in and durations in ms: compiled once per snapshot. */
import { parseDuration } from '../../config/duration.ts';
import { checkIdempotencyConfig, type IdempotencyConfig, OPERATIONS_PATH } from './manifest.ts';

export interface Settings {
  methods: ReadonlySet<string>;
  required: boolean;
  minKey: number;
  maxKey: number;
  ttlMs: number;
  leaseMs: number;
  /** 0 = answer 409 at once. */
  waitMs: number;
  retryAfter: string;
  fingerprintHeaders: readonly string[];
  maxResponseBytes: number;
  /** "<operationsPath>/" when async, else null. */
  operationsPrefix: string | null;
}

export const DEFAULTS = {
  methods: ['POST', 'PATCH'],
  minKey: 32,
  maxKey: 64,
  ttl: '24h',
  lease: '10s',
  wait: '10s',
  retryAfter: 1,
  fingerprintHeaders: ['authorization', 'user-agent'],
  maxResponseBytes: 1024 * 1024,
  operationsPath: OPERATIONS_PATH,
} as const;

const ms = (text: string | undefined, fallback: string): number => parseDuration(text ?? fallback) ?? 0;

export function compileSettings(c: IdempotencyConfig): Settings {
  // validateRouteTable has checked these; a table built by hand still cannot get past them.
  const problems = checkIdempotencyConfig(c);
  if (problems.length) throw new Error(`idempotency: ${problems[0].field} ${problems[0].message}`);
  const minKey = c.keyLength?.min ?? DEFAULTS.minKey;
  const maxKey = c.keyLength?.max ?? DEFAULTS.maxKey;
  const leaseMs = ms(c.lease, DEFAULTS.lease);
  return {
    methods: new Set(c.methods ?? DEFAULTS.methods),
    required: c.required ?? false,
    minKey,
    maxKey,
    ttlMs: Math.max(ms(c.ttl, DEFAULTS.ttl), 1),
    leaseMs,
    waitMs: c.inProgress?.mode === 'wait' ? ms(c.inProgress.wait, DEFAULTS.wait) : 0,
    retryAfter: String(c.inProgress?.retryAfter ?? DEFAULTS.retryAfter),
    fingerprintHeaders: (c.fingerprint?.headers ?? DEFAULTS.fingerprintHeaders).map((h) => h.toLowerCase()),
    maxResponseBytes: c.maxResponseBytes ?? DEFAULTS.maxResponseBytes,
    operationsPrefix: c.async?.enabled ? `${c.async.operationsPath ?? DEFAULTS.operationsPath}/` : null,
  };
}
