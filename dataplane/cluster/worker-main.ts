/** The file node:cluster runs in each worker (cluster.setupPrimary's exec). */
import { runWorker } from './worker.ts';

runWorker();
