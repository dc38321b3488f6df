/** The proxy-cache config, defaults filled in and durations in ms: compiled once per snapshot. */
import { parseDuration } from '../../config/duration.ts';
import { checkProxyCacheConfig, type ProxyCacheConfig } from './manifest.ts';
import { overridesToStrip } from './override-headers.ts';

export interface Settings {
  store: 'memory' | 'redis';
  memoryMaxBytes: number;
  maxEntryBytes: number;
  /** GET is always there; HEAD and POST when configured. */
  head: boolean;
  post: boolean;
  /** Lower-case request header names in the key. */
  varyHeaders: readonly string[];
  /** Override headers removed from the requests the cache answers or stores from (override-headers.ts). */
  stripHeaders: ReadonlySet<string>;
  maxSwrS: number;
  maxSieS: number;
  keepForRevalidationMs: number;
  lockWaitMs: number;
  lockTtlMs: number;
  sharePublic: boolean;
}

export const DEFAULTS = {
  memoryMaxBytes: 64 * 1024 * 1024,
  maxEntryBytes: 1024 * 1024,
  methods: ['GET', 'HEAD'],
  maxStaleWhileRevalidate: '1h',
  maxStaleIfError: '24h',
  keepForRevalidation: '10m',
  lockWait: '5s',
  lockTtl: '10s',
} as const;

const ms = (text: string | undefined, fallback: string): number => parseDuration(text ?? fallback) ?? 0;

export function compileSettings(c: ProxyCacheConfig): Settings {
  // validateRouteTable has checked these; a table built by hand still cannot get past them.
  const problems = checkProxyCacheConfig(c);
  if (problems.length) throw new Error(`proxy-cache: ${problems[0].field} ${problems[0].message}`);
  const methods: readonly string[] = c.methods ?? DEFAULTS.methods;
  return {
    store: c.store ?? 'memory',
    memoryMaxBytes: c.memory?.maxBytes ?? DEFAULTS.memoryMaxBytes,
    maxEntryBytes: c.maxEntryBytes ?? DEFAULTS.maxEntryBytes,
    head: methods.includes('HEAD'),
    post: methods.includes('POST'),
    varyHeaders: (c.varyHeaders ?? []).map((h) => h.toLowerCase()),
    stripHeaders: overridesToStrip(c.varyHeaders ?? []),
    maxSwrS: ms(c.maxStaleWhileRevalidate, DEFAULTS.maxStaleWhileRevalidate) / 1000,
    maxSieS: ms(c.maxStaleIfError, DEFAULTS.maxStaleIfError) / 1000,
    keepForRevalidationMs: ms(c.keepForRevalidation, DEFAULTS.keepForRevalidation),
    lockWaitMs: ms(c.lock?.wait, DEFAULTS.lockWait),
    lockTtlMs: ms(c.lock?.ttl, DEFAULTS.lockTtl),
    sharePublic: c.sharePublic ?? true,
  };
}
