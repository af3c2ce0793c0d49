// A file a run writes what it would otherwise hold in memory to (parted-entries.ts, read-index.ts),
// in the state's folder: removed from the folder as soon as it is opened, so the system frees its
// space once it is closed (close()) or the process ends, a kill included.
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class SpillFile {
  readonly #fd: number;

  /** A new file in `folder`, named `.track-<what>-...` for the moment it is there. */
  constructor(folder: string, what: string) {
    const path = join(folder, `.track-${what}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    this.#fd = openSync(path, 'wx+', 0o600);
    try {
      unlinkSync(path);
    } catch (error) {
      closeSync(this.#fd);
      throw error;
    }
  }

  /** Writes the bytes at `position`. */
  write(bytes: Uint8Array, position: number): void {
    let done = 0;
    while (done < bytes.length) done += writeSync(this.#fd, bytes, done, bytes.length - done, position + done);
  }

  /** Fills `bytes` with what the file holds at `position`. */
  read(bytes: Uint8Array, position: number): void {
    let done = 0;
    while (done < bytes.length) {
      const read = readSync(this.#fd, bytes, done, bytes.length - done, position + done);
      if (read === 0) throw new Error(`a file track wrote (${bytes.length} bytes at ${position}) ends before them`);
      done += read;
    }
  }

  close(): void {
    closeSync(this.#fd);
  }
}
