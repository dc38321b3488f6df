/**
 * A private Kubernetes API server for a bench: ../shared/kapi (see its README) on free ports with
 * its own state folder, stopped and wiped at the end. A bench that measures the controller must
 * not share an API server with tests running next to it: their objects and load would be its.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { portFree } from './http.ts';
import { ROOT } from './machine.ts';

/** Where kapi-up.sh lives: KAPI_DIR, else ../shared/kapi beside the repository. */
export const KAPI_DIR = process.env.KAPI_DIR ?? resolve(ROOT, '..', 'shared', 'kapi');

export interface Kapi {
  kubeconfig: string;
  stop(): void;
}

export const kapiAvailable = () => existsSync(join(KAPI_DIR, 'kapi-up.sh'));

/** A base port p with p, p+10 and p+20 free (etcd's client, peer and metrics ports). */
async function etcdPorts(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = 30_000 + Math.floor(Math.random() * 20_000);
    if ((await portFree(p)) && (await portFree(p + 10)) && (await portFree(p + 20))) return p;
  }
  throw new Error('kapi: no free ports for etcd');
}

async function onePort(not: number[]): Promise<number> {
  for (;;) {
    const p = 30_000 + Math.floor(Math.random() * 20_000);
    if (!not.some((n) => Math.abs(n - p) <= 20) && (await portFree(p))) return p;
  }
}

export async function startKapi(): Promise<Kapi> {
  const run = mkdtempSync(join(tmpdir(), 'sluice-bench-kapi-'));
  const etcd = await etcdPorts();
  const api = await onePort([etcd]);
  const env = {
    ...process.env,
    KAPI_RUN: run,
    API_PORT: String(api),
    ETCD_PORT: String(etcd),
  };
  const up = spawnSync(join(KAPI_DIR, 'kapi-up.sh'), { env, encoding: 'utf8' });
  if (up.status !== 0) throw new Error(`kapi-up.sh failed (${up.status}):\n${up.stdout}${up.stderr}`);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    spawnSync(join(KAPI_DIR, 'kapi-down.sh'), ['--wipe'], { env, stdio: 'ignore' });
    rmSync(run, { recursive: true, force: true });
  };
  process.on('exit', stop);
  return { kubeconfig: join(run, 'kubeconfig'), stop };
}
