/**
 * What the schema cannot say about a table's Gateway listeners (route-table.ts `Listener`): ids
 * unique, host names well formed, one protocol per port and one listener per port and hostname
 * (else which one serves a request would be a guess), HTTPS with certificates the table has and
 * HTTP without, and within a listener one certificate per host (SNI picks among them).
 */
import type { TableError } from './config-problem.ts';
import { HOST_NAME_CHARS } from './http-grammar.ts';
import type { RouteTable } from './route-table.ts';
import { usableBundle } from './pem.ts';

// RFC 1123 labels, lower case, optionally behind one leading "*." (Gateway API's Hostname).
const HOSTNAME = new RegExp(`^(\\*\\.)?${HOST_NAME_CHARS}$`);

/** The problems of t.listeners; `ids` receives every listener id (for the routes' references). */
export function listenerProblems(
  t: RouteTable,
  certificateIds: ReadonlySet<string>,
  ids: Set<string>,
): TableError[] {
  const errors: TableError[] = [];
  const hostsOf = new Map(t.certificates?.map((c) => [c.id, c.hosts]));
  const protocolOf = new Map<number, { protocol: string; id: string }>();
  const validationOf = new Map<number, { validation: string; id: string }>();
  const onPort = new Set<string>();
  t.listeners?.forEach((l, i) => {
    const at = (field: string, message: string) => errors.push({ id: l.id, field, message });
    if (ids.has(l.id)) at('id', `duplicate listener id (listeners[${i}])`);
    ids.add(l.id);
    if (l.hostname !== undefined && !HOSTNAME.test(l.hostname))
      at('hostname', `not a lower-case host name or *.suffix: ${l.hostname}`);
    const first = protocolOf.get(l.port);
    if (first === undefined) protocolOf.set(l.port, { protocol: l.protocol, id: l.id });
    else if (first.protocol !== l.protocol)
      at('protocol', `${l.protocol} on port ${l.port}, where ${first.id} is ${first.protocol}`);
    const key = `${l.port} ${l.hostname ?? '*any*'}`;
    if (onPort.has(key))
      at(
        'hostname',
        `another listener on port ${l.port} has ${l.hostname ? `hostname ${l.hostname}` : 'no hostname'}`,
      );
    onPort.add(key);
    if (l.protocol === 'HTTP' && l.certificates !== undefined)
      at('certificates', 'an HTTP listener presents no certificate');
    if (l.protocol === 'HTTPS' && l.certificates === undefined)
      at('certificates', 'an HTTPS listener needs at least one certificate');
    if (l.protocol === 'HTTP' && l.clientValidation !== undefined)
      at('clientValidation', 'an HTTP listener asks for no client certificate');
    if (l.clientValidation !== undefined && !usableBundle(l.clientValidation.caBundle))
      at('clientValidation.caBundle', 'holds no PEM certificate, or one that does not parse');
    const validation = JSON.stringify(l.clientValidation ?? null);
    const firstValidation = validationOf.get(l.port);
    if (firstValidation === undefined) validationOf.set(l.port, { validation, id: l.id });
    else if (firstValidation.validation !== validation)
      at('clientValidation', `differs from that of ${firstValidation.id} on port ${l.port}`);
    const hostOwner = new Map<string, string>();
    l.certificates?.forEach((c, j) => {
      if (!certificateIds.has(c)) {
        at(`certificates[${j}]`, `unknown certificate ${c}`);
        return;
      }
      for (const h of hostsOf.get(c) ?? []) {
        const owner = hostOwner.get(h);
        if (owner !== undefined && owner !== c)
          at(`certificates[${j}]`, `host ${h} is already served on this listener by ${owner}`);
        else hostOwner.set(h, c);
      }
    });
  });
  return errors;
}
