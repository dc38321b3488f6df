/** Kubernetes-style durations ("250ms", "5s", "1m30s") → milliseconds. Shared by the controller (upstream timeouts) and plugin configs. */

const WHOLE = /^(?:[0-9]+(?:ms|h|m|s))+$/;
// "ms" before "m", or "5ms" would read as five minutes and a stray "s".
const PART = /([0-9]+)(ms|h|m|s)/g;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** Node's timers hold at most 2^31-1 ms (about 24.8 days); a longer timeout would fire at once. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** The duration in ms (units may repeat and come in any order, as Go's time.ParseDuration allows), or undefined. */
export function parseDuration(text: string): number | undefined {
  if (!WHOLE.test(text)) return undefined;
  let ms = 0;
  for (const [, n, unit] of text.matchAll(PART)) ms += Number(n) * UNIT_MS[unit];
  return ms;
}

/** The JSON Schema pattern of a duration string, for config schemas. */
export const DURATION_PATTERN = '^([0-9]+(ms|h|m|s))+$';
