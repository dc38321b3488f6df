/**
 * IP addresses and CIDR ranges (IPv4 and IPv6) as configuration writes them, read one way: the
 * data plane's --trusted-proxies and the ip-restriction plugin's allow/deny lists. An entry is an
 * address ("10.0.0.7", "2001:db8::1") or an address and a prefix length ("10.0.0.0/8",
 * "2001:db8::/32"); host bits under the prefix are ignored, as nginx's allow/deny ignores them.
 * node:net's BlockList holds the ranges and answers whether an address is in one.
 */
import { BlockList, isIP } from 'node:net';

/** Why the entry is not an address or CIDR range, or undefined. */
export function cidrProblem(entry: string): string | undefined {
  const slash = entry.indexOf('/');
  const ip = slash < 0 ? entry : entry.slice(0, slash);
  const family = isIP(ip);
  if (family === 0) return 'is not an IP address or CIDR range (10.0.0.0/8, 2001:db8::/32)';
  if (slash < 0) return undefined;
  const bits = entry.slice(slash + 1);
  const max = family === 4 ? 32 : 128;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max
    ? undefined
    : `has a prefix length that is not a whole number from 0 to ${max}`;
}

/** The entries (each already checked by cidrProblem) as one list to check addresses against. */
export function cidrList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [ip, bits] = entry.split('/');
    const type = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(ip, type);
    else list.addSubnet(ip, Number(bits), type);
  }
  return list;
}

/** Whether a plain address (client-address.ts: no IPv4-mapped prefix) is in the list; not an address: false. */
export function inCidrList(list: BlockList, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4');
}
