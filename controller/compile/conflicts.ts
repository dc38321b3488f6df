/**
 * Pass 6 (after precedence): two entries with an identical match (path type and value,
 * methods, hosts, headers) cannot both be served. Identical matches tie on precedence rules
 * 1–5, so the one sorted first is the older (rules 6–7) and keeps the match; each later one is
 * left out with Accepted=False Conflicted. Only the conflicting entry is left out, not its
 * whole object: a new object must not be able to take an existing one's other routes down.
 * Routes from HTTPRoutes and GRPCRoutes are kept (see below).
 */
import { canonicalJson } from '../../dataplane/config/canonical-json.ts';
import type { Diagnostic } from '../validate/diagnostic.ts';
import { type Draft, type Pass, pathField } from './draft.ts';

export const dropConflicts: Pass = (state) => {
  // Optimization: identical matches have the same path, so a match's canonical JSON is only
  // written once a second draft has its path (most paths have one): 10,000 routes, ~22 -> ~6 ms.
  const firstByPath = new Map<string, Draft | null>(); // null: that first draft is in winners
  const winners = new Map<string, Draft>();
  const kept: Draft[] = [];
  const conflicts: Diagnostic[] = [];
  for (const d of state.drafts) {
    // Gateway API routes are never left out: the spec resolves identical matches by precedence
    // alone (the older route, then by name), which the table's order already is, on each
    // listener the routes share; and a route on other listeners conflicts with none.
    if (d.route.listeners !== undefined) {
      kept.push(d);
      continue;
    }
    const path = `${d.match.path.type} ${d.match.path.value}`;
    const first = firstByPath.get(path);
    if (first === undefined) {
      firstByPath.set(path, d);
      kept.push(d);
      continue;
    }
    if (first !== null) {
      winners.set(canonicalJson(first.match), first);
      firstByPath.set(path, null);
    }
    const key = canonicalJson(d.match); // lists are already sorted sets (expand-matches.ts)
    const winner = winners.get(key);
    if (winner === undefined) {
      winners.set(key, d);
      kept.push(d);
      continue;
    }
    conflicts.push({
      object: d.route.ref,
      field: pathField(d),
      condition: 'Accepted',
      reason: 'Conflicted',
      message: `${d.id}${d.ownPath ? ` (the route ${d.ownPath.what} asks for)` : ''} is left out: ${winner.id} has the same match and takes precedence (older, or first by name)`,
    });
  }
  return { ...state, drafts: kept, diagnostics: [...state.diagnostics, ...conflicts] };
};
