/**
 * The Gateway listener ports of a data plane: each port of the running snapshot open on --host
 * (listener-port-server.ts) from the time the snapshot is applied, kept while snapshots keep it
 * (never rebound), and closed gracefully when one drops it. Applying a snapshot never waits for
 * a bind nor fails on one: a port that cannot be bound is logged once, counted
 * (sluice_listener_bind_failures_total, sluice_listener_port_bound 0), retried, and shown in GET
 * /config (describe) until it binds.
 *
 * Each port reads the runtime current at each request (and handshake) through a view of the
 * holder (`source`), as the proxy's own ports read the holder: a new snapshot's routes and
 * certificates for a port are served as soon as it is applied.
 */
import type { Observers } from '../pipeline/finish.ts';
import type { Runtime } from '../runtime/build-runtime.ts';
import type { ListenerPort } from '../runtime/listener-port.ts';
import type { Served, ServedSource } from '../runtime/served.ts';
import { ListenerPortServer, type PortState } from './listener-port-server.ts';
import type { ProxyServerOptions } from './proxy-server.ts';

/** One listener of the running snapshot and its port's state, as GET /config shows it. */
export interface ListenerState extends PortState {
  id: string;
  port: number;
}

export interface ListenerPortsDeps {
  host: string;
  serverOpts: ProxyServerOptions;
  obs: Observers;
  drainTimeoutMs: number;
  /** Called when what describe() returns may have changed (a cluster worker tells its primary). */
  onChange?: (states: ListenerState[]) => void;
}

/** What a request on a port the running snapshot no longer has gets (a kept-alive connection of a closing port): 404. */
const NOTHING: Served = {
  matcher: { match: () => null },
  certificates: { lookup: () => undefined },
  requestsClientCertificate: false,
};

export class ListenerPorts {
  readonly #holder: { readonly current: Runtime | null };
  readonly #deps: ListenerPortsDeps;
  readonly #servers = new Map<number, ListenerPortServer>();
  /** Ports closing after a snapshot dropped them: waited for on shutdown. */
  readonly #closing = new Set<ListenerPortServer>();
  #stopped = false;

  constructor(holder: { readonly current: Runtime | null }, deps: ListenerPortsDeps) {
    this.#holder = holder;
    this.#deps = deps;
  }

  /** Opens the running runtime's ports not open yet and closes (drains) those it no longer has. */
  update(): void {
    if (this.#stopped) return;
    const wanted = this.#holder.current?.listenerPorts ?? new Map<number, ListenerPort>();
    for (const [port, server] of this.#servers) {
      if (wanted.has(port)) continue;
      this.#servers.delete(port);
      this.#deps.obs.metrics.listenerPortClosed(port);
      this.#deps.obs.log.info({ port }, 'listener port closed: no listener of the snapshot uses it');
      this.#closing.add(server);
      void server.close(this.#deps.drainTimeoutMs).then(() => this.#closing.delete(server));
    }
    for (const port of wanted.keys()) if (!this.#servers.has(port)) this.#servers.set(port, this.#open(port));
    this.#changed();
  }

  /** The running snapshot's listeners (by id) and whether their port is bound. */
  describe(): ListenerState[] {
    const out: ListenerState[] = [];
    for (const [port, p] of this.#holder.current?.listenerPorts ?? []) {
      const state = this.#servers.get(port)?.state ?? { bound: false };
      for (const l of p.listeners) out.push({ id: l.id, port, ...state });
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Shutdown: every port stops accepting and drains; resolves when all connections ended (the caller bounds the wait). */
  close(): Promise<void> {
    this.#stopped = true;
    const all = [...this.#servers.values(), ...this.#closing];
    return Promise.all(all.map((s) => s.close(this.#deps.drainTimeoutMs))).then(() => {});
  }

  /** Cuts every connection still open on any port. */
  closeAll(): void {
    for (const s of [...this.#servers.values(), ...this.#closing]) s.closeAll();
  }

  #open(port: number): ListenerPortServer {
    const holder = this.#holder;
    const { obs } = this.#deps;
    const source: ServedSource = {
      get current() {
        const rt = holder.current;
        return rt === null ? null : (rt.listenerPorts.get(port) ?? NOTHING);
      },
    };
    return new ListenerPortServer(port, {
      host: this.#deps.host,
      serverOpts: this.#deps.serverOpts,
      obs,
      source,
      port: () => holder.current?.listenerPorts.get(port) ?? null,
      onState: (state, failures) => {
        obs.metrics.listenerPortBound(port, state.bound);
        if (!state.bound) {
          obs.metrics.listenerBindFailed(port);
          // Once per failing streak: the retries are counted, not logged.
          if (failures === 1)
            obs.log.error(
              { port, host: this.#deps.host, err: state.error },
              'listener port cannot be bound; retrying until it can (GET /config shows it)',
            );
        } else
          obs.log.info(
            { port, host: this.#deps.host, ...(failures > 0 && { failedAttempts: failures }) },
            'listener port open',
          );
        this.#changed();
      },
    });
  }

  #changed(): void {
    this.#deps.onChange?.(this.describe());
  }
}
