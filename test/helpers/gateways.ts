/**
 * Several `sluice run` gateways on one configuration and the same flags (replicas sharing a
 * Redis), each with its own undici Pool, started together and stopped together.
 */
import { Pool } from 'undici';
import { type SluiceProcess, startSluice } from './processes.ts';

export interface Gateways {
  gateways: SluiceProcess[];
  /** pools[i] sends to gateways[i]. */
  pools: Pool[];
  stop(): Promise<void>;
}

export async function startGateways(
  count: number,
  opts: { yaml: string; args: string[]; connections: number; logLevel?: string },
): Promise<Gateways> {
  const gateways = await Promise.all(
    Array.from({ length: count }, () =>
      startSluice({ yaml: opts.yaml, args: opts.args, logLevel: opts.logLevel, readyTimeoutMs: 60_000 }),
    ),
  );
  const pools = gateways.map((g) => new Pool(g.proxyUrl, { connections: opts.connections }));
  return {
    gateways,
    pools,
    async stop() {
      await Promise.allSettled(pools.map((p) => p.destroy()));
      await Promise.allSettled(gateways.map((g) => g.stop()));
    },
  };
}
