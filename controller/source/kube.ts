/**
 * The controller's Kubernetes API access: a few REST verbs on raw paths, with the kubeconfig's
 * cluster, credentials and TLS (kube-access.ts), and watches read line by line. Raw paths keep custom
 * resources, core objects, EndpointSlices and Leases on one code path. Errors carry the HTTP
 * status, so callers can tell a conflict (409), a missing object (404) or a gone watch (410).
 * Only the calls declared in api-access.ts go out: the chart's RBAC grants exactly those.
 */
import { fetch } from 'undici';
import { assertDeclared } from './api-access.ts';
import { type KubeAccess, loadKubeAccess } from './kube-access.ts';

export class KubeError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface KubeList<T> {
  /** "SecretList": its items carry no kind of their own (only watch events do). */
  kind?: string;
  apiVersion?: string;
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

export type WatchEvent<T> = { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'; object: T };

/** KUBECONFIG (or ~/.kube/config), else the in-cluster service account (kube-access.ts). */
export function loadKubeConfig(): KubeAccess {
  return loadKubeAccess();
}

/** No byte on a watch for this long: the connection is taken as dead (bookmarks keep a live one talking). */
const WATCH_IDLE_MS = 30_000;

export class Kube {
  readonly access: KubeAccess;

  constructor(access: KubeAccess) {
    this.access = access;
  }

  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<T> {
    assertDeclared(method, path);
    const url = this.access.server + path;
    const { headers, dispatcher } = await this.access.prepare(url, method);
    const res = await fetch(url, {
      method,
      headers: {
        ...headers,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': contentType }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (res.status >= 400) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {}
      throw new KubeError(res.status, `${method} ${path}: ${res.status} ${message}`);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request('GET', path);
  }

  /** Every page of a list; the resourceVersion of the first page is where a watch resumes. */
  async list<T>(path: string): Promise<KubeList<T>> {
    const sep = path.includes('?') ? '&' : '?';
    const first = await this.get<KubeList<T>>(`${path}${sep}limit=500`);
    const items = [...first.items];
    for (let cont = first.metadata.continue; cont; ) {
      const page = await this.get<KubeList<T>>(`${path}${sep}limit=500&continue=${encodeURIComponent(cont)}`);
      items.push(...page.items);
      cont = page.metadata.continue;
    }
    return { kind: first.kind, apiVersion: first.apiVersion, metadata: first.metadata, items };
  }

  /**
   * Streams watch events (one JSON object a line) until the server or `abort()` ends the watch;
   * `done` gets the error, if any: a status other than 200 carries `statusCode`, a watch silent
   * for WATCH_IDLE_MS ends with a TimeoutError (the informer then watches again).
   */
  async watch<T>(
    path: string,
    resourceVersion: string,
    onEvent: (e: WatchEvent<T>) => void,
    done: (err: unknown) => void,
  ): Promise<{ abort(): void }> {
    assertDeclared('GET', path, true);
    const url = new URL(this.access.server + path);
    url.searchParams.set('watch', 'true');
    url.searchParams.set('resourceVersion', resourceVersion);
    url.searchParams.set('allowWatchBookmarks', 'true');
    const { headers, dispatcher } = await this.access.prepare(url.href, 'GET');
    const controller = new AbortController();
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (err: unknown) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      controller.abort();
      done(err);
    };
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => finish(new DOMException(`watch ${path}: silent for ${WATCH_IDLE_MS} ms`, 'TimeoutError')),
        WATCH_IDLE_MS,
      );
      timer.unref();
    };
    const stream = async () => {
      idle();
      const res = await fetch(url, {
        headers: { ...headers, accept: 'application/json' },
        dispatcher,
        signal: controller.signal,
      });
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => {});
        throw Object.assign(new Error(`watch ${path}: ${res.status}`), { statusCode: res.status });
      }
      const decoder = new TextDecoder();
      let rest = '';
      for await (const chunk of res.body!) {
        idle();
        const text = rest + decoder.decode(chunk as Uint8Array, { stream: true });
        let start = 0;
        for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
          const line = text.slice(start, nl);
          start = nl + 1;
          if (line.trim() === '') continue;
          let e: WatchEvent<T>;
          try {
            e = JSON.parse(line) as WatchEvent<T>;
          } catch {
            continue; // a line that is not JSON: skipped, as client-go does
          }
          if (finished) return;
          onEvent({ type: e.type, object: e.object });
        }
        rest = text.slice(start);
      }
    };
    stream().then(
      () => finish(null),
      (err) => finish(controller.signal.aborted && finished ? null : err),
    );
    return { abort: () => finish(null) };
  }
}
