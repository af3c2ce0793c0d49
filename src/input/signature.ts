// What a file's first bytes say it is, where its name says otherwise: a spreadsheet saved as a
// workbook is no CSV, and telling its reader to give --format would send them the wrong way.

const ZIP = [0x50, 0x4b, 0x03, 0x04]; // .xlsx, .ods, .numbers: ZIP archives
const OLE2 = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]; // .xls: a compound document

const startsWith = (bytes: Uint8Array, signature: readonly number[]): boolean =>
  bytes.length >= signature.length && signature.every((byte, i) => bytes[i] === byte);

/** The error for bytes that begin as a ZIP archive or an Excel workbook, or undefined. */
export function workbookProblem(head: Uint8Array): string | undefined {
  if (startsWith(head, OLE2)) return 'is an Excel workbook (.xls), not text; save it as CSV (UTF-8) and give that file';
  if (startsWith(head, ZIP)) return 'is a ZIP archive (an Excel .xlsx workbook is one), not text; save it as CSV (UTF-8) and give that file (or unzip it)';
  return undefined;
}
