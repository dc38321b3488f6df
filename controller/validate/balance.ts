/**
 * A `balance` written beside a backendRef (spec.service, a version, a canary backend) → the
 * route table's Balance, or what is wrong with it. Re-checks the CRD's CEL rules, which a file
 * in standalone mode never went through: balance only with a backendRef (a url has no endpoints:
 * its host is dialled as DNS resolves it), and hashOn with exactly one of header or cookie for
 * consistent-hash and not otherwise, setCookie (session affinity) only with a cookie. The header
 * name is lower-cased: the data plane looks headers up by their lower-case names.
 */
import type { Balance as SpecBalance } from '../api/gateway-route.ts';
import { parseDuration } from '../../dataplane/config/duration.ts';
import type { Balance } from '../../dataplane/config/route-table.ts';
import type { ObjectRef } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';

/** An object that may hold a balance: spec.service, a version, a canary backend. */
interface Holder {
  url?: string;
  backendRef?: unknown;
  balance?: SpecBalance;
}

export function balanceOf(
  ref: ObjectRef,
  holder: Holder,
  at: string,
  errors: Diagnostic[],
): Balance | undefined {
  const b = holder.balance;
  if (b === undefined) return undefined;
  const before = errors.length;
  if (holder.backendRef === undefined)
    errors.push(
      invalid(
        ref,
        `${at}.balance`,
        holder.url === undefined
          ? 'applies only beside a backendRef of its own'
          : `applies only with backendRef: ${at}.url has no endpoints to balance`,
      ),
    );
  const hashing = b.policy === 'consistent-hash';
  const { header, cookie } = b.hashOn ?? {};
  if (hashing && (header === undefined) === (cookie === undefined))
    errors.push(
      invalid(
        ref,
        `${at}.balance.hashOn`,
        'consistent-hash needs exactly one of hashOn.header or hashOn.cookie',
      ),
    );
  if (!hashing && b.hashOn !== undefined)
    errors.push(invalid(ref, `${at}.balance.hashOn`, `has no meaning for policy ${b.policy}`));
  const sc = b.hashOn?.setCookie;
  if (sc !== undefined && cookie === undefined)
    errors.push(invalid(ref, `${at}.balance.hashOn.setCookie`, 'needs hashOn.cookie'));
  const maxAgeMs = sc?.maxAge === undefined ? undefined : parseDuration(sc.maxAge);
  if (maxAgeMs !== undefined && (maxAgeMs % 1000 !== 0 || maxAgeMs < 1000 || maxAgeMs > MAX_COOKIE_AGE_MS))
    errors.push(
      invalid(ref, `${at}.balance.hashOn.setCookie.maxAge`, 'must be whole seconds, from 1s to 400 days'),
    );
  if (errors.length > before) return undefined;
  if (!hashing) return { policy: b.policy };
  if (header !== undefined) return { policy: b.policy, hashOn: { header: header.toLowerCase() } };
  return {
    policy: b.policy,
    hashOn: {
      cookie: cookie!,
      ...(sc && {
        set: {
          path: sc.path ?? '/',
          ...(maxAgeMs !== undefined && { maxAgeS: maxAgeMs / 1000 }),
          ...(sc.sameSite && { sameSite: sc.sameSite }),
          ...(sc.secure && { secure: true }),
        },
      }),
    },
  };
}

/** Browsers cap a cookie's Max-Age at 400 days (RFC 6265bis). */
const MAX_COOKIE_AGE_MS = 400 * 86_400_000;
