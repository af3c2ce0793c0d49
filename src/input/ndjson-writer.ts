// Writing NDJSON files (the rejects file, --out): one JSON value a line, with backpressure.
import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { UsageError } from '../errors.js';

export interface NdjsonWriter {
  readonly path: string;
  /** Lines written so far. */
  readonly count: number;
  write(value: unknown): Promise<void>;
  /** Writes a line that is already JSON text. */
  writeLine(json: string): Promise<void>;
  /** Finishes the file; with `removeIfEmpty`, a file that got no line is deleted. */
  close(options?: { removeIfEmpty?: boolean }): Promise<void>;
}

/** Creates (or truncates; with `append`, opens for adding) the file now, so a path that cannot be written fails before any work. */
export async function openNdjsonWriter(path: string, what: string, options: { append?: boolean } = {}): Promise<NdjsonWriter> {
  const stream: WriteStream = createWriteStream(path, { flags: options.append === true ? 'a' : 'w' });
  let failure: Error | undefined;
  stream.on('error', (error) => {
    failure = error;
  });
  try {
    await once(stream, 'open');
  } catch (error) {
    throw new UsageError(`cannot write the ${what} file ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  let count = 0;
  const check = (): void => {
    if (failure !== undefined) throw new UsageError(`cannot write the ${what} file ${path} (${failure.message})`);
  };
  const writeLine = async (json: string): Promise<void> => {
    check();
    count += 1;
    if (!stream.write(`${json}\n`)) {
      // once() also settles on 'error', and leaves no listener behind either way
      await once(stream, 'drain').catch(() => undefined);
      check();
    }
  };
  return {
    path,
    get count() {
      return count;
    },
    writeLine,
    write: (value) => writeLine(JSON.stringify(value)),
    async close(options) {
      check();
      await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
      if (options?.removeIfEmpty === true && count === 0) await unlink(path).catch(() => undefined);
    },
  };
}
