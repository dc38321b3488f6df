/**
 * Pass 7: the table's certificates, from the routes' resolved spec.tls. One entry per Secret
 * (certificate/<ns>/<secret>), its hosts the union of what the routes naming it list. A host
 * claimed by two different Secrets is served with the older route's one (creation time, then
 * namespace/name, as precedence rules 6–7); the later claim is left out with Accepted=False
 * Conflicted on its field, and the rest of that route stays.
 */
import type { Certificate } from '../../dataplane/config/route-table.ts';
import type { Diagnostic } from '../validate/diagnostic.ts';
import type { ModelRoute } from '../validate/model.ts';
import type { Pass } from './draft.ts';
import { compareCreated, compareText } from './precedence.ts';

export const collectCertificates: Pass = (state) => {
  const routes = [...state.model.routes].sort(
    (a, b) =>
      compareCreated(a.createdMs, b.createdMs) ||
      compareText(a.ref.namespace, b.ref.namespace) ||
      compareText(a.ref.name, b.ref.name),
  );
  const byId = new Map<string, Certificate>();
  const owner = new Map<string, { id: string; route: ModelRoute }>();
  const conflicts: Diagnostic[] = [];
  for (const route of routes) {
    for (const c of route.certificates) {
      const id = `certificate/${route.ref.namespace}/${c.secretName}`;
      c.hosts.forEach((host, j) => {
        const first = owner.get(host);
        if (first !== undefined && first.id !== id) {
          conflicts.push({
            object: route.ref,
            field: `spec.tls[${c.index}].hosts[${j}]`,
            condition: 'Accepted',
            reason: 'Conflicted',
            message:
              `${host} is left out: GatewayRoute ${first.route.ref.namespace}/${first.route.ref.name} serves it ` +
              `with ${first.id} and takes precedence (older, or first by name)`,
          });
          return;
        }
        if (first === undefined) owner.set(host, { id, route });
        const entry = byId.get(id);
        if (entry === undefined) byId.set(id, { id, hosts: [host], cert: c.cert, key: c.key });
        else if (!entry.hosts.includes(host)) entry.hosts.push(host);
      });
    }
  }
  const certificates = [...byId.values()]
    .map((c) => ({ ...c, hosts: c.hosts.sort(compareText) }))
    .sort((a, b) => compareText(a.id, b.id));
  return { ...state, certificates, diagnostics: [...state.diagnostics, ...conflicts] };
};
