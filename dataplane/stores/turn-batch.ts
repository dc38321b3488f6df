/**
 * Calls of one turn of the event loop, sent as one: `add` queues an item and answers with its own
 * result when the batch's `send` answers (the i-th result for the i-th item), or with the batch's
 * error. The batch leaves at setImmediate, once the ready sockets have been read, or as soon as
 * it holds `max` items. Used where one Redis script can do the work of many calls
 * (redis-idempotency-store.ts): a Redis command costs this process ~8 µs of ioredis, promises,
 * deadline timer and socket writes, whatever it carries.
 */
interface Waiting<R> {
  resolve(r: R): void;
  reject(err: unknown): void;
}

export class TurnBatch<I, R> {
  readonly #send: (items: I[]) => Promise<R[]>;
  readonly #max: number;
  #items: I[] = [];
  #waiting: Waiting<R>[] = [];
  #scheduled = false;
  readonly #flush = () => {
    this.#scheduled = false;
    this.#sendNow();
  };

  constructor(send: (items: I[]) => Promise<R[]>, max: number) {
    this.#send = send;
    this.#max = max;
  }

  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#items.push(item);
      this.#waiting.push({ resolve, reject });
      if (this.#items.length >= this.#max) this.#sendNow();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  #sendNow(): void {
    const items = this.#items;
    const waiting = this.#waiting;
    if (items.length === 0) return;
    this.#items = [];
    this.#waiting = [];
    let sent: Promise<R[]>;
    try {
      sent = this.#send(items);
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent.then(
      (results) => {
        if (results.length !== waiting.length) {
          const err = new Error(`a batch of ${waiting.length} got ${results.length} results`);
          for (const w of waiting) w.reject(err);
          return;
        }
        for (let i = 0; i < waiting.length; i++) waiting[i].resolve(results[i]);
      },
      (err: unknown) => {
        for (const w of waiting) w.reject(err);
      },
    );
  }
}
