/**
 * What the schema cannot say about an upstream's endpoints, balance and outlier detection: that each address is an
 * IP address (a host name here would be resolved per connection, which the endpoints exist to
 * avoid), that no endpoint is listed twice (it would get twice the share), and that the balance
 * and outlier detection fit the endpoints.
 */
import { isIP } from 'node:net';
import type { ConfigProblem } from './config-problem.ts';
import type { Upstream } from './route-table.ts';

export function endpointProblems(u: Upstream): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (u.balance !== undefined) {
    if (u.endpoints === undefined)
      problems.push({ field: 'balance', message: 'applies only to an upstream with endpoints' });
    const hashing = u.balance.policy === 'consistent-hash';
    if (hashing && u.balance.hashOn === undefined)
      problems.push({
        field: 'balance.hashOn',
        message: 'consistent-hash needs a header or a cookie to hash',
      });
    if (!hashing && u.balance.hashOn !== undefined)
      problems.push({ field: 'balance.hashOn', message: `has no meaning for ${u.balance.policy}` });
  }
  if (u.outlierDetection !== undefined) {
    if (u.endpoints === undefined)
      problems.push({ field: 'outlierDetection', message: 'applies only to an upstream with endpoints' });
    if (u.outlierDetection.maxEjectionMs < u.outlierDetection.baseEjectionMs)
      problems.push({ field: 'outlierDetection.maxEjectionMs', message: 'must be at least baseEjectionMs' });
  }
  const seen = new Set<string>();
  u.endpoints?.forEach((e, i) => {
    // node:net accepts a zone ("fe80::1%eth0"): an EndpointSlice address has none.
    if (isIP(e.address) === 0 || e.address.includes('%'))
      problems.push({
        field: `endpoints[${i}].address`,
        message: `not an IPv4 or IPv6 address: ${e.address}`,
      });
    const key = endpointKey(e);
    if (seen.has(key)) problems.push({ field: `endpoints[${i}]`, message: `${key} is listed twice` });
    seen.add(key);
  });
  return problems;
}

/** "10.0.0.7:8080", "[fd00::7]:8080": an endpoint's name in logs, errors and maps. */
export function endpointKey(e: { address: string; port: number }): string {
  return e.address.includes(':') ? `[${e.address}]:${e.port}` : `${e.address}:${e.port}`;
}
