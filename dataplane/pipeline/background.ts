/** Work that outlives its request (asynchronous idempotent operations), tracked so a shutdown can wait for it. */
export class Background {
  readonly #tasks = new Set<Promise<unknown>>();

  run(task: Promise<unknown>): void {
    this.#tasks.add(task);
    task.then(
      () => this.#tasks.delete(task),
      () => this.#tasks.delete(task),
    );
  }

  get size(): number {
    return this.#tasks.size;
  }

  async drain(): Promise<void> {
    await Promise.allSettled([...this.#tasks]);
  }
}
