// A CSV file's rows -> the planner: the header is read once (after --map) into a CsvHeader, then
// each row's cells are checked for width, mapped through it and taken, or rejected with their row.
import { InputError, UsageError } from '../errors.js';
import { DELIMITERS, readCsv, type CsvOptions, type CsvRecord, type Delimiter } from '../input/csv.js';
import { inputBytes, STDIN } from '../input/source.js';
import { unmatchedColumnProblems } from '../mapping/column-map.js';
import { csvRowObject, CsvRowOrigin, jsonBytesBound, mapCsvRow, widthProblem, type CsvHeader, type CsvHeaderResult } from '../mapping/csv-rows.js';
import { typeNotes } from '../mapping/header-notes.js';
import { readRowsHeader, rowHeaders } from '../mapping/kind-column.js';
import { encodingHint } from './encoding-note.js';
import type { PlanEvent, PlanOptions, RowPlanner } from './plan.js';

/**
 * Why a CSV file's first record cannot be read as text at all, or undefined: a broken record, bytes
 * not valid in the encoding, or UTF-16 without its byte order mark read a byte a character (a NUL
 * beside each letter, which no header name holds). Told before a --map key is matched with it.
 */
export function headerReadProblem(record: CsvRecord, file: string, encoding: PlanOptions['encoding']): InputError | undefined {
  if ('error' in record) return new InputError(`the header cannot be read: ${record.error}`, file, record.line);
  if (record.undecodable !== undefined) {
    const hint = encodingHint(record.undecodable.message, encoding);
    const message = `the header cannot be read: column ${record.undecodable.cell + 1}: ${record.undecodable.message}${hint === undefined ? '' : `\n  ${hint}`}`;
    return new InputError(message, file, record.line);
  }
  if (encoding === 'utf-16le' || !record.cells.some((cell) => cell.includes('\u0000'))) return undefined;
  const wide =
    record.cells[0].charCodeAt(0) === 0
      ? 'its names hold a NUL byte before each letter, as UTF-16BE text does, which no --encoding reads: save the file as UTF-8'
      : 'its names hold a NUL byte after each letter, as UTF-16LE text without its mark does: give --encoding utf-16le';
  return new InputError(`the header cannot be read: ${wide}`, file, record.line);
}

/**
 * Why a CSV file's first record cannot be its header, as the error to stop the run with; undefined
 * when it can. `detected`: the delimiter found in the header line, when none was given. `scope`: what
 * the headers read are kept with (see readHeaderOnce), the options themselves unless given.
 */
export function csvHeaderProblem(
  record: CsvRecord,
  file: string,
  options: Pick<PlanOptions, 'kind' | 'map' | 'reading' | 'encoding'>,
  detected?: Delimiter,
  scope: object = options,
): InputError | undefined {
  const unread = headerReadProblem(record, file, options.encoding);
  if (unread !== undefined || 'error' in record) return unread;
  const result = readHeaderOnce(record.cells, options, scope);
  if (result.ok) return undefined;
  const problems = [...result.problems];
  const used = detected ?? options.reading?.delimiter ?? ',';
  // a file of another delimiter, read with the one given or found: its names hold the others
  const other = DELIMITERS.find((d) => d !== used && record.cells.some((cell) => cell.includes(d)));
  if (record.cells.length === 1 && other !== undefined) {
    problems.push(`the header is one column holding ${JSON.stringify(other)}: is that the delimiter? give --delimiter ${JSON.stringify(other)}`);
  } else if (other !== undefined) {
    problems.push(`the header was read with ${shownDelimiter(used)} between cells and its names hold ${shownDelimiter(other)}: if that is the delimiter, give --delimiter ${JSON.stringify(other)}`);
  } else if (detected !== undefined && detected !== ',') problems.push(delimiterNote(detected));
  return new InputError(`the header cannot be used:\n  ${problems.join('\n  ')}`, file, record.line);
}

/**
 * Headers read already, by the scope they were read in (one check of the headers, one plan: the
 * options are the same throughout it) and by their cells: many files of one header (a folder of
 * exports) read it, and make its row mapper, once; what its files count in it (their columns' types)
 * adds up over them (see filesRead). A plan's scope is its row planner, not its options: each file
 * is planned with a copy of them.
 */
const headersRead = new WeakMap<object, Map<string, CsvHeaderResult>>();

/**
 * The files a plan (its row planner) read through each header, the first named: the types of a
 * header's columns are counted over all of them, and noted once, as the plan ends (csvTypeNotes). A
 * folder of 10,000 exports gets a note a column, not a note a file: 10,000 notes were as many strings
 * held to the end of the run, and the heap grew with the number of files. A column's note names the
 * file its cells were first found of two types in (`mixedIn`): the one to look in.
 */
const filesRead = new WeakMap<object, Map<CsvHeader, HeaderFiles>>();

interface HeaderFiles {
  first: string;
  /** The file being read (or read last) through the header. */
  last: string;
  files: number;
  /** By column: the file its cells were first of two types in, once they were. */
  mixedIn: Array<string | undefined>;
}

/** Counts a file read through `header` in the plan of `scope`. */
function fileRead(scope: object, header: CsvHeader, file: string): void {
  let read = filesRead.get(scope);
  if (read === undefined) filesRead.set(scope, (read = new Map()));
  const files = read.get(header);
  if (files === undefined) read.set(header, { first: file, last: file, files: 1, mixedIn: [] });
  else {
    noteMixed(header, files);
    files.last = file;
    files.files += 1;
  }
}

/** Names the file read last for each column its cells made of two types (numbers, booleans, texts). */
function noteMixed(header: CsvHeader, files: HeaderFiles): void {
  header.typeCounts.forEach(({ counts }, i) => {
    if (files.mixedIn[i] === undefined && (counts[0] > 0 ? 1 : 0) + (counts[1] > 0 ? 1 : 0) + (counts[2] > 0 ? 1 : 0) > 1) files.mixedIn[i] = files.last;
  });
}

/** The notes on the types of the columns a plan read, each over the files of its header. */
export function csvTypeNotes(scope: object): PlanEvent[] {
  const events: PlanEvent[] = [];
  for (const [header, files] of filesRead.get(scope) ?? []) {
    noteMixed(header, files);
    header.typeCounts.forEach((column, i) => {
      for (const note of typeNotes([column], header.kind)) events.push({ type: 'note', file: files.mixedIn[i] ?? files.first, note, ...(files.files > 1 ? { files: files.files } : {}) });
    });
  }
  filesRead.delete(scope);
  return events;
}

function readHeaderOnce(cells: readonly string[], options: Pick<PlanOptions, 'kind' | 'map' | 'reading'>, scope: object): CsvHeaderResult {
  let known = headersRead.get(scope);
  if (known === undefined) headersRead.set(scope, (known = new Map()));
  const key = cells.join('\u0000');
  let result = known.get(key);
  if (result === undefined) known.set(key, (result = readRowsHeader(cells, { kind: options.kind, map: options.map, cells: options.reading })));
  return result;
}

const shownDelimiter = (delimiter: Delimiter): string => (delimiter === '\t' ? 'tab' : `"${delimiter}"`);

/** Says which delimiter a file was read with when it was detected and is not a comma. */
export const delimiterNote = (delimiter: Delimiter): string =>
  `read with ${shownDelimiter(delimiter)} between cells, as its header line uses (give --delimiter to choose)`;

/** How every CSV file's text is read: the delimiter, given or detected (and then noted). */
export function csvOptions(options: Pick<PlanOptions, 'encoding' | 'reading' | 'textRead'>, detected?: (delimiter: Delimiter) => void): CsvOptions {
  return { encoding: options.encoding, delimiter: options.reading?.delimiter, detected, textRead: options.textRead };
}

/** The events of a CSV file, a chunk of rows at a time. */
export async function* csvChunks(file: string, planner: RowPlanner, options: PlanOptions): AsyncGenerator<PlanEvent[]> {
  let header: CsvHeader | undefined;
  /** A CSV rejects file's rows each say their kind (`_kind`); other files' rows are all read through `header`. */
  let byKind: ReturnType<typeof rowHeaders>;
  // each chunk is decoded before the next is read: it is read into the buffer of the last
  const bytes = inputBytes(file, { stdin: options.stdin, onRead: (n) => planner.bytesRead(n), chunkBytes: options.chunkBytes, pieceBytes: options.pieceBytes, remote: options.remote, transient: true });
  let detected: Delimiter | undefined;
  for await (const records of readCsv(bytes, file, csvOptions(options, (d) => (detected = d)))) {
    const before: PlanEvent[] = [];
    for (const record of records) {
      if (header === undefined) {
        // the map's columns no file had are standard input's (checked first, as for files: the header's problems may
        // follow), once its header can be read
        if (file === STDIN && options.mapColumnsOfStdin !== undefined && 'cells' in record && headerReadProblem(record, file, options.encoding) === undefined) {
          const unmatched = unmatchedColumnProblems(options.mapColumnsOfStdin, [{ file: 'standard input', columns: record.cells }]);
          if (unmatched.length > 0) throw new UsageError(`--map:\n  ${unmatched.join('\n  ')}`);
        }
        const problem = csvHeaderProblem(record, file, options, detected, planner);
        if (problem !== undefined) throw problem;
        const cells = (record as { cells: string[] }).cells;
        const headerOptions = { kind: options.kind, map: options.map, cells: options.reading };
        const result = readHeaderOnce(cells, options, planner);
        if (!result.ok) throw new Error('unreachable: the header was checked');
        header = result.header;
        fileRead(planner, header, file);
        byKind = rowHeaders(cells, headerOptions, header);
        const notes = detected !== undefined && detected !== ',' ? [delimiterNote(detected), ...result.notes] : result.notes;
        before.push({ type: 'header', file, kind: header.kind, notes });
        continue;
      }
      const line = record.line;
      if (planner.row(file, line)) continue;
      if ('error' in record) {
        planner.reject(file, line, header.kind, record.text ?? null, [record.error]);
        continue;
      }
      const inDoubt = planner.inDoubt(file, line);
      let rowHeader = header;
      if (byKind !== undefined && inDoubt === undefined) {
        const picked = byKind.pick(record.cells);
        if ('errors' in picked) {
          planner.reject(file, line, picked.kind, csvRowObject(header, record.cells), picked.errors);
          continue;
        }
        rowHeader = picked;
      }
      if (record.undecodable !== undefined && inDoubt === undefined) {
        const { cell, message } = record.undecodable;
        planner.reject(file, line, rowHeader.kind, csvRowObject(rowHeader, record.cells), [`${rowHeader.keys[cell] ?? `column ${cell + 1}`}: ${message}`]);
        continue;
      }
      const wrong = inDoubt ?? widthProblem(rowHeader, record.cells);
      if (wrong !== undefined) {
        planner.reject(file, line, rowHeader.kind, csvRowObject(rowHeader, record.cells), [wrong]);
        continue;
      }
      const mapped = mapCsvRow(rowHeader, record.cells);
      planner.take(rowHeader.kind, mapped.item, new CsvRowOrigin(file, line, rowHeader, record.cells), jsonBytesBound(rowHeader, record.cells), mapped);
    }
    yield [...before, ...planner.chunk(file)];
  }
  if (header === undefined) yield [{ type: 'note', file, note: 'is empty (no header row)' }];
  else {
    // (the header's own are noted as the plan ends; those of its rows of other kinds, a file's own, now)
    const notes = (byKind?.others() ?? []).flatMap((read) => typeNotes(read.typeCounts, read.kind));
    if (notes.length > 0) yield notes.map((note): PlanEvent => ({ type: 'note', file, note }));
  }
}
