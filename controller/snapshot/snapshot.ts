/**
 * A snapshot is the table plus the sha256 of its canonical JSON: the data plane is pushed a
 * snapshot only when its hash differs, so the same inputs must (and do) give the same hash.
 */
import type { RouteTable, Snapshot } from '../../dataplane/config/route-table.ts';
import { hashedSnapshot } from '../../dataplane/config/wire.ts';

export function snapshotOf(table: RouteTable): Snapshot {
  return hashedSnapshot(table);
}
