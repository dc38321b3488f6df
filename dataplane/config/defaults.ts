/**
 * Options over defaults, where an option left undefined keeps its default. A plain spread
 * (`{ resyncMs: 10_000, ...opts }`) lets `{ resyncMs: undefined }` — what passing an absent
 * flag or field along produces — erase the default: the controller once polled every pod
 * about every millisecond that way. Every options object with defaults goes through this.
 */
export function withDefaults<D extends object, O extends object>(
  defaults: D,
  options: O,
): Omit<O, keyof D> & D {
  const out = { ...defaults } as Record<string, unknown>;
  for (const [key, value] of Object.entries(options)) if (value !== undefined) out[key] = value;
  return out as Omit<O, keyof D> & D;
}
