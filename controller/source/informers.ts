/**
 * One list+watch per kind, with a local cache. The loop: list (all pages) → watch from the
 * list's resourceVersion, with bookmarks → on a normal end, watch again from the last version
 * seen → on 410 Gone (the version was compacted away), list again: objects that vanished
 * meanwhile are reported deleted, so no change is lost → on any other error (including the
 * 429 an API server sends right after a CRD appears), back off and try again. Delays are
 * injectable, so tests never wait on real backoff.
 */
import { type Kube, KubeError, type WatchEvent } from './kube.ts';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
  };
}

export type ChangeType = 'added' | 'modified' | 'deleted';

export interface InformerOptions {
  /** Waits between retries; tests pass a fast one. */
  delay?: (ms: number) => Promise<void>;
  backoffMs?: { base: number; max: number };
  onError?: (err: unknown, attempt: number) => void;
  /** Called after every (re)list, with its size. */
  onList?: (count: number) => void;
}

const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Every object the cache keeps, made the same whether it came from a list or a watch event:
 * - kind and apiVersion from the list's type when missing. The API server leaves them out of the
 *   items of a list of built-in objects (a SecretList's Secrets), and watch events carry them;
 *   resource-set.ts sorts objects by kind, so an unnamed one was silently dropped.
 * - without managedFields and kubectl's last-applied-configuration annotation (what client-go's
 *   informer transforms drop): nothing reads them, and they more than double what a route or a
 *   Secret costs in memory.
 */
export function admit<T extends KubeObject>(obj: T, type?: { kind?: string; apiVersion?: string }): T {
  if (obj.kind === undefined && type?.kind?.endsWith('List')) obj.kind = type.kind.slice(0, -4);
  if (obj.apiVersion === undefined && type?.apiVersion) obj.apiVersion = type.apiVersion;
  const meta = obj.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
    annotations?: Record<string, string>;
  };
  if (meta.managedFields !== undefined) delete meta.managedFields;
  if (meta.annotations?.[LAST_APPLIED] !== undefined) {
    delete meta.annotations[LAST_APPLIED];
    if (Object.keys(meta.annotations).length === 0) delete meta.annotations;
  }
  return obj;
}

export class Informer<T extends KubeObject> {
  readonly path: string;
  readonly cache = new Map<string, T>();
  readonly #kube: Kube;
  readonly #onChange: (type: ChangeType, obj: T, old?: T) => void;
  readonly #delay: (ms: number) => Promise<void>;
  readonly #backoff: { base: number; max: number };
  readonly #onError: NonNullable<InformerOptions['onError']>;
  readonly #onList: NonNullable<InformerOptions['onList']>;
  #resourceVersion = '';
  #stopped = false;
  #abort: (() => void) | null = null;
  #interrupted = false;
  #synced!: () => void;
  /** Resolves once the first list is in the cache. */
  readonly synced = new Promise<void>((resolve) => {
    this.#synced = resolve;
  });

  constructor(
    kube: Kube,
    path: string,
    onChange: (type: ChangeType, obj: T, old?: T) => void,
    opts: InformerOptions = {},
  ) {
    this.#kube = kube;
    this.path = path;
    this.#onChange = onChange;
    this.#delay = opts.delay ?? ((ms) => new Promise((r) => setTimeout(r, ms).unref()));
    this.#backoff = opts.backoffMs ?? { base: 200, max: 10_000 };
    this.#onError = opts.onError ?? (() => {});
    this.#onList = opts.onList ?? (() => {});
  }

  start(): this {
    void this.#run();
    return this;
  }

  stop(): void {
    this.#stopped = true;
    this.#abort?.();
  }

  /** The version the next watch resumes from ('' = the next round lists). */
  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  /** Drops the current watch as a network failure would; the loop resumes from the last version seen. */
  interrupt(): void {
    this.#interrupted = true;
    this.#abort?.();
  }

  async #run(): Promise<void> {
    let attempt = 0;
    while (!this.#stopped) {
      try {
        if (this.#resourceVersion === '') await this.#relist();
        await this.#watchOnce();
        attempt = 0;
      } catch (err) {
        if (this.#stopped) return;
        if (err instanceof KubeError && err.status === 410) {
          this.#resourceVersion = '';
          continue;
        }
        attempt++;
        this.#onError(err, attempt);
        await this.#delay(Math.min(this.#backoff.base * 2 ** (attempt - 1), this.#backoff.max));
      }
    }
  }

  async #relist(): Promise<void> {
    const list = await this.#kube.list<T>(this.path);
    if (this.#stopped) return;
    const seen = new Set<string>();
    for (const obj of list.items) {
      admit(obj, list);
      const key = keyOf(obj);
      seen.add(key);
      const old = this.cache.get(key);
      this.cache.set(key, obj);
      if (old === undefined) this.#onChange('added', obj);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion)
        this.#onChange('modified', obj, old);
    }
    for (const [key, obj] of this.cache) {
      if (seen.has(key)) continue;
      this.cache.delete(key);
      this.#onChange('deleted', obj);
    }
    this.#resourceVersion = list.metadata.resourceVersion ?? '';
    this.#onList(list.items.length);
    this.#synced();
  }

  /** One watch, until it ends; a 410 (as an event or a status) rejects with KubeError 410. */
  #watchOnce(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let gone = false;
      const onEvent = (e: WatchEvent<T>) => {
        if (e.type === 'ERROR') {
          const status = e.object as unknown as { code?: number; message?: string };
          if (status.code === 410) gone = true;
          return;
        }
        if (e.object?.metadata?.resourceVersion) this.#resourceVersion = e.object.metadata.resourceVersion;
        if (e.type === 'BOOKMARK') return;
        admit(e.object);
        const key = keyOf(e.object);
        if (e.type === 'DELETED') {
          this.cache.delete(key);
          this.#onChange('deleted', e.object);
        } else {
          const old = this.cache.get(key);
          this.cache.set(key, e.object);
          this.#onChange(old === undefined ? 'added' : 'modified', e.object, old);
        }
      };
      const done = (err: unknown) => {
        this.#abort = null;
        if (this.#interrupted) {
          this.#interrupted = false;
          reject(new KubeError(0, `watch ${this.path}: interrupted`));
          return;
        }
        const status = (err as { statusCode?: number } | null)?.statusCode;
        if (gone || status === 410) reject(new KubeError(410, `watch ${this.path}: resourceVersion too old`));
        else if (err && (err as { name?: string }).name !== 'TimeoutError' && !this.#stopped)
          reject(
            err instanceof KubeError
              ? err
              : new KubeError(status ?? 0, String((err as Error).message ?? err)),
          );
        else resolve();
      };
      this.#kube.watch<T>(this.path, this.#resourceVersion, onEvent, done).then((w) => {
        this.#abort = () => w.abort();
        if (this.#stopped || this.#interrupted) w.abort();
      }, reject);
    });
  }
}
