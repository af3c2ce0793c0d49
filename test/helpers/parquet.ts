// Parquet files for the tests, written by real writers: hyparquet-writer for typed schemas (nested
// columns, times, decimals, nulls, several row groups), and parquet-wasm's writer (the Rust parquet
// crate's) for each compression codec.
import { writeFileSync } from 'node:fs';
import { tableFromArrays, tableToIPC } from 'apache-arrow';
import { parquetWriteFile } from 'hyparquet-writer';
import { Compression, Table, WriterPropertiesBuilder, writeParquet as writeWithRust } from 'parquet-wasm';

export type SchemaElement = Parameters<typeof parquetWriteFile>[0]['schema'] extends Array<infer E> | undefined ? E : never;

/** Writes columns of values under an explicit schema (its root first), `rowGroupSize` rows a group. */
export function writeParquet(path: string, schema: SchemaElement[], columns: Record<string, unknown[]>, rowGroupSize = 1000): void {
  parquetWriteFile({
    filename: path,
    schema,
    rowGroupSize,
    columnData: Object.entries(columns).map(([name, data]) => ({ name, data: data as never })),
  });
}

export const CODECS = ['SNAPPY', 'GZIP', 'ZSTD', 'BROTLI', 'LZ4', 'LZ4_RAW'] as const;

/** A small table (external_id, visits) compressed with `codec` by the Rust writer (`groupRows` rows a row group, if given). */
export function writeCompressed(path: string, codec: (typeof CODECS)[number], ids: string[], groupRows?: number): void {
  const arrow = tableFromArrays({ external_id: ids, visits: Int32Array.from(ids, (_, i) => i) });
  const builder = new WriterPropertiesBuilder().setCompression(Compression[codec]);
  const properties = (groupRows === undefined ? builder : builder.setMaxRowGroupSize(groupRows)).build();
  writeFileSync(path, writeWithRust(Table.fromIPCStream(tableToIPC(arrow, 'stream')), properties));
}

/** A nullable column of the schema. */
export const optional = (name: string, element: Omit<SchemaElement, 'name' | 'repetition_type'> = {}): SchemaElement =>
  ({ name, repetition_type: 'OPTIONAL', ...element }) as SchemaElement;
