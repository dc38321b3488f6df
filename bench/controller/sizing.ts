/**
 * The chart's Node flags for a values preset: the same arithmetic as sluice.nodeOptions (the data
 * plane) and sluice.controllerHeap in charts/sluice/templates/_helpers.tpl, and the controller's
 * SLUICE_NODE_FLAG.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT, SLUICE_NODE_FLAGS } from '../lib/machine.ts';

export interface Sizing {
  limitMiB: number;
  heapMiB: number;
  /** SLUICE_NODE_FLAG, which the #! line passes after its own flags (the controller's young generation). */
  nodeFlag: string | null;
}
export function mebibytes(q: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(q);
  if (!m) throw new Error(`memory limit ${q}: only Mi and Gi are read here`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}
export function sizing(preset: string): { controller: Sizing; dataplane: Sizing } {
  const base = parse(readFileSync(join(ROOT, 'charts/sluice/values.yaml'), 'utf8'));
  const over = preset === 'default' ? {} : parse(readFileSync(join(ROOT, `helm/${preset}.yaml`), 'utf8'));
  const of = (role: 'controller' | 'dataplane', workers: number): Sizing => {
    const limit = over[role]?.resources?.limits?.memory ?? base[role].resources.limits.memory;
    const limitMiB = mebibytes(limit);
    if (role === 'controller') {
      // sluice.controllerHeap: what the limit leaves after heapReserveMiB.
      const reserve = over.controller?.heapReserveMiB ?? base.controller.heapReserveMiB;
      const semi = over.controller?.semiSpaceMiB ?? base.controller.semiSpaceMiB;
      return { limitMiB, heapMiB: limitMiB - reserve, nodeFlag: `--max-semi-space-size=${semi}` };
    }
    const percent = over[role]?.heapPercent ?? base[role].heapPercent;
    return { limitMiB, heapMiB: Math.floor((limitMiB * percent) / (100 * workers)), nodeFlag: null };
  };
  return {
    controller: of('controller', 1),
    dataplane: of('dataplane', over.dataplane?.workers ?? base.dataplane.workers),
  };
}

/** A role's Node flags as the chart starts it: the #! line's, SLUICE_NODE_FLAG, the heap. */
export function flagsText(sz: Sizing): string {
  return [
    ...SLUICE_NODE_FLAGS,
    ...(sz.nodeFlag ? [sz.nodeFlag] : []),
    `--max-old-space-size=${sz.heapMiB}`,
  ].join(' ');
}
