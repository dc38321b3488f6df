/** bench/controller.ts's flags (its --help prints that file's header). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

export const { values: args } = parseArgs({
  options: {
    routes: { type: 'string', default: '5000' },
    edits: { type: 'string', default: '20' },
    'idle-seconds': { type: 'string', default: '30' },
    preset: { type: 'string', default: 'small' },
    kubeconfig: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    source: { type: 'boolean', default: false },
    'timeout-seconds': { type: 'string', default: '600' },
    // Investigation: more Node flags (--trace-gc, --heap-prof, …); heap snapshots of the controller
    // (then the data planes) once everything is Programmed, written into the logs folder.
    'controller-node-flags': { type: 'string', default: '' },
    'dataplane-node-flags': { type: 'string', default: '' },
    'heap-snapshots': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help) {
  console.log(readFileSync(join(import.meta.dirname, '..', 'controller.ts'), 'utf8').split('*/')[0]);
  process.exit(0);
}
export const N = Number(args.routes);
export const EDITS = Number(args.edits);
export const IDLE_S = Number(args['idle-seconds']);
export const CONCURRENCY = Number(args.concurrency);
export const TIMEOUT_MS = Number(args['timeout-seconds']) * 1000;
