// What a file's first bytes say it is, where its name says otherwise: a spreadsheet saved as a
// workbook is no CSV, and telling its reader to give --format would send them the wrong way; a
// Parquet file read as text would be rejected a byte at a time.

const ZIP = [0x50, 0x4b, 0x03, 0x04]; // .xlsx, .ods, .numbers: ZIP archives
const OLE2 = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]; // .xls: a compound document
// Parquet: PAR1, then a page header or the footer, each a Thrift struct whose first field is an i32
// (0x15): never the start of a CSV header named PAR1...
const PAR1 = [0x50, 0x41, 0x52, 0x31, 0x15];
const GZIP = [0x1f, 0x8b];

const startsWith = (bytes: Uint8Array, signature: readonly number[]): boolean =>
  bytes.length >= signature.length && signature.every((byte, i) => bytes[i] === byte);

/** The error for bytes that begin as a ZIP archive or an Excel workbook, or undefined. */
export function workbookProblem(head: Uint8Array): string | undefined {
  if (startsWith(head, OLE2)) return 'is an Excel workbook (.xls), not text; save it as CSV (UTF-8) and give that file';
  if (startsWith(head, ZIP)) return 'is a ZIP archive (an Excel .xlsx workbook is one), not text; save it as CSV (UTF-8) and give that file (or unzip it)';
  return undefined;
}

/** The error for bytes that begin as a workbook or a Parquet file, which no text format reads, or undefined. */
export function notTextProblem(head: Uint8Array): string | undefined {
  if (startsWith(head, PAR1)) return 'is a Parquet file (it starts with PAR1), not text: give --format parquet, or name it .parquet';
  return workbookProblem(head);
}

/** Whether bytes begin as gzip data does. */
export const isGzip = (head: Uint8Array): boolean => startsWith(head, GZIP);

/** The error for a Parquet input whose bytes begin as gzip, or undefined. */
export function gzippedParquetProblem(head: Uint8Array): string | undefined {
  if (!isGzip(head)) return undefined;
  return 'is gzip-compressed, which a Parquet file is not (it compresses its data inside): gunzip it and give that file';
}
