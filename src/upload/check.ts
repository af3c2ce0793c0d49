// What is checked before any file is written or anything sent: the inputs can be read, the --map
// file and every CSV header and Parquet file's columns can be used, and each output is writable and
// not an input.
import { statSync } from 'node:fs';
import { access, constants, open, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { folderProblem, ownDescriptorProblem } from '../file-folder.js';
import { fileStart } from '../file-start.js';
import { canonicalPath } from '../lock-file.js';
import { JOURNAL_HEADER } from '../records/journal-format.js';
import { createDecoding, undecodableIn, type InputEncoding } from '../input/decode.js';
import type { Delimiter } from '../input/delimiters.js';
import { isRemote, localName } from '../input/location.js';
import { isGzip } from '../input/signature.js';
import type { RemoteInputs } from '../input/remote.js';
import { formatOf, inputBytes, STDIN, type InputFormat } from '../input/source.js';
import { unmatchedColumnProblems, validateColumnMap, type ColumnMap } from '../mapping/column-map.js';
import type { CsvRecord } from '../input/csv.js';
import type { ArrayName } from '../model/types.js';
import type { ReadingOptions } from './plan.js';

/**
 * `users.csv.gz` -> `users.rejects.ndjson` (or `.rejects.csv`) beside it; standard input ->
 * `stdin.rejects.ndjson` here; `s3://bucket/exports/users/` -> `users.rejects.ndjson` here.
 */
export function defaultRejectsPath(firstInput: string, format: 'ndjson' | 'csv' = 'ndjson'): string {
  if (firstInput === STDIN) return `stdin.rejects.${format}`;
  if (isRemote(firstInput)) return `${localName(firstInput).replace(/\.gz$/i, '').replace(/\.[^.]+$/, '')}.rejects.${format}`;
  const name = basename(firstInput).replace(/\.gz$/i, '').replace(/\.[^.]+$/, '');
  return join(dirname(firstInput), `${name}.rejects.${format}`);
}

/**
 * The text of a --map file as Windows editors save it too: UTF-8 with or without its mark (Notepad),
 * or UTF-16 after its mark (PowerShell's `>`). Other bytes that are not UTF-8 are told, not matched as
 * U+FFFD.
 */
function mapText(path: string, bytes: Buffer): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  const utf16 = (bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff);
  // UTF-16BE is UTF-16LE with each unit's bytes swapped
  if (utf16 && bytes[0] === 0xfe) bytes = Buffer.from(bytes.subarray(0, bytes.length & ~1)).swap16();
  const decoding = createDecoding(utf16 ? 'utf-16le' : 'utf-8');
  const text = decoding.write(utf16 ? bytes.subarray(2) : bytes) + decoding.end();
  const found = undecodableIn(text);
  if (found !== undefined) {
    const what = `${utf16 ? 'unit' : 'byte'} 0x${found.value.toString(16).toUpperCase().padStart(2, '0')} at byte offset ${found.offset}`;
    throw new UsageError(`--map ${path}: is not ${utf16 ? 'UTF-16' : 'UTF-8'} (${what}); save it as UTF-8`);
  }
  return text;
}

/** Reads and checks a --map file. */
export async function readColumnMap(path: string): Promise<ColumnMap> {
  let json: unknown;
  try {
    json = JSON.parse(mapText(path, await readFile(path)));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const e = error as NodeJS.ErrnoException;
    throw new UsageError(`--map ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.code ?? `is not valid JSON (${e.message})`}`);
  }
  const result = validateColumnMap(json);
  if (!result.ok) throw new UsageError(`--map ${path}:\n  ${result.problems.join('\n  ')}`);
  return result.map;
}

/** True when `path` names one of `files`: the same path, or the same file through a link. */
export async function isOneOf(path: string, files: readonly string[]): Promise<boolean> {
  const others = files.filter((file) => file !== STDIN);
  if (others.some((file) => resolve(file) === resolve(path))) return true;
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) return false;
  for (const file of others) {
    const other = await stat(file).catch(() => undefined);
    if (other !== undefined && other.dev === info.dev && other.ino === info.ino) return true;
  }
  return false;
}

/** A run's file, as the flag that names it and its path (undefined: not given). */
export type RunFile = readonly [flag: string, path: string | undefined];

/**
 * Two of the run's files name one file, or an output names a record (a state file, a journal) of
 * another run: refused before either is written, and neither is written then (not even the failure's
 * summary or events).
 */
export class FilesClashError extends UsageError {
  constructor(
    message: string,
    /** The flags of the files (one, for a record of another run). */
    readonly flags: readonly string[],
  ) {
    super(message);
  }
}

/** Whether the error says the file of the output `flag` (`--summary-file`, `--events`, `--report`) is one the run must not write. */
export const clashesWith = (error: unknown, flag: string): boolean => error instanceof FilesClashError && error.flags.includes(flag);

/** What recordIn() calls a resume journal. */
const A_JOURNAL = 'a resume journal';

/** What a file of the run's records holds, which another output written over it would destroy. */
const RECORD_OF: Record<string, string> = { '--state': 'what the state holds', '--journal': 'the journal of the run', '--map': 'the column map the run reads' };

/**
 * No two of the files a run writes (or reads: --map) name one file, under any name: written over the
 * --state file, the journal or the --map file, another output destroys it (give those first); two
 * outputs in one file mix their lines. Nor is an output (or --summary-file, removed as the run
 * starts) a state file or a journal the run does not use: an upload without --delta beside its
 * state, another target's journal; nor the journal a state file (the advice for a journal that
 * cannot be read is --restart).
 */
export async function checkFilesApart(files: readonly RunFile[]): Promise<void> {
  const given = files.filter((file): file is readonly [string, string] => file[1] !== undefined && file[1] !== STDIN);
  for (let later = 1; later < given.length; later += 1) {
    const [flag, path] = given[later];
    for (const [earlierFlag, earlierPath] of given.slice(0, later)) {
      if (!(await isOneOf(path, [earlierPath])) && canonicalPath(path) !== canonicalPath(earlierPath)) continue;
      const record = RECORD_OF[earlierFlag];
      if (record === undefined) throw new FilesClashError(`${earlierFlag} and ${flag} name the same file ${path}: give each its own`, [earlierFlag, flag]);
      throw new FilesClashError(`${flag} ${path} is the ${earlierFlag} file ${earlierPath}: writing it would destroy ${record}; give ${flag} another file`, [earlierFlag, flag]);
    }
  }
  for (const [flag, path] of given) {
    // (the state and the map are read as what they are; a journal may be given one to go on with)
    if (flag === '--state' || flag === '--map') continue;
    const record = await recordIn(path);
    if (record === undefined || (flag === '--journal' && record === A_JOURNAL)) continue;
    throw new FilesClashError(`${flag} ${path} is ${record}: writing it would destroy it; give ${flag} another file`, [flag]);
  }
}

/**
 * What a file holds when it is a record no output may be written over: a SQLite database (a --state
 * file, an emulator's) or a resume journal. Undefined for anything else, or no file.
 */
export async function recordIn(path: string): Promise<string | undefined> {
  // only a regular file is opened: a named pipe would wait for a writer, a terminal for a line
  if ((await stat(path).catch(() => undefined))?.isFile() !== true) return undefined;
  const file = await open(path, 'r').catch(() => undefined);
  if (file === undefined) return undefined;
  const head = Buffer.alloc(64);
  try {
    await file.read(head, 0, head.length, 0);
  } finally {
    await file.close();
  }
  if (head.subarray(0, 16).equals(Buffer.from('SQLite format 3\0', 'latin1'))) return 'a SQLite database (a --state file, an emulator database)';
  if (head.toString('utf8').startsWith(`{"journal":${JSON.stringify(JOURNAL_HEADER.journal)}`)) return A_JOURNAL;
  return undefined;
}

/** Refuses an output path that names standard input or one of the program's own descriptors (ownDescriptorProblem). */
export function checkNotOwnDescriptor(flag: string, path: string): void {
  const own = ownDescriptorProblem(path);
  if (own !== undefined) throw new UsageError(`cannot write ${flag} ${path}: it names ${own}; give a file, /dev/stdout or /dev/stderr`);
}

/** A file the run will write: it must be writable now, though it is created only when written to. */
export async function checkWritable(flag: string, path: string): Promise<void> {
  checkNotOwnDescriptor(flag, path);
  const info = await stat(path).catch(() => undefined);
  if (info?.isDirectory() === true) throw new UsageError(`${flag} ${path} is a directory`);
  if (info === undefined) {
    // a file to be made: the folder it goes in, as the path names it
    const problem = path.endsWith('/') ? 'names a folder; give the path of a file' : folderProblem(path);
    if (problem !== undefined) throw new UsageError(`cannot write ${flag} ${path}: ${problem}`);
    return;
  }
  try {
    await access(path, constants.W_OK);
  } catch (error) {
    throw new UsageError(`cannot write ${flag} ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/** What the checks of the inputs read them with. */
type InputReading = {
  inputs: readonly string[];
  format?: InputFormat;
  encoding?: InputEncoding;
  kind?: ArrayName;
  reading?: ReadingOptions;
  remote?: RemoteInputs;
  mapFile?: string;
};

/**
 * Reads the header of every CSV input and the columns of every Parquet input that is a file or an
 * object (but those in `settled`, which a resumed run does not read), so a bad one, or a --map naming
 * a column that no input has, stops the run before anything is written or sent. Returns the columns
 * the map names that no input has, when standard input is read as CSV: its header, read by the plan,
 * must have them.
 */
export async function checkHeaders(options: InputReading, map: ColumnMap | undefined, settled?: ReadonlySet<string>): Promise<string[]> {
  const formats = options.inputs.map((file) => formatOf(file, options.format));
  const read = (format: InputFormat) => options.inputs.filter((file, i) => file !== STDIN && settled?.has(file) !== true && formats[i] === format);
  const [csvFiles, parquetFiles] = [read('csv'), read('parquet')];
  const named = options.mapFile === undefined ? '--map' : `--map ${options.mapFile}`;
  const stdinCsv = options.inputs.some((file, i) => file === STDIN && formats[i] === 'csv');
  const mapped = options.inputs.some((file, i) => formats[i] === 'csv' || formats[i] === 'parquet');
  if (map !== undefined && !mapped) throw new UsageError(`${named} renames CSV and Parquet columns, and no input is read as either`);
  try {
    const headers = csvFiles.length === 0 ? [] : await readCsvHeaders(csvFiles, options);
    const parquets = parquetFiles.length === 0 ? [] : await readParquetColumns(parquetFiles, options);
    const { csvHeaderProblem, headerReadProblem } = await import('./plan-csv.js');
    // one reading for every header: a header many files share is read once
    const reading = { kind: options.kind, map, reading: options.reading, encoding: options.encoding };
    // a header record files share (their first lines the same bytes: readCsvHeaders) is checked once,
    // as its first file's: the first file whose header cannot be used is still the one named
    const records = new Set<CsvRecord>();
    const distinct = headers.filter(({ record }) => {
      if (records.has(record)) return false;
      records.add(record);
      return true;
    });
    // a header that cannot be read (its bytes are not in the encoding, a UTF-16 file) is told first:
    // the map's keys cannot be matched with columns no one knows
    for (const { file, record } of distinct) {
      const unread = headerReadProblem(record, file, options.encoding);
      if (unread !== undefined) throw unread;
    }
    // a map key that names no column is told next: the header's own problems may follow from it
    const columns: Array<{ file: string; columns: readonly string[] }> = [];
    for (const { file, record } of headers) if ('cells' in record) columns.push({ file, columns: record.cells });
    columns.push(...parquets);
    // a resumed run leaves settled files unread: a column only they have is not missing
    const unmatched = map === undefined || settled?.size ? [] : unmatchedColumnProblems(map.keys(), columns);
    if (unmatched.length > 0 && !stdinCsv) throw new UsageError(`${named}:\n  ${unmatched.join('\n  ')}`);
    for (const { file, record, detected } of distinct) {
      const problem = csvHeaderProblem(record, file, reading, detected);
      if (problem !== undefined) throw problem;
    }
    if (parquets.length > 0) {
      const { parquetHeader } = await import('./plan-parquet.js');
      for (const { file, columns: names } of parquets) parquetHeader(names, file, { kind: options.kind, map, reading: options.reading });
    }
    if (map === undefined) return [];
    const known = new Set<string>();
    for (const { columns: names } of columns) for (const name of names) known.add(name).add(name.trim());
    return [...map.keys()].filter((column) => !known.has(column));
  } finally {
    if (options.remote !== undefined && [...csvFiles, ...parquetFiles].some(isRemote)) await (await import('../input/remote.js')).closeRemoteStores();
  }
}

/** Bytes read at a time for a CSV file's header (more are read while its header line is not whole). */
const HEADER_CHUNK_BYTES = 2048;

/** The first record of each CSV file, with the delimiter found when none was given. */
async function readCsvHeaders(files: readonly string[], options: InputReading): Promise<Array<{ file: string; record: CsvRecord; detected?: Delimiter }>> {
  // loaded only for CSV files: the mapping modules are otherwise needed in the planning thread alone
  const { readCsv } = await import('../input/csv.js');
  const { csvOptions } = await import('./plan-csv.js');
  const headers: Array<{ file: string; record: CsvRecord; detected?: Delimiter }> = [];
  /** Header lines read, by their bytes: the files of one export share theirs, read once. */
  const read = new Map<string, { record: CsvRecord; detected?: Delimiter }>();
  for (const file of files) {
    const line = headerLineOf(file, options.encoding);
    const known = line === undefined ? undefined : read.get(line);
    if (known !== undefined) {
      headers.push({ file, ...known });
      continue;
    }
    let detected: Delimiter | undefined;
    // a little at a time: of a small file (one of thousands), only its first rows are parsed here
    for await (const records of readCsv(inputBytes(file, { remote: options.remote, chunkBytes: HEADER_CHUNK_BYTES, transient: true }), file, csvOptions(options, (d) => (detected = d)))) {
      if (records.length === 0) continue;
      headers.push({ file, record: records[0], detected });
      // kept for the files of the same first line only when it is the header (a blank line before
      // the header is passed over, and so are the bytes it was told by)
      if (line !== undefined && records[0].line === 1) read.set(line, { record: records[0], detected });
      break;
    }
  }
  return headers;
}

/** Bytes of a file's start its header line is looked for in (a longer one is read as any header is). */
const HEADER_LINE_BYTES = 16 * 1024;
/** What headerLineOf() reads into, made when first needed. */
let headerLineBytes: Buffer | undefined;

/**
 * A local file's first line, as its bytes to its line feed: where another file's header was read
 * from a first line of the same bytes, it is this file's header too (the delimiter is found from
 * that line, and the run reads every file in one encoding). Undefined when the bytes cannot tell:
 * an object in storage, a file that is not a regular file (a pipe is not opened here), gzip bytes,
 * a quote in the line (a quoted name may hold a line feed), UTF-16 text (its line feed's second
 * byte follows), or no line feed in the bytes read. (Whether the line is the header, not a blank
 * line before it, the reading of the first file tells: readCsvHeaders.)
 */
function headerLineOf(file: string, encoding: InputEncoding | undefined): string | undefined {
  if (isRemote(file) || encoding === 'utf-16le') return undefined;
  try {
    if (!statSync(file).isFile()) return undefined;
  } catch {
    return undefined;
  }
  headerLineBytes ??= Buffer.allocUnsafeSlow(HEADER_LINE_BYTES);
  const start = fileStart(file, HEADER_LINE_BYTES, headerLineBytes);
  const end = start?.indexOf(0x0a) ?? -1;
  if (start === undefined || end === -1 || isGzip(start) || start.subarray(0, end).includes(0x22)) return undefined;
  return start.toString('latin1', 0, end + 1);
}

/** The column names of each Parquet file (from its footer: no row is read). */
async function readParquetColumns(files: readonly string[], options: InputReading): Promise<Array<{ file: string; columns: string[] }>> {
  // loaded only for Parquet files: the decoder is large
  const { openParquet } = await import('../input/parquet.js');
  const found: Array<{ file: string; columns: string[] }> = [];
  for (const file of files) {
    const parquet = await openParquet(file, options.remote);
    try {
      found.push({ file, columns: parquet.columns });
    } finally {
      await parquet.close();
    }
  }
  return found;
}

/** Annotations whose values may add to what a profile holds when sent again (an operation, or JSON that may hold one). */
const ADDING_ANNOTATIONS: ReadonlySet<string> = new Set(['inc', 'add', 'remove', 'json']);

/**
 * The kind of the rows of each CSV input that is a file, read as the plan reads its header (the
 * delimiter given or found), and whether a column may add to a profile when sent again (`:inc`,
 * `:add`, `:remove`, `:json`, or a dotted name such as `visits.inc`). A file whose rows name their
 * own kind (`_kind`, a CSV rejects file) counts as events; one whose header cannot be used is left out.
 */
export async function csvKinds(
  options: InputReading,
  map: ColumnMap | undefined,
): Promise<Map<string, { kind: ArrayName; adding: boolean }>> {
  const kinds = new Map<string, { kind: ArrayName; adding: boolean }>();
  const csvFiles = options.inputs.filter((file) => file !== STDIN && formatOf(file, options.format) === 'csv');
  if (csvFiles.length === 0) return kinds;
  const [{ readCsv }, { csvOptions }, { kindColumnOf, readRowsHeader }, { parseColumnSpec }, { isAddingOperationName }] = await Promise.all([
    import('../input/csv.js'),
    import('./plan-csv.js'),
    import('../mapping/kind-column.js'),
    import('../mapping/columns.js'),
    import('../records/state-record.js'),
  ]);
  for (const file of csvFiles) {
    for await (const records of readCsv(inputBytes(file, { remote: options.remote }), file, csvOptions(options))) {
      const first = records[0];
      if (first === undefined) continue;
      if (!('error' in first)) {
        const headerOptions = { kind: options.kind, map, cells: options.reading };
        const result = readRowsHeader(first.cells, headerOptions);
        if (result.ok) {
          const adding = result.header.keys.some((key) => {
            const spec = key === undefined ? undefined : parseColumnSpec(key.trim());
            if (spec === undefined || 'problem' in spec) return false;
            return (spec.annotation !== undefined && ADDING_ANNOTATIONS.has(spec.annotation)) || isAddingOperationName(spec.path[spec.path.length - 1]);
          });
          const mixed = kindColumnOf(first.cells, headerOptions) !== -1;
          kinds.set(file, { kind: mixed ? 'events' : result.header.kind, adding });
        }
      }
      break;
    }
  }
  return kinds;
}

/** A key of an operation that adds, in JSON text (`"inc":`, `"$add" :`). */
const ADDING_KEY = /"(?:inc|add|remove|\$add|\$remove|\$update)"\s*:/;

/**
 * Whether an NDJSON input may hold an operation that adds, read as bytes (a key named like one,
 * anywhere): a file of another encoding than UTF-8 or Latin-1 is taken to hold one.
 */
export async function ndjsonMayAdd(file: string, encoding: InputEncoding | undefined, remote?: RemoteInputs): Promise<boolean> {
  if (encoding === 'utf-16le') return true;
  let tail = '';
  for await (const bytes of inputBytes(file, { remote })) {
    const text = tail + bytes.toString('latin1');
    if (ADDING_KEY.test(text)) return true;
    tail = text.slice(-16);
  }
  return false;
}
