/**
 * A Secret volume as the kubelet lays it out and updates it: each key a symlink `<key> ->
 * ..data/<key>`, `..data` a symlink to a timestamped directory holding the files. An update
 * writes a new directory, links `..data_tmp` to it and renames that over `..data` (atomic), then
 * removes the old directory: every key changes at once, the paths keep their names.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class SecretVolume {
  readonly dir = mkdtempSync(join(tmpdir(), 'sluice-secret-'));
  #n = 0;
  #current = '';

  constructor(data: Record<string, string | Buffer>) {
    this.#write(data);
    for (const key of Object.keys(data)) symlinkSync(`..data/${key}`, join(this.dir, key));
  }

  /** The path a container reads the key at. */
  file(key: string): string {
    return join(this.dir, key);
  }

  /** The kubelet's update of the Secret's data (the same keys). */
  update(data: Record<string, string | Buffer>): void {
    const old = this.#current;
    this.#write(data);
    rmSync(join(this.dir, old), { recursive: true });
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  #write(data: Record<string, string | Buffer>) {
    const stamp = `..2026_11_26_15_00_${String(this.#n++).padStart(2, '0')}.${process.pid}`;
    mkdirSync(join(this.dir, stamp));
    for (const [key, value] of Object.entries(data)) writeFileSync(join(this.dir, stamp, key), value);
    symlinkSync(stamp, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    this.#current = stamp;
  }
}
