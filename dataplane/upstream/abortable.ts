/**
 * What an upstream call (and an aggregate, a gRPC call) reads of its caller's signal: whether it
 * aborted, why, and a listener for when it does. An AbortSignal is one; so is a request's
 * ClientSignal (pipeline/client-signal.ts), which costs a fraction of an AbortController.
 */
export interface Abortable {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Each listener runs once, when the signal aborts (the `once` option changes nothing). */
  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

/**
 * A function, or, as the DOM's EventListener may be, an object whose `handleEvent` runs: an
 * upstream try listens as itself (upstream/try.ts says why).
 */
export type AbortListener = (() => void) | { handleEvent(): void };
