/**
 * NetworkPolicy ingress as the API defines it (networking.k8s.io/v1), for rendered manifests:
 * may a pod (its labels, its namespace's labels) open a TCP connection to a container port of
 * a pod the chart runs? A pod no policy selects admits everything; once selected, only what
 * some rule admits: a rule's `from` peers (none: any source) and its `ports` (none: any port;
 * a name matches the container port's name, a number its number, endPort a range). Selectors
 * here are matchLabels only, which is all the chart renders (matchExpressions throw).
 */
import type { Manifest } from './helm.ts';

export interface Source {
  namespace: string;
  namespaceLabels: Record<string, string>;
  podLabels: Record<string, string>;
}
export interface Target {
  namespace: string;
  podLabels: Record<string, string>;
  port: { name?: string; containerPort: number };
}

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: unknown[];
}
interface Peer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: unknown;
}
interface Rule {
  from?: Peer[];
  ports?: { port?: string | number; endPort?: number; protocol?: string }[];
}

function matches(selector: Selector, labels: Record<string, string>): boolean {
  if (selector.matchExpressions?.length) throw new Error('matchExpressions: not evaluated here');
  return Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}

function peerAdmits(peer: Peer, policyNamespace: string, s: Source): boolean {
  if (peer.ipBlock) return false; // pod traffic is not matched by address here
  const ns = peer.namespaceSelector
    ? matches(peer.namespaceSelector, s.namespaceLabels)
    : s.namespace === policyNamespace;
  return ns && (peer.podSelector ? matches(peer.podSelector, s.podLabels) : true);
}

function portAdmits(rule: Rule, t: Target): boolean {
  if (!rule.ports?.length) return true;
  return rule.ports.some((p) => {
    if ((p.protocol ?? 'TCP') !== 'TCP') return false;
    if (p.port === undefined) return true;
    if (typeof p.port === 'string') return p.port === t.port.name;
    return p.endPort === undefined
      ? p.port === t.port.containerPort
      : t.port.containerPort >= p.port && t.port.containerPort <= p.endPort;
  });
}

/** Whether the NetworkPolicies among `manifests` (all in `t.namespace`) let `s` reach `t`. */
export function admits(manifests: Manifest[], s: Source, t: Target): boolean {
  const selecting = manifests.filter(
    (m) =>
      m.kind === 'NetworkPolicy' &&
      (m.spec.policyTypes ?? ['Ingress']).includes('Ingress') &&
      matches(m.spec.podSelector, t.podLabels),
  );
  if (selecting.length === 0) return true;
  return selecting.some((m) =>
    ((m.spec.ingress ?? []) as Rule[]).some(
      (rule) =>
        (!rule.from?.length || rule.from.some((p) => peerAdmits(p, t.namespace, s))) && portAdmits(rule, t),
    ),
  );
}
