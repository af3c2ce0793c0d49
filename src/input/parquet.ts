// A Parquet file's rows, read a row group at a time (in batches of at most BATCH_ROWS rows) by
// parquet-wasm, which decodes every codec a Parquet writer uses by default (snappy, gzip, zstd,
// brotli, LZ4_RAW) into Arrow data; parquet-values.ts reads that into plain values. A local file is
// read through a Blob of it, an object in storage through ranges of it (a Parquet file is read from
// its end, where its footer is), so neither is ever held whole. Loaded only for Parquet inputs: the
// decoder is 5 MB of WebAssembly.
import { openAsBlob } from 'node:fs';
import { tableFromIPC } from 'apache-arrow';
import { ParquetFile, type RecordBatch } from 'parquet-wasm';
import { InputError, SourceError, UsageError } from '../errors.js';
import { isRemote } from './location.js';
import { remoteRange, type RemoteInputs } from './remote.js';
import { valuesOf, type ValueAt } from './parquet-values.js';

/** Rows decoded at a time: a few MB of Arrow data for most tables, however large the row groups. */
const BATCH_ROWS = 65_536;

/** A batch of rows: the first's number in the file (from 1), how many, and each column's values. */
export interface ParquetBatch {
  firstRow: number;
  rows: number;
  /** In the order of `columns` of the file. */
  values: ValueAt[];
}

export interface ParquetFileRows {
  /** The top-level column names, in the file's order. */
  columns: string[];
  /** Rows in the file, by its footer. */
  rows: number;
  /** The file's size. */
  bytes: number;
  batches(): AsyncGenerator<ParquetBatch>;
}

/**
 * Ranges of an object in storage, as parquet-wasm asks a Blob for them (`size`, `slice`,
 * `arrayBuffer`): each is one ranged read, tried again as any read of an object is.
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

async function blobOf(file: string, remote: RemoteInputs | undefined): Promise<Blob> {
  if (file === '-') throw new UsageError('Parquet cannot be read from standard input (-): it is read from its end; give the file');
  if (!isRemote(file)) return openAsBlob(file);
  const object = remote?.objects[file];
  if (object === undefined) throw new Error(`unreachable: ${file} was not listed before it was read`);
  return new RangeBlob(object.size, (start, end) => remoteRange(file, remote, start, end)) as unknown as Blob;
}

/** What parquet-wasm says of a file it cannot read, for the person reading it. */
function readProblem(error: unknown, file: string): Error {
  if (error instanceof InputError || error instanceof SourceError || error instanceof UsageError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new InputError(`cannot be read as Parquet (${message})`, file);
}

/** Opens a Parquet file (a path or a listed object's URL); its rows are read as `batches()` is iterated. */
export async function openParquet(file: string, remote?: RemoteInputs): Promise<ParquetFileRows> {
  let parquet: ParquetFile;
  let bytes: number;
  try {
    const blob = await blobOf(file, remote);
    bytes = blob.size;
    parquet = await ParquetFile.fromFile(blob);
  } catch (error) {
    throw readProblem(error, file);
  }
  const metadata = parquet.metadata();
  const groups = metadata.numRowGroups();
  const rows = metadata.fileMetadata().numRows();
  metadata.free();
  const columns = tableFromIPC(parquet.schema().intoIPCStream()).schema.fields.map((field) => field.name);

  async function* batches(): AsyncGenerator<ParquetBatch> {
    let firstRow = 1;
    try {
      for (let g = 0; g < groups; g += 1) {
        const stream = (await parquet.stream({ rowGroups: [g], batchSize: BATCH_ROWS })) as ReadableStream<RecordBatch>;
        for await (const batch of stream as unknown as AsyncIterable<RecordBatch>) {
          const table = tableFromIPC(batch.intoIPCStream());
          for (const part of table.batches) {
            const values = part.data.children.map((column) => valuesOf(column));
            yield { firstRow, rows: part.numRows, values };
            firstRow += part.numRows;
          }
        }
      }
    } catch (error) {
      throw readProblem(error, file);
    } finally {
      parquet.free();
    }
  }
  return { columns, rows, bytes, batches };
}
