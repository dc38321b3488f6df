/**
 * Dates as configuration writes them (RFC 3339) and as HTTP sends them (IMF-fixdate, RFC 9110
 * §5.6.7). Pure: no clock is read, so the controller's compile stays deterministic.
 */

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * ms since the epoch, in whole seconds (fractions dropped), or undefined when the text is not an
 * RFC 3339 date-time with a zone or names an impossible one (2026-02-31, 24:00, +25:00); Date.parse
 * would roll such dates over instead.
 */
export function parseRfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const zoneMinutes = m[7] === 'Z' ? 0 : (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10]));
  const daysInMonth = Date.UTC(y, mo, 0) / 86_400_000 - Date.UTC(y, mo - 1, 0) / 86_400_000;
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth || h > 23 || mi > 59 || s > 59) return undefined;
  if (Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59) return undefined;
  return Date.UTC(y, mo - 1, d, h, mi, s) - zoneMinutes * 60_000;
}

/** "Wed, 01 Jul 2026 10:30:00 GMT". */
export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}
