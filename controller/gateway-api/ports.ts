/**
 * Data-plane ports for Gateway listeners. Every Gateway gets an address of its own: a Service
 * (made by the controller) whose ports are the Gateway's listener ports and whose targetPorts
 * are data-plane ports allocated from a range, one per distinct listener port of the Gateway.
 * The Service is where an allocation is kept: a port its Service already maps is kept for the
 * Gateway's life; a new listener port gets the lowest free port of the range. Gateways are
 * taken oldest first (then by namespace/name), so if two Services ever claim one port, the
 * older Gateway keeps it. Pure: the same Gateways and Services give the same allocation.
 */
import type { Service } from '../api/service.ts';

export interface PortRange {
  first: number;
  last: number;
}

export const DEFAULT_PORT_RANGE: PortRange = { first: 20_000, last: 20_999 };

export interface GatewayPorts {
  /** "namespace/name" */
  key: string;
  createdMs: number | undefined;
  /** The Gateway's distinct listener ports (of listeners it can serve). */
  ports: readonly number[];
  /** Its Service, if the controller has made it already. */
  service: Service | undefined;
}

/** By Gateway key: listener port → data-plane port; a port the range cannot hold is absent. */
export function allocatePorts(
  gateways: readonly GatewayPorts[],
  range: PortRange = DEFAULT_PORT_RANGE,
): Map<string, Map<number, number>> {
  const ordered = [...gateways].sort(
    (a, b) =>
      (a.createdMs ?? Number.POSITIVE_INFINITY) - (b.createdMs ?? Number.POSITIVE_INFINITY) ||
      (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
  const taken = new Set<number>();
  const out = new Map<string, Map<number, number>>();
  // First what Services keep, then the new ports: a new Gateway never takes an old one's port.
  for (const g of ordered) {
    const mine = new Map<number, number>();
    out.set(g.key, mine);
    for (const p of g.service?.spec?.ports ?? []) {
      const target = p.targetPort;
      if (!g.ports.includes(p.port) || typeof target !== 'number') continue;
      if (target < range.first || target > range.last || taken.has(target)) continue;
      taken.add(target);
      mine.set(p.port, target);
    }
  }
  let next = range.first;
  for (const g of ordered) {
    const mine = out.get(g.key)!;
    for (const port of [...g.ports].sort((a, b) => a - b)) {
      if (mine.has(port)) continue;
      while (next <= range.last && taken.has(next)) next++;
      if (next > range.last) break;
      taken.add(next);
      mine.set(port, next);
    }
  }
  return out;
}
