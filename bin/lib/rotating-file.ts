/**
 * A file of a mounted Secret that is rotated (--admin-token-file, --admin-ca-file), re-read when
 * it changes: the kubelet updates a Secret volume by swapping its ..data symlink to a new
 * directory, so the path keeps its name and points at a new file. Each use stats the path (a
 * few microseconds: admin requests and pushes are a handful a second) and reads it again when
 * its inode, size or mtime differ. The old value stays valid for a grace period after the new
 * one is seen: the kubelet updates each pod (controller and data planes) at its own moment, up
 * to a minute or two apart, and in between one end holds the new value and the other the old.
 * A token: the data plane accepts both, the controller sends the new one and, refused, the old
 * one, so a rotation drops no push. A CA: the controller trusts both.
 */
import { readFileSync, statSync } from 'node:fs';

/** How long the previous value stays valid once the new one is read (the kubelet's sync period and cache TTL, with room). */
export const ROTATION_GRACE_MS = 5 * 60_000;

export class RotatingFile {
  #current: string;
  #previous: string | null = null;
  #previousUntil = 0;
  #stamp: string;
  readonly file: string;
  readonly #o: { graceMs?: number; now?: () => number };

  /** Reads the file once (throws when it cannot, or it is empty: a start-up error). */
  constructor(file: string, o: { graceMs?: number; now?: () => number } = {}) {
    this.file = file;
    this.#o = o;
    this.#stamp = this.#stat() ?? '';
    this.#current = readFileSync(file, 'utf8').trim();
    if (!this.#current) throw new Error(`${file} is empty`);
  }

  /** The values valid now (trimmed), newest first. */
  readonly values = (): readonly string[] => {
    this.#refresh();
    const now = (this.#o.now ?? Date.now)();
    return this.#previous !== null && now < this.#previousUntil
      ? [this.#current, this.#previous]
      : [this.#current];
  };

  #stat(): string | null {
    try {
      const s = statSync(this.file);
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch {
      return null;
    }
  }

  #refresh(): void {
    const stamp = this.#stat();
    // Missing for an instant (a swap by hand, not the kubelet's) or unchanged: keep what we hold.
    if (stamp === null || stamp === this.#stamp) return;
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8').trim();
    } catch {
      return;
    }
    if (!text) return;
    this.#stamp = stamp;
    if (text === this.#current) return;
    this.#previous = this.#current;
    this.#previousUntil = (this.#o.now ?? Date.now)() + (this.#o.graceMs ?? ROTATION_GRACE_MS);
    this.#current = text;
  }
}
