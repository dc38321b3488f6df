/**
 * The primary's handle on one worker: its state (starting, then serving a hash), and requests
 * over IPC that its answers settle. A request settles with null when the worker exits or does
 * not answer in time; nothing waits on a dead worker.
 */
import type { Worker } from 'node:cluster';
import type { Snapshot } from '../config/route-table.ts';
import type { ApplyResult } from '../runtime/holder.ts';
import type { ListenerState } from '../server/listener-ports.ts';
import { type FromWorker, isMessage, type ToWorker, type WorkerOptions } from './messages.ts';

type Request = Extract<ToWorker, { id: number }>;

export class Member {
  readonly worker: Worker;
  readonly pid: number;
  readonly bornAt = Date.now();
  serving = false;
  /** The hash of the snapshot it runs ("" when none). */
  hash = '';
  /** Resolves true when the worker asks for its start, false when it exits first. */
  readonly hello: Promise<boolean>;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  #next = 0;
  readonly #pending = new Map<number, (m: FromWorker | null) => void>();
  #onStart: ((failure: string | null) => void) | null = null;
  /** Its Gateway listener ports' state, as it last reported it. */
  listeners: ListenerState[] = [];
  /** The worker asks whether a consumer may keep its analytics label (consumer-names.ts). */
  onConsumer: ((name: string) => void) | null = null;

  constructor(worker: Worker) {
    this.worker = worker;
    this.pid = worker.process.pid ?? 0;
    const hello = Promise.withResolvers<boolean>();
    this.hello = hello.promise;
    this.exited = new Promise((resolve) =>
      worker.once('exit', (code: number | null, signal: string | null) => {
        this.serving = false;
        hello.resolve(false);
        this.#onStart?.(`worker ${this.pid} exited (${signal ?? `code ${code}`}) before it served`);
        for (const settle of this.#pending.values()) settle(null);
        this.#pending.clear();
        resolve({ code, signal });
      }),
    );
    // A send racing the worker's exit fails with EPIPE; the exit handler above settles everything.
    worker.on('error', () => {});
    worker.on('message', (m: unknown) => {
      if (!isMessage<FromWorker>(m)) return;
      if (m.sluice === 'hello') hello.resolve(true);
      else if (m.sluice === 'started') {
        this.hash = m.hash;
        this.serving = true;
        this.#onStart?.(null);
      } else if (m.sluice === 'failed') this.#onStart?.(m.message);
      else if (m.sluice === 'consumer') this.onConsumer?.(m.name);
      else if (m.sluice === 'listeners') this.listeners = m.listeners;
      else this.#pending.get(m.id)?.(m);
    });
  }

  /** Sends its options and the snapshot to serve; resolves null once it serves, else why not. */
  start(options: WorkerOptions, snapshot: Snapshot | null, timeoutMs: number): Promise<string | null> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.kill();
        done(`worker ${this.pid} did not start within ${timeoutMs} ms`);
      }, timeoutMs);
      const done = (failure: string | null) => {
        clearTimeout(timer);
        this.#onStart = null;
        resolve(failure);
      };
      this.#onStart = done;
      this.send({ sluice: 'start', options, snapshot });
    });
  }

  /** Applies a validated snapshot; null when the worker exits or is silent for timeoutMs (then it is killed). */
  async apply(snapshot: Snapshot, timeoutMs: number): Promise<ApplyResult | null> {
    const r = await this.#ask({ sluice: 'apply', id: this.#next++, snapshot }, timeoutMs, () => this.kill());
    if (r?.sluice !== 'applied') return null;
    if (r.outcome.result !== 'rejected') this.hash = snapshot.hash;
    return r.outcome;
  }

  /** Its registry as prom-client JSON; null when it exits or is silent for timeoutMs. */
  async metrics(timeoutMs: number): Promise<object[] | null> {
    const r = await this.#ask({ sluice: 'metrics', id: this.#next++ }, timeoutMs, () => {});
    return r?.sluice === 'metrics' ? r.metrics : null;
  }

  /** Purges its proxy-cache entries under a prefix: how many; throws when it failed, exited or was silent. */
  async purge(prefix: string, timeoutMs: number): Promise<number> {
    const r = await this.#ask({ sluice: 'purge', id: this.#next++, prefix }, timeoutMs, () => {});
    if (r?.sluice !== 'purged') throw new Error(`worker ${this.pid} did not answer the purge`);
    if (r.error !== undefined) throw new Error(r.error);
    return r.count;
  }

  #ask(request: Request, timeoutMs: number, onTimeout: () => void): Promise<FromWorker | null> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(request.id);
        onTimeout();
        resolve(null);
      }, timeoutMs);
      this.#pending.set(request.id, (m) => {
        clearTimeout(timer);
        this.#pending.delete(request.id);
        resolve(m);
      });
      this.send(request);
    });
  }

  send(m: ToWorker): void {
    if (this.worker.isConnected()) this.worker.send(m);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.worker.process.exitCode === null && this.worker.process.signalCode === null)
      this.worker.process.kill(signal);
  }
}
