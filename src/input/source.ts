// Opening an input: a file or stdin, its bytes gunzipped when they start like gzip, and its format
// taken from the name unless given.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { InputError, UsageError } from '../errors.js';

export type InputFormat = 'csv' | 'ndjson';
export const INPUT_FORMATS: readonly InputFormat[] = ['csv', 'ndjson'];

/** The name that reads standard input. */
export const STDIN = '-';

const EXTENSIONS: ReadonlyArray<[string, InputFormat]> = [
  ['.csv', 'csv'],
  ['.ndjson', 'ndjson'],
  ['.jsonl', 'ndjson'],
];

/** The format of an input: the explicit one, else the one its extension names (`.gz` aside). */
export function formatOf(file: string, explicit?: InputFormat): InputFormat {
  if (explicit !== undefined) return explicit;
  if (file === STDIN) throw new UsageError('reading standard input (-) needs --format csv or --format ndjson');
  const name = file.toLowerCase().replace(/\.gz$/, '');
  const found = EXTENSIONS.find(([ext]) => name.endsWith(ext));
  if (found === undefined) {
    throw new UsageError(`${file}: cannot tell the format from the name (.csv, .ndjson, .jsonl, each optionally .gz); give --format`);
  }
  return found[1];
}

/** Fails early, naming the file, when an input cannot be opened for reading. */
export async function checkReadable(file: string): Promise<void> {
  if (file === STDIN) return;
  let isFile: boolean;
  try {
    isFile = (await stat(file)).isFile();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(code === 'ENOENT' ? 'no such file' : `cannot read it (${code ?? String(error)})`, file);
  }
  if (!isFile) throw new InputError('is not a file', file);
}

function readError(file: string, error: unknown): InputError {
  if (error instanceof InputError) return error;
  const e = error as NodeJS.ErrnoException;
  if (typeof e.code === 'string' && e.code.startsWith('Z_')) return new InputError(`is not valid gzip data (${e.message})`, file);
  return new InputError(`cannot read it (${e.code ?? e.message ?? String(error)})`, file);
}

const GZIP_MAGIC = [0x1f, 0x8b];

/** How much of a file is read at a time, unless told otherwise. */
export const DEFAULT_CHUNK_BYTES = 64 * 1024;

/**
 * The bytes of an input, decompressed when they begin with the gzip magic number (so `.gz` files
 * and gzipped standard input both work). Read errors become an InputError naming the file.
 */
export async function* inputBytes(
  file: string,
  stdin?: Readable,
  onRead?: (bytes: number) => void,
  chunkBytes = DEFAULT_CHUNK_BYTES,
): AsyncGenerator<Buffer> {
  const source: Readable = file === STDIN ? requireStdin(stdin) : createReadStream(file, { highWaterMark: chunkBytes });
  if (onRead !== undefined) source.on('data', (chunk: Buffer | string) => onRead(chunk.length));
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  try {
    // gather at least two bytes to decide
    let head: Buffer = Buffer.alloc(0);
    let ended = false;
    while (head.length < GZIP_MAGIC.length) {
      const next = await chunks.next();
      if (next.done === true) {
        ended = true;
        break;
      }
      head = head.length === 0 ? toBuffer(next.value) : Buffer.concat([head, toBuffer(next.value)]);
    }
    const rest = async function* (): AsyncGenerator<Buffer> {
      if (head.length > 0) yield head;
      if (ended) return;
      for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield toBuffer(next.value);
    };
    if (head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1]) {
      const gunzip = createGunzip();
      // a failure on either side destroys gunzip with it, which ends the loop below with that error
      pipeline(Readable.from(rest(), { objectMode: false }), gunzip, () => undefined);
      for await (const chunk of gunzip) yield chunk as Buffer;
    } else {
      yield* rest();
    }
  } catch (error) {
    throw readError(file, error);
  } finally {
    if (file !== STDIN) source.destroy();
    else await chunks.return?.();
  }
}

function requireStdin(stdin: Readable | undefined): Readable {
  if (stdin === undefined) throw new UsageError('standard input (-) is not available here');
  return stdin;
}

function toBuffer(chunk: Buffer | string): Buffer {
  return typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
}

/**
 * Standard input read twice: `ahead` gives its first bytes to a reader that stops early (validate
 * --preview), and `again()` then gives every byte from the start, those included, to the run. Both
 * take from one iterator of `stdin`, so a chunk read for `ahead` is never lost; what `ahead` read
 * is kept until `again()` hands it on.
 */
export function readAhead(stdin: Readable): { ahead: Readable; again(): Readable } {
  const chunks = stdin[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>;
  const seen: Array<Buffer | string> = [];
  let pending: Promise<boolean> | undefined;
  /** Reads the next chunk into `seen`; false at the end. */
  const pull = (): Promise<boolean> =>
    (pending ??= chunks.next().then((next) => {
      pending = undefined;
      if (next.done === true) return false;
      seen.push(next.value);
      return true;
    }));
  const ahead = async function* (): AsyncGenerator<Buffer | string> {
    for (let i = 0; ; ) {
      if (i < seen.length) yield seen[i++];
      else if (!(await pull())) return;
    }
  };
  const again = async function* (): AsyncGenerator<Buffer | string> {
    for (;;) {
      if (seen.length > 0) yield seen.shift()!;
      else if (!(await pull())) return;
    }
  };
  return { ahead: Readable.from(ahead(), { objectMode: false }), again: () => Readable.from(again(), { objectMode: false }) };
}
