/**
 * docs/ingress.md's table of the ingress-nginx annotations Sluice honours, made from the one table
 * the controller reads them with (controller/ingress/annotations.ts): `make docs` writes it
 * between the two markers, and annotation-table.test.ts fails when the page holds anything
 * else there. Pure.
 */
import { ANNOTATIONS, NGINX_PREFIX } from '../../controller/ingress/annotations.ts';
import { markdownTable } from '../architecture/layer-table.ts';

export const BEGIN =
  '<!-- ingress annotations: made from controller/ingress/annotations.ts by `make docs`; do not edit -->';
export const END = '<!-- end of ingress annotations -->';

type Row = { name: string; effect: string; differs?: string };

export function annotationTable(rows: readonly Row[] = ANNOTATIONS): string {
  const cell = (s: string) => s.replaceAll('|', '\\|');
  return markdownTable(
    [`\`${NGINX_PREFIX}…\``, 'in Sluice', 'unlike ingress-nginx'],
    rows.map((r) => [`\`${r.name}\``, cell(r.effect), cell(r.differs ?? '')]),
  );
}
