// The thread that decodes a Parquet file: parquet-wasm reads its row groups (through ranges of the
// local file, or of the object in storage) and hands each batch over as Arrow IPC bytes, one batch
// ahead of the reader, so decoding and planning use a core each. Started by parquet.ts.
import { open, type FileHandle } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { ParquetFile, type RecordBatch } from 'parquet-wasm';
import { InputError, UsageError, passesThrough } from '../errors.js';
import { isRemote } from './location.js';
import { remoteRange, type RemoteInputs } from './remote.js';
import { gzippedParquetProblem } from './signature.js';

/** Rows decoded at a time: a few MB of Arrow data for most tables, however large the row groups. */
const BATCH_ROWS = 65_536;
/** Batches decoded ahead of the reader. */
const AHEAD = 2;

/** What the reading thread says: the file's shape first, then each batch as asked for. */
export type DecoderMessage =
  | { type: 'opened'; rows: number; bytes: number; schema: Uint8Array }
  | { type: 'batch'; ipc: Uint8Array }
  | { type: 'done' }
  | { type: 'error'; name: string; message: string };

export interface DecoderData {
  file: string;
  remote?: RemoteInputs;
}

/**
 * Ranges of a file or an object as parquet-wasm asks a Blob for them (`size`, `slice`,
 * `arrayBuffer`); each is one read (for an object, one ranged GET, tried again as any read is).
 */
class RangeBlob {
  constructor(
    readonly size: number,
    private readonly read: (start: number, end: number) => Promise<Uint8Array>,
    private readonly start = 0,
  ) {}

  slice(start = 0, end = this.size): RangeBlob {
    const from = Math.min(Math.max(start, 0), this.size);
    return new RangeBlob(Math.max(Math.min(end, this.size) - from, 0), this.read, this.start + from);
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.read(this.start, this.start + this.size);
    return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? (bytes.buffer as ArrayBuffer) : (bytes.slice().buffer as ArrayBuffer);
  }
}

/** What a file or an object is read through. */
interface Source {
  blob: RangeBlob;
  close(): Promise<void>;
}

/** Told of the first read that failed, before parquet-wasm hears of it. */
type OnFailure = (error: unknown) => void;

/**
 * Ranges read by `read`, the first error of which goes to `onFailure` as it happens: parquet-wasm
 * turns a failed read into a trap of its own ("unreachable", which ends the thread), saying nothing
 * of the URL or the cause.
 */
function sourceOf(size: number, read: (start: number, end: number) => Promise<Uint8Array>, close: () => Promise<void>, onFailure: OnFailure): Source {
  let failed = false;
  const told = async (start: number, end: number): Promise<Uint8Array> => {
    try {
      return await read(start, end);
    } catch (error) {
      if (!failed) onFailure(error);
      failed = true;
      throw error;
    }
  };
  return { blob: new RangeBlob(size, told), close };
}

/** Ranges of a local file, read where they lie (Node's file Blob read the same ranges 2.5 times slower). */
async function localBlob(file: string, onFailure: OnFailure): Promise<Source> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    throw new InputError(`cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`, file);
  }
  const { size } = await handle.stat();
  const read = async (start: number, end: number): Promise<Uint8Array> => {
    const bytes = new Uint8Array(end - start);
    for (let at = 0; at < bytes.length; ) {
      const { bytesRead } = await handle.read(bytes, at, bytes.length - at, start + at);
      if (bytesRead === 0) throw new InputError(`ended at byte ${start + at} of ${size} (did it change while it was read?)`, file);
      at += bytesRead;
    }
    return bytes;
  };
  return sourceOf(size, read, () => handle.close(), onFailure);
}

async function blobOf({ file, remote }: DecoderData, onFailure: OnFailure): Promise<Source> {
  if (file === '-') throw new UsageError('Parquet cannot be read from standard input (-): it is read from its end; give the file');
  if (!isRemote(file)) return localBlob(file, onFailure);
  const object = remote?.objects[file];
  if (object === undefined) throw new Error(`unreachable: ${file} was not listed before it was read`);
  return sourceOf(object.size, (start, end) => remoteRange(file, remote, start, end), async () => undefined, onFailure);
}

/** What parquet-wasm says of a file it cannot read, for the person reading it. */
function readProblem(error: unknown, file: string): Error {
  if (passesThrough(error) || error instanceof UsageError) return error as Error;
  const message = error instanceof Error ? error.message : String(error);
  return new InputError(`cannot be read as Parquet (${message})`, file);
}

/** The batches of every row group in order, as Arrow IPC bytes. */
async function* decoded(parquet: ParquetFile, groups: number): AsyncGenerator<Uint8Array> {
  for (let g = 0; g < groups; g += 1) {
    const stream = (await parquet.stream({ rowGroups: [g], batchSize: BATCH_ROWS })) as unknown as AsyncIterable<RecordBatch>;
    for await (const batch of stream) yield batch.intoIPCStream();
  }
}

async function serve(port: NonNullable<typeof parentPort>, data: DecoderData): Promise<void> {
  const post = (message: DecoderMessage, transfer: ArrayBuffer[] = []): void => port.postMessage(message, transfer);
  const source = await blobOf(data, (error) => {
    const problem = readProblem(error, data.file);
    post({ type: 'error', name: problem.name, message: problem.message });
  });
  try {
    const parquet = await ParquetFile.fromFile(source.blob as unknown as Blob).catch(async (error: unknown) => {
      // parquet-wasm names a gzipped file's footer as corrupt
      const gzipped = gzippedParquetProblem(await source.blob.slice(0, 2).arrayBuffer().then((bytes) => new Uint8Array(bytes), () => new Uint8Array()));
      throw gzipped === undefined ? error : new InputError(gzipped, data.file);
    });
    const metadata = parquet.metadata();
    const groups = metadata.numRowGroups();
    const rows = metadata.fileMetadata().numRows();
    metadata.free();
    post({ type: 'opened', rows, bytes: source.blob.size, schema: parquet.schema().intoIPCStream() });
    const batches = decoded(parquet, groups);
    // batches decoded ahead of the one asked for, so a pause of this thread seldom holds the reader up
    const ahead = [batches.next()];
    for await (const _ask of asks(port)) {
      const next = await ahead.shift()!;
      if (next.done === true) break;
      // an async generator takes the calls in turn: each decodes the batch after the last
      while (ahead.length < AHEAD) ahead.push(batches.next());
      post({ type: 'batch', ipc: next.value }, [next.value.buffer as ArrayBuffer]);
    }
    post({ type: 'done' });
  } finally {
    await source.close();
    if (data.remote !== undefined) await (await import('./remote.js')).closeRemoteStores();
  }
}

/** Each 'next' the reading thread sends. */
async function* asks(port: NonNullable<typeof parentPort>): AsyncGenerator<void> {
  let waiting = 0;
  let wake: (() => void) | undefined;
  port.on('message', () => {
    waiting += 1;
    wake?.();
  });
  for (;;) {
    while (waiting === 0) await new Promise<void>((resolve) => (wake = resolve));
    waiting -= 1;
    yield;
  }
}

if (parentPort !== null) {
  const port = parentPort;
  const data = workerData as DecoderData;
  serve(port, data).catch((error: unknown) => {
    const problem = readProblem(error, data.file);
    port.postMessage({ type: 'error', name: problem.name, message: problem.message } satisfies DecoderMessage);
  });
}
