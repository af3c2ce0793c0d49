// Writing NDJSON files (the rejects file, --out): one JSON value a line, with backpressure. A write
// that fails (a full disk) is an OutputError naming the file, and every later call fails the same way.
import { once } from 'node:events';
import { createWriteStream, fdatasync, type WriteStream } from 'node:fs';
import { lstat, stat, truncate, unlink } from 'node:fs/promises';
import { OutputError, UsageError } from '../errors.js';
import { givenFileDescriptor, isStream, linkTarget, pipeReader } from '../file-folder.js';

export interface NdjsonWriter {
  readonly path: string;
  /** Lines written so far. */
  readonly count: number;
  write(value: unknown): Promise<void>;
  /** Writes a line that is already JSON text (or its UTF-8 bytes). */
  writeLine(json: string | Uint8Array): Promise<void>;
  /** Resolves once every line written so far is on disk (written and fdatasynced). */
  sync(): Promise<void>;
  /** Finishes the file; with `removeIfEmpty`, a file that got no line is deleted. */
  close(options?: { removeIfEmpty?: boolean }): Promise<void>;
}

const NEWLINE = Buffer.from('\n');
/** Characters of lines gathered before they are written. */
const GATHER_CHARS = 64 * 1024;

/** Creates (or truncates; with `append`, opens for adding) the file now, so a path that cannot be written fails before any work. */
export async function openNdjsonWriter(path: string, what: string, options: { append?: boolean } = {}): Promise<NdjsonWriter> {
  // a descriptor the shell gave on a file (/dev/stdout > log, /dev/fd/3 with 3> file) is written
  // through: opened anew, the file would be emptied, and its lines written over by the run's other lines
  const given = givenFileDescriptor(path);
  const reader = given === undefined ? pipeReader(path) : undefined;
  if (reader?.missing === true) throw new UsageError(`cannot write the ${what} file ${path}: a named pipe no process reads; start its reader first`);
  const stream: WriteStream = given === undefined ? createWriteStream(path, { flags: options.append === true ? 'a' : 'w' }) : createWriteStream('', { fd: given, autoClose: false });
  let failure: Error | undefined;
  const failed = (error: Error): void => {
    failure ??= new OutputError(`cannot write the ${what} file ${path}: ${error.message}`, path);
  };
  stream.on('error', failed);
  try {
    if (given === undefined) await once(stream, 'open');
  } catch (error) {
    throw new UsageError(`cannot write the ${what} file ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  } finally {
    reader?.release();
  }
  /** Resolves once a stream that is being destroyed has closed (and so has reported its error). */
  const settled = async (): Promise<void> => {
    if (!stream.closed) await once(stream, 'close').catch(() => undefined);
  };
  let count = 0;
  /** Lines written since the last sync. */
  let unsynced = false;
  let closed = false;
  const check = (): void => {
    if (failure !== undefined) throw failure;
  };
  // lines of text are gathered and written together: a write of its own per line cost more than
  // making the line (a file of rejected rows took 3.5 times the writes of one of requests)
  let gathered = '';
  let flushing: NodeJS.Immediate | undefined;
  const flush = (): boolean => {
    if (flushing !== undefined) clearImmediate(flushing);
    flushing = undefined;
    if (gathered === '') return true;
    const text = gathered;
    gathered = '';
    return stream.write(text);
  };
  const writeLine = async (json: string | Uint8Array): Promise<void> => {
    check();
    // a write after the end would wait for a 'drain' that never comes
    if (closed) throw new OutputError(`cannot write the ${what} file ${path}: it was closed`, path);
    count += 1;
    unsynced = true;
    let more = true;
    if (typeof json === 'string') {
      gathered += `${json}\n`;
      // written once this turn of the event loop is over, or once there is enough of it
      if (gathered.length >= GATHER_CHARS) more = flush();
      else flushing ??= setImmediate(flush);
    } else {
      flush();
      stream.write(json);
      more = stream.write(NEWLINE);
    }
    if (!more) {
      // once() also settles on 'error', and leaves no listener behind either way
      await once(stream, 'drain').catch(() => undefined);
      if (stream.destroyed) await settled();
      check();
    }
  };
  const sync = async (): Promise<void> => {
    check();
    if (!unsynced) return;
    unsynced = false;
    flush();
    // an empty write's callback runs once everything before it has reached the file
    const late = await new Promise<Error | null | undefined>((resolve) => stream.write('', resolve));
    // a stream that failed earlier says here only that it was destroyed: the cause comes with its 'error', once closed
    if (late) await settled();
    if (late) failed(late);
    check();
    const fd = (stream as unknown as { fd: number | null }).fd;
    if (fd === null) throw new OutputError(`cannot write the ${what} file ${path}: it was closed`, path);
    await new Promise<void>((resolve) =>
      fdatasync(fd, (error) => {
        // EINVAL: a special file (/dev/null, a pipe) that has nothing to sync
        if (error !== null && error.code !== 'EINVAL') failed(error);
        resolve();
      }),
    );
    check();
  };
  return {
    path,
    get count() {
      return count;
    },
    writeLine,
    write: (value) => writeLine(JSON.stringify(value)),
    sync,
    async close(options) {
      closed = true;
      if (failure === undefined) flush();
      if (failure === undefined) {
        // the last lines are written here: a full disk fails them now, and a run that never synced (a dry run) learns it only so
        const late = await new Promise<Error | null | undefined>((resolve) => stream.end(resolve));
        if (late) failed(late);
      } else if (given === undefined) stream.destroy();
      // (a borrowed descriptor is never destroyed: that would close the process's standard output)
      check();
      if (options?.removeIfEmpty === true && count === 0) await removeStaleFile(path);
    },
  };
}

/**
 * Clears an earlier run's output left at `path`, which would mislead: a regular file is deleted, one
 * reached through a link is emptied (the link stays); a device, a pipe or an open file the person
 * named (`--rejects /dev/null`, `/dev/stdout`) is left alone.
 */
export async function removeStaleFile(path: string): Promise<void> {
  // standard output sent to a file is that file: the run's own lines (`--rejects /dev/stdout > log`)
  if (isStream(linkTarget(path))) return;
  const info = await lstat(path).catch(() => undefined);
  if (info?.isFile() === true) await unlink(path).catch(() => undefined);
  else if (info?.isSymbolicLink() === true && (await stat(path).catch(() => undefined))?.isFile() === true) await truncate(path, 0).catch(() => undefined);
}
