// CSV rows with the physical line each starts on (RFC 4180 quoting, BOM, LF or CRLF), read with
// csv-parse in chunks of rows so a 50-million-row file streams through in constant memory.
import { Readable, pipeline } from 'node:stream';
import { parse, type CsvError } from 'csv-parse';
import { InputError } from '../errors.js';

export type CsvRecord =
  /** A row: the first one read is the header. */
  | { line: number; cells: string[] }
  /** Text that is no row at all; `error` starts with `row:`. */
  | { line: number; error: string };

/** A row longer than this is taken for a quote left open, not for data: reading stops. */
export const MAX_ROW_BYTES = 16 * 1024 * 1024;

/**
 * Why the line numbers are counted here rather than taken from csv-parse's `info`: building the
 * info object for every record doubles the parse time, and its `lines` counts a CRLF inside a
 * quoted field as two lines. Records are separated by exactly one line break and empty lines are
 * kept as one-cell records, so a record spans one line plus the line feeds inside its cells.
 */
function lineFeedsIn(cells: string[]): number {
  let count = 0;
  for (const cell of cells) {
    if (!cell.includes('\n')) continue;
    for (let at = cell.indexOf('\n'); at !== -1; at = cell.indexOf('\n', at + 1)) count += 1;
  }
  return count;
}

/** How csv-parse is set up for every CSV input (benchmarks measure csv-parse alone with the same). */
export const CSV_PARSE_OPTIONS = {
  bom: true,
  // a stray quote inside an unquoted cell is kept as text rather than failing every row after it
  relax_quotes: true,
  // a row with the wrong number of cells is a bad row (rejected), not the end of the file
  relax_column_count: true,
  record_delimiter: ['\r\n', '\n'],
  skip_empty_lines: false,
  max_record_size: MAX_ROW_BYTES,
  skip_records_with_error: true,
} as const;

export async function* readCsv(bytes: AsyncIterable<Buffer>, file: string): AsyncGenerator<CsvRecord[]> {
  let unclosedQuote = false;
  let fatal: InputError | undefined;
  const parser = parse({
    ...CSV_PARSE_OPTIONS,
    record_delimiter: [...CSV_PARSE_OPTIONS.record_delimiter],
    on_skip: (error: CsvError | undefined) => {
      // with the relaxations above, a quote still open at the end of the file is the one error left
      if (error?.code === 'CSV_QUOTE_NOT_CLOSED') {
        unclosedQuote = true;
        return undefined;
      }
      const line = (error as unknown as { lines?: number } | undefined)?.lines;
      fatal =
        error?.code === 'CSV_MAX_RECORD_SIZE'
          ? new InputError(`a row reaching this line is longer than ${MAX_ROW_BYTES} bytes; is a quote left open above it?`, file, line)
          : new InputError(`cannot read it as CSV (${error?.message ?? 'unknown error'})`, file, line);
      throw fatal;
    },
  });
  pipeline(Readable.from(bytes, { objectMode: false }), parser, () => undefined);

  let next = 1;
  try {
    for await (const first of parser) {
      const batch: CsvRecord[] = [];
      for (let cells = first as string[] | null; cells !== null; cells = parser.read() as string[] | null) {
        const line = next;
        next += 1 + lineFeedsIn(cells);
        if (cells.length === 1 && cells[0] === '') continue; // an empty line
        batch.push({ line, cells });
      }
      if (batch.length > 0) yield batch;
    }
  } catch (error) {
    if (fatal !== undefined) throw fatal;
    if (error instanceof InputError) throw error;
    throw new InputError(`cannot read it as CSV (${(error as Error).message})`, file);
  }
  if (unclosedQuote) {
    yield [
      {
        line: next,
        error: 'row: a quoted cell on this row is never closed, so the rest of the file was read as one cell; close the quote',
      },
    ];
  }
}
