// The first bytes of a file, read at once: what a file looks like (a SQLite database, rows of text)
// before it is opened for what it is.
import { closeSync, openSync, readSync } from 'node:fs';

/**
 * Up to `bytes` of the file's start (fewer when it is shorter); undefined when it cannot be opened or
 * read. `into`: a buffer to read them into, for a caller that reads many files; what is given is then
 * a view of it, overwritten by the next read into it.
 */
export function fileStart(path: string, bytes: number, into?: Buffer): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buffer = into ?? Buffer.alloc(bytes);
    return buffer.subarray(0, readSync(fd, buffer, 0, Math.min(bytes, buffer.length), 0));
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
