/**
 * HTTPRoute RequestMirror filters: each is a copy of the rule's requests to its backendRef (a
 * Service, resolved like any backendRef: kind, ReferenceGrant, existence, endpoints), for all the
 * requests or a share (`percent`, or `fraction` numerator/denominator, default denominator 100),
 * as the proxy's `mirrors` (dataplane/handlers/proxy/mirror.ts: answers discarded, bounded). A
 * mirror that does not resolve says why in ResolvedRefs and is left out; the rule serves on.
 */
import type { HTTPBackendRef, HTTPRouteFilter, HTTPRouteRule } from '../api/gateway-api.ts';

interface RequestMirror {
  backendRef?: HTTPBackendRef;
  percent?: number;
  fraction?: { numerator: number; denominator?: number };
}

export interface MirrorRef {
  ref: HTTPBackendRef;
  /** Where it is written, for ResolvedRefs. */
  at: string;
  /** Absent: every request. */
  fraction?: { numerator: number; denominator: number };
}

function mirrorOf(f: HTTPRouteFilter): RequestMirror | undefined {
  return f.type === 'RequestMirror' ? (f.requestMirror as RequestMirror | undefined) : undefined;
}

/** The share as numerator/denominator, or undefined for every request (or an invalid one). */
function fractionOf(m: RequestMirror): { numerator: number; denominator: number } | undefined | null {
  const f = m.percent !== undefined ? { numerator: m.percent, denominator: 100 } : m.fraction;
  if (f === undefined) return undefined;
  const denominator = f.denominator ?? 100;
  const ok =
    Number.isInteger(f.numerator) && Number.isInteger(denominator) && f.numerator >= 0 && denominator >= 1;
  if (!ok || f.numerator > denominator) return null;
  return f.numerator === denominator ? undefined : { numerator: f.numerator, denominator };
}

/** Why a RequestMirror filter cannot be served, or undefined. */
export function mirrorProblem(f: HTTPRouteFilter): string | undefined {
  const m = mirrorOf(f);
  if (m?.backendRef === undefined) return 'RequestMirror without its requestMirror.backendRef';
  if (m.percent !== undefined && m.fraction !== undefined)
    return 'requestMirror: percent and fraction exclude each other';
  if (fractionOf(m) === null)
    return 'requestMirror: the share must be between 0 and 100 % (numerator ≤ denominator)';
  return undefined;
}

/** Every backendRef the rule's RequestMirror filters name, valid or not (the Services to watch). */
export function mirrorBackendRefs(rule: { filters?: HTTPRouteFilter[] }): HTTPBackendRef[] {
  return (rule.filters ?? []).flatMap((f) => {
    const ref = mirrorOf(f)?.backendRef;
    return ref ? [ref] : [];
  });
}

/** The rule's mirrors, in filter order (those with a problem left out: the route is refused for them). */
export function mirrorRefs(rule: HTTPRouteRule, i: number): MirrorRef[] {
  return (rule.filters ?? []).flatMap((f, j): MirrorRef[] => {
    const m = mirrorOf(f);
    if (m?.backendRef === undefined || mirrorProblem(f)) return [];
    const fraction = fractionOf(m);
    return [
      {
        ref: m.backendRef,
        at: `spec.rules[${i}].filters[${j}].requestMirror.backendRef`,
        ...(fraction && { fraction }),
      },
    ];
  });
}
