// A Parquet file's rows, read a row group at a time (in batches of at most 65,536 rows) by
// parquet-wasm, which decodes every codec a Parquet writer uses by default (snappy, gzip, zstd,
// brotli, LZ4, LZ4_RAW) into Arrow data; parquet-values.ts reads that into plain values. The
// decoding runs in a thread of its own (parquet-decoder.ts), a batch ahead, through ranges of the
// file or the object in storage (a Parquet file is read from its end, where its footer is), so no
// file is ever held whole. Loaded only for Parquet inputs: the decoder is 5 MB of WebAssembly.
import { Worker } from 'node:worker_threads';
import { tableFromIPC } from 'apache-arrow';
import { InputError, SourceError, UsageError, StoppedError, passesThrough } from '../errors.js';
import type { ValueAt } from '../model/typed-values.js';
import type { DecoderData, DecoderMessage } from './parquet-decoder.js';
import { acrossThreads } from './remote.js';
import { valueBytesBound, valuesOf } from './parquet-values.js';
import type { RemoteInputs } from './remote.js';

/** A batch of rows: the first's number in the file (from 1), how many, and each column's values. */
export interface ParquetBatch {
  firstRow: number;
  rows: number;
  /** In the order of `columns` of the file. */
  values: ValueAt[];
  /** At least the bytes of JSON the values of any one row take together (Infinity: measure each row). */
  rowValueBytes: number;
}

export interface ParquetFileRows {
  /** The top-level column names, in the file's order. */
  columns: string[];
  /** Rows in the file, by its footer. */
  rows: number;
  /** The file's size. */
  bytes: number;
  /** The rows, as they are decoded; the decoding thread ends with them (or when the iteration is left). */
  batches(): AsyncGenerator<ParquetBatch>;
  /** Ends the decoding thread when the rows are not read. */
  close(): Promise<void>;
}

/**
 * The decoder's module beside this one. A worker thread runs JavaScript only, so when this module
 * runs from the TypeScript sources (the tests), the built one is loaded (the tests build it first).
 */
const DECODER = import.meta.url.endsWith('.ts') ? new URL('../../dist/input/parquet-decoder.js', import.meta.url) : new URL('./parquet-decoder.js', import.meta.url);

/** An error the decoding thread relayed, as the class a person's exit status depends on. */
function revive(message: Extract<DecoderMessage, { type: 'error' }>, file: string): Error {
  if (message.name === 'InputError') return new InputError(message.message);
  if (message.name === 'UsageError') return new UsageError(message.message);
  if (message.name === 'SourceError') return new SourceError(message.message.replace(`${file}: `, ''), file);
  return Object.assign(new Error(message.message), { name: message.name });
}

/** The decoding thread's messages, one at a time; its error or its unexpected end is thrown. */
function decoderOf(data: DecoderData): { next(): Promise<DecoderMessage>; ask(): void; close(): Promise<void> } {
  // the run's stop does not cross: it ends the thread from here
  const worker = new Worker(DECODER, { workerData: { ...data, remote: acrossThreads(data.remote) } satisfies DecoderData });
  const stop = data.remote?.settings.stop;
  const inbox: DecoderMessage[] = [];
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  worker.on('message', (message: DecoderMessage) => {
    inbox.push(message);
    wake?.();
  });
  // the thread's own error is taken once it has ended: an error it relayed first says more (a read
  // that failed ends it with parquet-wasm's trap)
  let thrown: Error | undefined;
  worker.on('error', (error) => {
    thrown ??= error;
  });
  worker.on('exit', () => {
    failure ??= thrown ?? new Error(`the thread decoding ${data.file} stopped before it was done`);
    wake?.();
  });
  const onStop = (): void => {
    failure ??= new StoppedError(`${data.file}: stopped while reading it`);
    void worker.terminate();
    wake?.();
  };
  if (stop?.aborted === true) onStop();
  else stop?.addEventListener('abort', onStop, { once: true });
  return {
    async next() {
      while (inbox.length === 0) {
        if (failure !== undefined) throw failure;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      // a stop is told before what the thread said as it was ended
      if (failure instanceof StoppedError) throw failure;
      const message = inbox.shift()!;
      if (message.type === 'error') throw revive(message, data.file);
      return message;
    },
    ask: () => worker.postMessage('next'),
    close: async () => {
      stop?.removeEventListener('abort', onStop);
      await worker.terminate();
    },
  };
}

/**
 * The error of a file whose data parquet-wasm could not decode past `read` rows: it says no more than
 * its trap ("unreachable", the thread's end), which named neither the file nor where it stopped.
 */
function damaged(error: unknown, file: string, read: number, rows: number | undefined): unknown {
  if (passesThrough(error) || error instanceof UsageError) return error;
  const of = rows === undefined ? '' : ` of ${rows.toLocaleString('en-US')}`;
  return new InputError(`cannot be read as Parquet past row ${read.toLocaleString('en-US')}${of}: its data is damaged there (${(error as Error).message}); the rows before it were read`, file);
}

/** Opens a Parquet file (a path or a listed object's URL); its rows are decoded as `batches()` is iterated. */
export async function openParquet(file: string, remote?: RemoteInputs): Promise<ParquetFileRows> {
  const decoder = decoderOf({ file, remote });
  let opened: DecoderMessage;
  try {
    opened = await decoder.next();
  } catch (error) {
    await decoder.close();
    throw passesThrough(error) || error instanceof UsageError ? error : new InputError(`cannot be read as Parquet (${(error as Error).message})`, file);
  }
  if (opened.type !== 'opened') throw new Error(`unreachable: the decoder began with ${opened.type}`);
  const columns = tableFromIPC(opened.schema).schema.fields.map((field) => field.name);

  async function* batches(): AsyncGenerator<ParquetBatch> {
    let firstRow = 1;
    try {
      for (;;) {
        decoder.ask();
        const message = await decoder.next().catch((error: unknown) => {
          throw damaged(error, file, firstRow - 1, opened.type === 'opened' ? opened.rows : undefined);
        });
        if (message.type !== 'batch') return;
        for (const part of tableFromIPC(message.ipc).batches) {
          const values = part.data.children.map((column) => valuesOf(column));
          const rowValueBytes = part.data.children.reduce((sum, column) => sum + valueBytesBound(column), 0);
          yield { firstRow, rows: part.numRows, values, rowValueBytes };
          firstRow += part.numRows;
        }
      }
    } finally {
      await decoder.close();
    }
  }
  return { columns, rows: opened.rows, bytes: opened.bytes, batches, close: decoder.close };
}
