/**
 * A `balance` written beside a backendRef (spec.service, a version, a canary backend) → the
 * route table's Balance, or what is wrong with it. Re-checks the CRD's CEL rules, which a file
 * in standalone mode never went through: balance only with a backendRef (a url has no endpoints:
 * its host is dialled as DNS resolves it), and hashOn with exactly one of header or cookie for
 * consistent-hash and not otherwise. The header name is lower-cased: the data plane looks
 * headers up by their lower-case names.
 */
import type { Balance as SpecBalance } from '../api/gateway-route.ts';
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
  if (errors.length > before) return undefined;
  if (!hashing) return { policy: b.policy };
  return {
    policy: b.policy,
    hashOn: header !== undefined ? { header: header.toLowerCase() } : { cookie: cookie! },
  };
}
