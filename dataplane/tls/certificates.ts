/**
 * The certificates of one snapshot, ready for the TLS listener's SNI callback: one
 * SecureContext per certificate, built when the snapshot is applied (never per handshake) and
 * looked up by server name, exact first, then "*.suffix" for the first label. A context whose
 * PEM is unchanged since the previous snapshot is reused, so a snapshot that only changes routes
 * does not parse every key again.
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import type { Certificate } from '../config/route-table.ts';
import { TLS_CONTEXT_OPTIONS } from './settings.ts';

export class Certificates {
  readonly #exact = new Map<string, SecureContext>();
  /** By ".suffix" of a "*.suffix" host. */
  readonly #wildcard = new Map<string, SecureContext>();
  /** By PEM content: what the next snapshot may reuse. */
  readonly #byContent = new Map<string, SecureContext>();

  /** Throws, naming the certificate id, when a PEM does not parse or the key does not fit the certificate. */
  constructor(list: readonly Certificate[], previous: Certificates | null) {
    for (const c of list) {
      const content = `${c.cert}\n${c.key}`;
      let context =
        this.#byContent.get(content) ?? (previous === null ? undefined : previous.#byContent.get(content));
      if (context === undefined) {
        try {
          context = createSecureContext({ ...TLS_CONTEXT_OPTIONS, cert: c.cert, key: c.key });
        } catch (err) {
          throw new Error(`${c.id}: the certificate or key cannot be used (${(err as Error).message})`);
        }
      }
      this.#byContent.set(content, context);
      for (const host of c.hosts) {
        if (host.startsWith('*.')) this.#wildcard.set(host.slice(1), context);
        else this.#exact.set(host, context);
      }
    }
  }

  get size(): number {
    return this.#byContent.size;
  }

  /** The context of the list's first certificate (a Gateway listener presents it when none covers the SNI). */
  get first(): SecureContext | undefined {
    return this.#byContent.values().next().value;
  }

  /** The context for a TLS server name (SNI), or undefined when no certificate names it. */
  lookup(servername: string): SecureContext | undefined {
    const name = servername.toLowerCase();
    const exact = this.#exact.get(name);
    if (exact !== undefined || this.#wildcard.size === 0) return exact;
    const dot = name.indexOf('.');
    return dot > 0 ? this.#wildcard.get(name.slice(dot)) : undefined;
  }
}
