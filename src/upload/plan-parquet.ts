// A Parquet file's rows -> the planner: its columns are read once into a header (as a CSV header
// is, after --map), then each row of each batch is mapped through it and taken, or rejected with
// its row. A row's place is its number in the file, from 1.
import { InputError } from '../errors.js';
import { mapParquetRow, parquetBytesBound, ParquetRowOrigin, parquetRowObject, readParquetHeader, type ParquetHeader } from '../mapping/parquet-rows.js';
import type { PlanEvent, PlanOptions, RowPlanner } from './plan.js';

/** The header of a Parquet file's columns, or the error to stop the run with. */
export function parquetHeader(columns: readonly string[], file: string, options: Pick<PlanOptions, 'kind' | 'map' | 'reading'>): { header: ParquetHeader; notes: string[] } {
  const result = readParquetHeader(columns, { kind: options.kind, map: options.map, cells: options.reading });
  if (!result.ok) throw new InputError(`the columns cannot be used:\n  ${result.problems.join('\n  ')}`, file);
  return result;
}

/**
 * Rows planned between two hands of events: few enough that a row's objects die young, as a chunk of
 * CSV text's do (a whole batch at a time, the collector took more time than the reading).
 */
const CHUNK_ROWS = 1024;

/** The events of a Parquet file, a chunk of rows at a time. */
export async function* parquetChunks(file: string, planner: RowPlanner, options: PlanOptions): AsyncGenerator<PlanEvent[]> {
  // the decoder is loaded for Parquet inputs only
  const parquet = await (await import('../input/parquet.js')).openParquet(file, options.remote);
  let read: ReturnType<typeof parquetHeader>;
  try {
    read = parquetHeader(parquet.columns, file, options);
  } catch (error) {
    await parquet.close();
    throw error;
  }
  const { header, notes } = read;
  const kind = header.csv.kind;
  yield [{ type: 'header', file, kind, notes }];
  if (parquet.rows === 0) planner.bytesRead(parquet.bytes);
  for await (const batch of parquet.batches()) {
    // progress counts the file's bytes as its rows are read, with the batch's first chunk
    planner.bytesRead(Math.round((parquet.bytes * batch.rows) / parquet.rows));
    const { values } = batch;
    // one bound for every row of the batch, when its columns hold no nested values
    const bound = header.csv.fixedBytes + batch.rowValueBytes;
    for (let at = 0; at < batch.rows; at += 1) {
      if (at > 0 && at % CHUNK_ROWS === 0) yield planner.chunk(file);
      const line = batch.firstRow + at;
      if (planner.row(file, line)) continue;
      const inDoubt = planner.inDoubt(file, line);
      if (inDoubt !== undefined) {
        planner.reject(file, line, kind, parquetRowObject(header, values, at), [inDoubt]);
        continue;
      }
      const mapped = mapParquetRow(header, values, at);
      const bytes = bound === Infinity ? parquetBytesBound(header, values, at) : bound;
      planner.take(kind, mapped.item, new ParquetRowOrigin(file, line, header, values, at), bytes, mapped);
    }
    yield planner.chunk(file);
  }
}
