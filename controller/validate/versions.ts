/**
 * spec.versioning + spec.versions → the versions the compiler serves, or the reasons the
 * GatewayRoute is refused (each naming its field): two versions with one name or one selector,
 * a default naming no version, a version nothing selects, canary weights not summing to 100,
 * a sunset before the deprecation date. Backends are resolved here like service.url, so the
 * compiler only ever sees URLs.
 */
import { parseRfc3339 } from '../../dataplane/config/http-date.ts';
import type { Balance } from '../../dataplane/config/route-table.ts';
import type { GatewayRouteSpec, Version } from '../api/gateway-route.ts';
import type { ObjectRef } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';
import { balanceOf } from './balance.ts';
import { resolveBackend } from './service-url.ts';

export const DEFAULT_VERSION_HEADER = 'accept-version';
export const DEFAULT_MEDIA_TYPE_PARAMETER = 'version';

export interface ModelVersion {
  name: string;
  /** Index in spec.versions (for fields in diagnostics). */
  index: number;
  path?: string;
  header?: string;
  mediaType?: string;
  /**
   * One backend of weight 100, or a canary's two; a backendRef's balance is its own, else
   * spec.service's (a version without a backend of its own uses the service's, balance included).
   */
  backends: { url: string; weight: number; balance?: Balance }[];
  sticky?: { consumer: true } | { cookie: string };
  deprecation?: { dateMs: number; sunsetMs?: number; link?: string; gone: boolean };
  plugins: Version['plugins'];
}

export interface ModelVersions {
  default?: string;
  /** Lower-case. */
  header: string;
  /** Lower-case (media-type parameter names are case-insensitive, RFC 9110 §8.3.1). */
  mediaTypeParameter: string;
  list: ModelVersion[];
}

export function validateVersions(
  ref: ObjectRef,
  spec: GatewayRouteSpec,
  serviceUrl: string | undefined,
  serviceBalance?: Balance,
): { versions?: ModelVersions; diagnostics: Diagnostic[] } {
  const { versioning, versions } = spec;
  if (versions === undefined) {
    if (versioning === undefined) return { diagnostics: [] };
    return { diagnostics: [invalid(ref, 'spec.versioning', 'is set but spec.versions is not')] };
  }
  const errors: Diagnostic[] = [];
  const list: ModelVersion[] = [];
  // name and each selector must be unique across versions: the first holder of a value is kept.
  const taken = {
    name: new Map<string, number>(),
    path: new Map<string, number>(),
    header: new Map<string, number>(),
    mediaType: new Map<string, number>(),
  };
  versions.forEach((v, i) => {
    const at = `spec.versions[${i}]`;
    for (const key of ['name', 'path', 'header', 'mediaType'] as const) {
      const value = v[key];
      if (value === undefined) continue;
      const k = key === 'path' ? value.replace(/\/+$/, '') : value;
      const first = taken[key].get(k);
      if (first === undefined) taken[key].set(k, i);
      else errors.push(invalid(ref, `${at}.${key}`, `"${value}" is already used by spec.versions[${first}]`));
    }
    if (v.path !== undefined && (v.path.replace(/\/+$/, '') === '' || v.path.includes('//')))
      errors.push(invalid(ref, `${at}.path`, `"${v.path}" must be a path prefix such as /v2`));
    const isDefault = versioning?.default === v.name;
    if (v.path === undefined && v.header === undefined && v.mediaType === undefined && !isDefault)
      errors.push(
        invalid(ref, at, 'no request can select it: set path, header or mediaType, or make it the default'),
      );
    const backends = backendsOf(ref, v, at, { url: serviceUrl, balance: serviceBalance }, errors);
    const deprecation = deprecationOf(ref, v, at, errors);
    const sticky = stickyOf(ref, v, at, errors);
    if (backends)
      list.push({
        name: v.name,
        index: i,
        ...(v.path !== undefined && { path: v.path.replace(/\/+$/, '') }),
        ...(v.header !== undefined && { header: v.header }),
        ...(v.mediaType !== undefined && { mediaType: v.mediaType }),
        backends,
        ...(sticky && { sticky }),
        ...(deprecation && { deprecation }),
        plugins: v.plugins,
      });
  });
  if (versioning?.default !== undefined && !taken.name.has(versioning.default))
    errors.push(
      invalid(ref, 'spec.versioning.default', `names no version in spec.versions: "${versioning.default}"`),
    );
  if (errors.length) return { diagnostics: errors };
  return {
    versions: {
      ...(versioning?.default !== undefined && { default: versioning.default }),
      header: (versioning?.header ?? DEFAULT_VERSION_HEADER).toLowerCase(),
      mediaTypeParameter: (versioning?.mediaTypeParameter ?? DEFAULT_MEDIA_TYPE_PARAMETER).toLowerCase(),
      list,
    },
    diagnostics: [],
  };
}

/** The version's backends: its canary, its url/backendRef, or the service's. */
function backendsOf(
  ref: ObjectRef,
  v: Version,
  at: string,
  service: { url: string | undefined; balance: Balance | undefined },
  errors: Diagnostic[],
): ModelVersion['backends'] | undefined {
  const own = v.url !== undefined || v.backendRef !== undefined;
  // A backendRef without a balance of its own takes the service's; a url never has one.
  const balance = (holder: Parameters<typeof balanceOf>[1], where: string) =>
    balanceOf(ref, holder, where, errors) ?? (holder.backendRef === undefined ? undefined : service.balance);
  if (v.backends !== undefined) {
    if (own) {
      errors.push(invalid(ref, `${at}.backends`, 'set either backends or url/backendRef, not both'));
      return undefined;
    }
    if (v.balance !== undefined)
      errors.push(
        invalid(
          ref,
          `${at}.balance`,
          `applies only beside a backendRef of its own: set it on ${at}.backends[]`,
        ),
      );
    const sum = v.backends.reduce((n, b) => n + b.weight, 0);
    if (sum !== 100) {
      errors.push(invalid(ref, `${at}.backends`, `weights sum to ${sum}, not 100`));
      return undefined;
    }
    const out: ModelVersion['backends'] = [];
    v.backends.forEach((b, j) => {
      const where = `${at}.backends[${j}]`;
      const r = resolveBackend(ref, b, where);
      errors.push(...r.diagnostics);
      const bal = balance(b, where);
      if (r.url !== undefined) out.push({ url: r.url, weight: b.weight, ...(bal && { balance: bal }) });
    });
    return out.length === v.backends.length ? out : undefined;
  }
  if (!own) {
    if (v.balance !== undefined)
      errors.push(
        invalid(
          ref,
          `${at}.balance`,
          "applies only beside a backendRef of its own (this version uses the service's backend: set spec.service.balance)",
        ),
      );
    if (service.url === undefined) return undefined;
    return [{ url: service.url, weight: 100, ...(service.balance && { balance: service.balance }) }];
  }
  const r = resolveBackend(ref, v, at);
  errors.push(...r.diagnostics);
  const bal = balance(v, at);
  return r.url === undefined ? undefined : [{ url: r.url, weight: 100, ...(bal && { balance: bal }) }];
}

function stickyOf(ref: ObjectRef, v: Version, at: string, errors: Diagnostic[]): ModelVersion['sticky'] {
  const s = v.sticky;
  if (s === undefined) return undefined;
  if (v.backends === undefined) {
    errors.push(invalid(ref, `${at}.sticky`, 'only a version with backends (a canary) can be sticky'));
    return undefined;
  }
  if ((s.consumer === true) === (s.cookie !== undefined)) {
    errors.push(invalid(ref, `${at}.sticky`, 'exactly one of consumer: true or cookie must be set'));
    return undefined;
  }
  return s.cookie !== undefined ? { cookie: s.cookie } : { consumer: true };
}

function deprecationOf(
  ref: ObjectRef,
  v: Version,
  at: string,
  errors: Diagnostic[],
): ModelVersion['deprecation'] {
  const d = v.deprecation;
  if (d === undefined) return undefined;
  const dateMs = dateField(ref, `${at}.deprecation.date`, d.date, errors);
  const sunsetMs =
    d.sunset === undefined ? undefined : dateField(ref, `${at}.deprecation.sunset`, d.sunset, errors);
  if (dateMs === undefined || (d.sunset !== undefined && sunsetMs === undefined)) return undefined;
  if (sunsetMs !== undefined && sunsetMs < dateMs) {
    errors.push(invalid(ref, `${at}.deprecation.sunset`, `${d.sunset} is before deprecation.date ${d.date}`));
    return undefined;
  }
  if (d.goneAfterSunset && sunsetMs === undefined) {
    errors.push(invalid(ref, `${at}.deprecation.goneAfterSunset`, 'needs deprecation.sunset'));
    return undefined;
  }
  return {
    dateMs,
    ...(sunsetMs !== undefined && { sunsetMs }),
    ...(d.link !== undefined && { link: d.link }),
    gone: d.goneAfterSunset ?? false,
  };
}

/** ms since the epoch (whole seconds: the headers carry seconds), or a diagnostic. */
function dateField(ref: ObjectRef, field: string, text: string, errors: Diagnostic[]): number | undefined {
  const ms = parseRfc3339(text);
  if (ms === undefined)
    errors.push(invalid(ref, field, `${JSON.stringify(text)} is not a valid RFC 3339 date-time`));
  return ms;
}
