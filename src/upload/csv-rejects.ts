// --rejects-format csv: the rejects file as a spreadsheet opens it, one row a reject under the inputs'
// header (after --map) with `_file`, `_line`, `_kind`, `_column` and `_errors` after it. `track upload`
// reads it back as any CSV file (the `_` columns are no fields), each row as its `_kind` says, so rows
// fixed in a spreadsheet go in as they are, attributes and events alike.
import { readFile, stat } from 'node:fs/promises';
import Papa from 'papaparse';
import { readCsv } from '../input/csv.js';
import type { RemoteInputs } from '../input/remote.js';
import { inputBytes, STDIN, formatOf } from '../input/source.js';
import { EXTRA_CELLS_KEY, MISSING_COLUMNS_KEY, REJECT_COLUMNS } from '../mapping/csv-rows.js';
import { readRowsHeader } from '../mapping/kind-column.js';
import type { RejectRecord } from '../model/request.js';
import type { NdjsonWriter } from '../input/ndjson-writer.js';
import { UsageError } from '../errors.js';
import { csvOptions } from './plan-csv.js';
import type { UploadOptions } from './upload-options.js';

/** A cell as CSV writes it: quoted when it holds a quote, a comma, a line break, or spaces at its ends. */
export function csvCell(text: string): string {
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const cellText = (value: unknown): string =>
  typeof value === 'string' ? value : value === null ? 'null' : value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);

/** The keys of every CSV input's header after --map, in order, each once (standard input's come with its first reject). */
async function inputKeys(options: Pick<UploadOptions, 'inputs' | 'format' | 'encoding' | 'kind' | 'map' | 'reading'> & { remote?: RemoteInputs }): Promise<string[]> {
  const keys: string[] = [];
  for (const file of options.inputs) {
    if (file === STDIN || formatOf(file, options.format) !== 'csv') continue;
    for await (const records of readCsv(inputBytes(file, { remote: options.remote }), file, csvOptions(options))) {
      const first = records[0];
      if (first === undefined) continue;
      if ('cells' in first) {
        const result = readRowsHeader(first.cells, { kind: options.kind, map: options.map, cells: options.reading });
        if (result.ok) for (const key of result.header.keys) if (key !== undefined && !keys.includes(key)) keys.push(key);
      }
      break;
    }
  }
  return keys;
}

/** The header an earlier run wrote to the file, when it is resumed; undefined for a file without a whole first line. */
async function headerOf(path: string): Promise<string[] | undefined> {
  return headerIn(await readFile(path, 'utf8').catch(() => ''));
}

function headerIn(text: string): string[] | undefined {
  // a first line cut short (a kill) is cut off when the file is resumed (rejectsSoFar)
  const end = text.indexOf('\n');
  if (end === -1) return undefined;
  const parsed = Papa.parse<string[]>(text.slice(0, end + 1), { newline: '\n' });
  const header = parsed.data[0];
  return header === undefined ? undefined : header.map((cell) => cell.replace(/\r$/, ''));
}

/**
 * A resumed run adds to its CSV rejects file under the header the file begins with: one without the
 * inputs' columns and the `_` ones (another file, or a damaged one) would take each reject as a row
 * of empty cells. Refused before anything is written or sent.
 */
export async function checkRejectsHeader(path: string, options: Pick<UploadOptions, 'inputs' | 'format' | 'encoding' | 'kind' | 'map' | 'reading'> & { remote?: RemoteInputs }): Promise<void> {
  if ((await stat(path).catch(() => undefined))?.isFile() !== true) return;
  const text = await readFile(path, 'utf8');
  const earlier = headerIn(text);
  const keys = await inputKeys(options);
  const refuse = (what: string): UsageError =>
    new UsageError(
      `the rejects file ${path} does not begin with the header of these inputs (${what}): it is another file, or a damaged one, ` +
        'and a resumed run would write its rejects under the wrong columns. Move it away (or give --rejects another file) and resume again; nothing was sent',
    );
  if (earlier === undefined) {
    // only a header cut short by a kill may be cut off: any other line without its end is someone's text
    const begins = keys.map(csvCell).join(',');
    if (text === '' || begins.startsWith(text) || text.startsWith(begins)) return;
    throw refuse('its one line, without an end, is not the beginning of it');
  }
  const lacks = [...keys, ...REJECT_COLUMNS].filter((key) => !earlier.includes(key));
  if (lacks.length === 0) return;
  const shown = lacks.slice(0, 5).map((key) => JSON.stringify(key)).join(', ') + (lacks.length > 5 ? `, and ${lacks.length - 5} more` : '');
  throw refuse(`it lacks ${shown}`);
}

/** A reject as the cells of a row under `header`: what does not fit a column is told in `_errors`. */
export function rejectCells(record: RejectRecord, header: readonly string[]): string[] {
  const errors = [...record.errors];
  const row = record.row;
  const cells = new Map<string, string>();
  if (typeof row === 'object' && row !== null && !Array.isArray(row)) {
    for (const [key, value] of Object.entries(row)) {
      if (key === EXTRA_CELLS_KEY) errors.push(`the row had cells beyond the header: ${JSON.stringify(value)}`);
      else if (key === MISSING_COLUMNS_KEY) continue;
      else if (header.includes(key)) cells.set(key, cellText(value));
      else errors.push(`${key} (not a column of this file): ${cellText(value)}`);
    }
  } else if (row !== null && row !== undefined) errors.push(`the row as written: ${cellText(row)}`);
  return header.map((key) => {
    if (key === '_file') return record.file;
    if (key === '_line') return String(record.line);
    if (key === '_kind') return record.kind === 'unknown' ? '' : record.kind;
    if (key === '_column') return record.column ?? '';
    if (key === '_errors') return errors.join(' | ');
    return cells.get(key) ?? '';
  });
}

/** Writes rejects as CSV rows to `lines`; the header is made when the first reject comes (or read from an earlier run's file). */
export function csvRejectLines(
  lines: NdjsonWriter,
  append: boolean,
  options: Pick<UploadOptions, 'inputs' | 'format' | 'encoding' | 'kind' | 'map' | 'reading'>,
): (record: RejectRecord) => Promise<void> {
  let header: Promise<string[]> | undefined;
  const makeHeader = async (record: RejectRecord): Promise<string[]> => {
    const earlier = append && (await stat(lines.path).catch(() => undefined))?.isFile() === true ? await headerOf(lines.path) : undefined;
    if (earlier !== undefined) return earlier;
    const keys = await inputKeys(options);
    if (typeof record.row === 'object' && record.row !== null) {
      for (const key of Object.keys(record.row)) if (key !== EXTRA_CELLS_KEY && key !== MISSING_COLUMNS_KEY && !keys.includes(key)) keys.push(key);
    }
    const full = [...keys.filter((key) => !REJECT_COLUMNS.includes(key)), ...REJECT_COLUMNS];
    await lines.writeLine(full.map(csvCell).join(','));
    return full;
  };
  return async (record) => {
    const columns = await (header ??= makeHeader(record));
    await lines.writeLine(rejectCells(record, columns).map(csvCell).join(','));
  };
}

/**
 * The text after a CSV rejects file's header is one whole row of it: a reject saved without its line
 * break, not one torn by a kill or a full disk (a cell left out, a quote left open).
 */
export function isWholeCsvReject(header: string, tail: string): boolean {
  const parsed = parseRejects(`${header}${tail}\n`);
  return parsed.errors.length === 0 && parsed.data.length === 1 && keysOf(parsed.data).length === 1;
}

/** The rejects a CSV rejects file holds already (a resumed run adds to it), by file, line and the column of a dropped field. */
export const csvRejectKeys = (text: string): Array<Pick<RejectRecord, 'file' | 'line' | 'column'>> => keysOf(parseRejects(text).data);

const parseRejects = (text: string) => Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });

/** The rows' file, line and column, of those that name a file and a line. */
function keysOf(rows: ReadonlyArray<Record<string, string>>): Array<Pick<RejectRecord, 'file' | 'line' | 'column'>> {
  const found: Array<Pick<RejectRecord, 'file' | 'line' | 'column'>> = [];
  for (const row of rows) {
    const line = Number(row._line);
    if (typeof row._file !== 'string' || !Number.isInteger(line)) continue;
    found.push(typeof row._column === 'string' && row._column !== '' ? { file: row._file, line, column: row._column } : { file: row._file, line });
  }
  return found;
}
