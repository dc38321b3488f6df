/**
 * Which Ingresses are Sluice's. Pure. An Ingress is when:
 *   - its spec.ingressClassName is the installation's class name (--ingress-class, default
 *     "sluice"; matched by name, so it works where no IngressClass object exists or the API is
 *     not served), or the name of an IngressClass whose spec.controller is
 *     sluice.dev/ingress-controller;
 *   - else its legacy kubernetes.io/ingress.class annotation names one of those (the API server
 *     refuses an Ingress with both);
 *   - else, with neither, when an IngressClass of Sluice's carries
 *     ingressclass.kubernetes.io/is-default-class: "true" (the cluster's default class; the
 *     admission plugin fills ingressClassName in for new Ingresses, this serves older ones).
 * Every other Ingress is another controller's and is left alone (no route, status or Event).
 */
import {
  DEFAULT_CLASS_ANNOTATION,
  INGRESS_CONTROLLER,
  type Ingress,
  type IngressClass,
  LEGACY_CLASS_ANNOTATION,
} from '../api/ingress.ts';
import type { ResourceSet } from '../source/resource-set.ts';

export const DEFAULT_INGRESS_CLASS = 'sluice';

/** The Ingresses of Sluice's classes, by "namespace/name" in key order. */
export function ingressesOf(set: ResourceSet, className: string): Map<string, Ingress> {
  const ours = isSluices(set.ingressClasses.values(), className);
  return new Map([...set.ingresses].filter(([, ing]) => ours(ing)));
}

/** Whether an Ingress is of Sluice's classes, given the IngressClasses there are. */
export function isSluices(
  ingressClasses: Iterable<IngressClass>,
  className: string,
): (ing: Ingress) => boolean {
  const classes = new Set([className]);
  let isDefault = false;
  for (const c of ingressClasses) {
    if (c.spec?.controller !== INGRESS_CONTROLLER) continue;
    classes.add(c.metadata.name);
    if (c.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true') isDefault = true;
  }
  return (ing) => {
    const named = ing.spec?.ingressClassName ?? ing.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
    return named === undefined ? isDefault : classes.has(named);
  };
}
