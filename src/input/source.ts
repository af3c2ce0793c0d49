// Opening an input: a file, stdin or an object in storage (remote.ts), its bytes gunzipped when they
// start like gzip, and its format taken from the name unless given.
import { createReadStream, statSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { InputError, SourceError, UsageError, passesThrough } from '../errors.js';
import { fileChunks, transientChunks } from './file-chunks.js';
import { gunzipped } from './gunzip.js';
import { isRemote, nameOf } from './location.js';
import type { RemoteInputs } from './remote.js';
import { isGzip, notTextProblem } from './signature.js';

export type InputFormat = 'csv' | 'ndjson' | 'json' | 'parquet';
export const INPUT_FORMATS: readonly InputFormat[] = ['csv', 'ndjson', 'json', 'parquet'];

/** The name that reads standard input. */
export const STDIN = '-';

const EXTENSIONS: ReadonlyArray<[string, InputFormat]> = [
  ['.csv', 'csv'],
  ['.ndjson', 'ndjson'],
  ['.jsonl', 'ndjson'],
  ['.json', 'json'],
  ['.parquet', 'parquet'],
];

/** Text formats may be gzipped; Parquet compresses inside the file. */
const GZIPPED = /\.(csv|ndjson|jsonl|json)\.gz$/;

/** What the name of an input that is no format says to do. */
const NAMES = '.csv, .ndjson, .jsonl, .json (each optionally .gz) or .parquet';

/** The format an input's name gives, or undefined. */
export function formatByName(file: string): InputFormat | undefined {
  const name = nameOf(file).toLowerCase();
  const plain = GZIPPED.test(name) ? name.slice(0, -3) : name;
  return EXTENSIONS.find(([ext]) => plain.endsWith(ext))?.[1];
}

/** The format of an input: the explicit one, else the one its extension names (`.gz` aside). */
export function formatOf(file: string, explicit?: InputFormat): InputFormat {
  if (explicit !== undefined) return explicit;
  if (file === STDIN) throw new UsageError('reading standard input (-) needs --format csv, ndjson or json');
  const found = formatByName(file);
  if (found === undefined) {
    const workbook = /\.(xlsx|xlsm|xls|ods|numbers)$/i.test(nameOf(file));
    if (workbook) throw new UsageError(`${file}: is a spreadsheet workbook, which track does not read; save it as CSV (UTF-8) and give that file`);
    const glob = isRemote(file) ? ', or leave it out with a glob such as s3://bucket/prefix/*.csv.gz' : '';
    throw new UsageError(`${file}: cannot tell the format from the name (${NAMES}); give --format${glob}`);
  }
  return found;
}

/**
 * formatOf(), and for a local file of no known name whose first bytes are a ZIP archive or an Excel
 * workbook, the advice to save it as CSV instead of the advice to give --format (for a Parquet
 * file's, to give --format parquet).
 */
export async function checkFormat(file: string, explicit?: InputFormat): Promise<InputFormat> {
  try {
    return formatOf(file, explicit);
  } catch (error) {
    if (file === STDIN || isRemote(file)) throw error;
    const head = await firstBytes(file, 8).catch(() => undefined);
    const notText = head === undefined ? undefined : notTextProblem(head);
    if (notText !== undefined) throw new InputError(notText, file);
    throw error;
  }
}

async function firstBytes(file: string, count: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let have = 0;
  for await (const chunk of createReadStream(file, { start: 0, end: count - 1 })) {
    chunks.push(chunk as Buffer);
    have += (chunk as Buffer).length;
  }
  return Buffer.concat(chunks, have);
}

/** Fails early, naming the file, when an input cannot be opened for reading (remote ones are checked as they are listed). */
export async function checkReadable(file: string): Promise<void> {
  if (file === STDIN || isRemote(file)) return;
  let isFile: boolean;
  try {
    isFile = (await stat(file)).isFile();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(code === 'ENOENT' ? 'no such file' : `cannot read it (${code ?? String(error)})`, file);
  }
  if (!isFile) throw new InputError('is not a file', file);
}

function readError(file: string, error: unknown): Error {
  if (passesThrough(error)) return error as Error;
  const e = error as NodeJS.ErrnoException;
  if (typeof e.code === 'string' && e.code.startsWith('Z_')) return new InputError(`is not valid gzip data (${e.message})`, file);
  return new InputError(`cannot read it (${e.code ?? e.message ?? String(error)})`, file);
}

/** Enough of the start to tell gzip, ZIP and Excel's signatures apart. */
const SIGNATURE_BYTES = 8;

/** How much of a file is read at a time, unless told otherwise. */
export const DEFAULT_CHUNK_BYTES = 64 * 1024;

export interface BytesOptions {
  /** Where `-` reads from. */
  stdin?: Readable;
  /** Told the bytes read (before gunzip). */
  onRead?: (bytes: number) => void;
  /** Bytes read from a local file at a time (default 64 KiB). */
  chunkBytes?: number;
  /** Most bytes handed on at a time: a larger read is handed on in pieces of this size (default: as read). */
  pieceBytes?: number;
  /** The objects in storage this run reads, and how (needed for an input that is one). */
  remote?: RemoteInputs;
  /**
   * The reader is done with each chunk before it asks for the next (it decodes it at once): a local
   * file is then read into one buffer again and again, which then serves the next file read so.
   */
  transient?: boolean;
}

/** An input's bytes as they are read, and how to let go of them (close the file, end the read) when done or stopped early. */
interface RawBytes {
  chunks: AsyncIterator<Buffer | string>;
  close(): Promise<void> | void;
}

/** A stream read through its iterator; closing destroys it. */
const streamBytes = (stream: Readable): RawBytes => ({ chunks: stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>, close: () => void stream.destroy() });

/** Chunks read from an iterator of their own; closing ends it (a generator closes its file). */
const iteratorBytes = (chunks: AsyncIterator<Buffer | string>): RawBytes => ({ chunks, close: async () => void (await chunks.return?.()) });

/** The bytes of a file, standard input or an object in storage, as they are read; `stop` ends an object's read. */
async function rawBytes(file: string, options: BytesOptions, stop: () => AbortSignal): Promise<RawBytes> {
  if (file === STDIN) return iteratorBytes(requireStdin(options.stdin)[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>);
  if (isRemote(file)) return streamBytes(Readable.from((await import('./remote.js')).remoteBytes(file, options.remote, stop()), { objectMode: false }));
  const chunk = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  let info: Stats | undefined;
  try {
    info = statSync(file);
  } catch {
    // the read says what is wrong, as it does for any file
  }
  // a pipe, `<(zcat x.gz)`, is read as it comes, without waiting on it here
  if (info?.isFile() !== true) return streamBytes(createReadStream(file, { highWaterMark: chunk }));
  if (options.transient === true) return iteratorBytes(transientChunks(file, chunk, info));
  // a small file is read into a buffer its size, not a chunk's: each buffer read counts against the
  // heap, and thousands of small files read 64 KiB at a time kept the collector busy. A file is read
  // by its generator alone, no stream around it: a stream, its iterator and their listeners for each
  // of thousands of small files outlived collections of the young generation, and the heap grew
  return iteratorBytes(fileChunks(file, Math.max(MIN_CHUNK_BYTES, Math.min(chunk, info.size + 1)), info));
}

/** The least read at a time from a file (one that grows as it is read is read on, this much at a time). */
const MIN_CHUNK_BYTES = 1024;

/**
 * The bytes of an input, decompressed when they begin with the gzip magic number (so `.gz` files
 * and gzipped standard input both work). Read errors become an InputError naming the file (a
 * network failure that outlasts its retries, a SourceError).
 */
export async function* inputBytes(file: string, options: BytesOptions = {}): AsyncGenerator<Buffer> {
  const { onRead } = options;
  // a reader that stops early (a header read, a preview) ends an object's read with it, retries and all
  let stop: AbortController | undefined;
  const source = await rawBytes(file, options, () => (stop ??= new AbortController()).signal);
  /** The next chunk read, counted as read. */
  const next = async (): Promise<Buffer | undefined> => {
    const read = await source.chunks.next();
    if (read.done === true) return undefined;
    const bytes = toBuffer(read.value);
    onRead?.(bytes.length);
    return bytes;
  };
  try {
    // gather the bytes that tell gzip, workbooks and Parquet apart
    let head: Buffer = Buffer.alloc(0);
    let ended = false;
    while (head.length < SIGNATURE_BYTES) {
      const bytes = await next();
      if (bytes === undefined) {
        ended = true;
        break;
      }
      head = head.length === 0 ? bytes : Buffer.concat([head, bytes]);
      // (a chunk read transiently is read over by the next)
      if (head.length < SIGNATURE_BYTES && options.transient === true) head = Buffer.from(head);
    }
    const rest = (): AsyncIterableIterator<Buffer> => restOf(head, ended, next);
    const notText = notTextProblem(head);
    if (notText !== undefined) throw new InputError(notText, file);
    if (isGzip(head)) {
      yield* gunzipped(rest(), file);
    } else if (options.pieceBytes === undefined) {
      yield* rest();
    } else {
      const size = options.pieceBytes;
      for await (const chunk of rest()) for (let at = 0; at < chunk.length; at += size) yield chunk.subarray(at, at + size);
    }
  } catch (error) {
    throw readError(file, error);
  } finally {
    // (only an object's read has a signal: aborting makes an error, with its stack, each time)
    stop?.abort();
    await source.close();
  }
}

/**
 * The bytes after those gathered: `head`, then what `readNext` reads (nothing more when `ended`). An
 * iterator, not an async generator: one left at its first chunk (a header read, of each of thousands
 * of small files) kept its frame past collections of the young generation; a dry run of 10,000 files
 * promoted 64 MB to the old one, where it now promotes 29 (the check of their headers alone: 18 MB,
 * now under 1). Once returned from, or once a read failed, it gives nothing more, as a generator would.
 */
function restOf(head: Buffer, ended: boolean, readNext: () => Promise<Buffer | undefined>): AsyncIterableIterator<Buffer> {
  let first = head.length > 0;
  let done = ended && !first;
  const end = (): IteratorReturnResult<undefined> => {
    first = false;
    done = true;
    return { done: true, value: undefined };
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next(): Promise<IteratorResult<Buffer, undefined>> {
      if (first) {
        first = false;
        done = ended;
        return { done: false, value: head };
      }
      if (done) return end();
      let bytes: Buffer | undefined;
      try {
        bytes = await readNext();
      } catch (error) {
        end();
        throw error;
      }
      return bytes === undefined ? end() : { done: false, value: bytes };
    },
    // (the source is closed by inputBytes, whose reader stopped)
    return: async (): Promise<IteratorReturnResult<undefined>> => end(),
  };
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
  return { ahead: Readable.from(ahead(), { objectMode: false }), again: () => givingUp(again(), stdin) };
}

/**
 * The chunks as a stream whose destroying (a stop) destroys `source` as well: the chunks wait on its
 * next bytes, which may never come, and a stream made by Readable.from() is not destroyed until the
 * chunk it waits for has come.
 */
function givingUp(chunks: AsyncGenerator<Buffer | string>, source: Readable): Readable {
  return new Readable({
    read() {
      chunks.next().then(
        (next) => this.push(next.done === true ? null : next.value),
        (error: Error) => this.destroy(error),
      );
    },
    destroy(error, callback) {
      source.destroy();
      callback(error);
    },
  });
}
