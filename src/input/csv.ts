// CSV rows with the physical line each starts on (RFC 4180 quoting, BOM, LF or CRLF, even mixed),
// read with papaparse's parser over chunks of text, so a 50-million-row file streams through in
// constant memory.
import { StringDecoder } from 'node:string_decoder';
import Papa from 'papaparse';
import { InputError } from '../errors.js';

export type CsvRecord =
  /** A row: the first one read is the header. */
  | { line: number; cells: string[] }
  /** Text that is no row at all; `error` starts with `row:`; `text` is the text, when it is kept. */
  | { line: number; error: string; text?: string };

/** A row longer than this is taken for a quote left open, not for data: reading stops. */
export const MAX_ROW_CHARS = 16 * 1024 * 1024;

export interface CsvOptions {
  /** Default MAX_ROW_CHARS. */
  maxRowChars?: number;
}

/** As much of a rejected row's text as goes to the rejects file. */
const KEPT_TEXT_CHARS = 10_000;

export const UNCLOSED_QUOTE =
  'row: a quoted cell on this row is never closed, so the rest of the file was read as one cell; close the quote';
export const TEXT_AFTER_QUOTE =
  'row: a quoted cell on this row has text after its closing quote; quote the whole cell and double each quote inside it';

/**
 * Records are split at LF only; a CR before it is dropped from the row's last cell, so LF, CRLF and
 * a mix of both read alike. (A quoted last cell that itself ends in CR loses that CR too.) A CRLF
 * inside a quoted cell is kept as it is.
 */
const CONFIG = { delimiter: ',', newline: '\n', quoteChar: '"', escapeChar: '"' } as const;

interface PapaError {
  code: string;
  /** The row it concerns, as an index into `data`. */
  row: number;
  /** Where the cell it concerns starts, after its opening quote. */
  index: number;
}
interface PapaResult {
  data: string[][];
  errors: PapaError[];
  /** Where the text of the rows in `data` ends. */
  meta: { cursor: number };
}

const parse = (parser: Papa.Parser, text: string, final: boolean): PapaResult => parser.parse(text, 0, !final) as PapaResult;

/** Where the row `row` of `text` starts. */
function rowStart(text: string, row: number): number {
  return row === 0 ? 0 : parse(new Papa.Parser({ ...CONFIG, preview: row }), text, false).meta.cursor;
}

/**
 * The line feed that ends a row whose cell, opened just before `cellStart`, has text after its
 * closing quote (the first quote that is not doubled); -1 when the text ends first.
 */
function endOfMalformedRow(text: string, cellStart: number): number {
  for (let at = text.indexOf('"', cellStart); at !== -1; at = text.indexOf('"', at + 2)) {
    if (text.charCodeAt(at + 1) !== 0x22) return text.indexOf('\n', at + 1);
  }
  return -1;
}

function lineFeedsIn(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) count += 1;
  return count;
}

/**
 * Reads rows from text given a piece at a time. A row that is not complete yet waits for more text;
 * while one row stays incomplete, it is parsed again only once the text has doubled, so a quote
 * left open costs linear time up to the row limit. (Papa.parse's own streaming parses an incomplete
 * row again with every chunk and has no such limit, hence its Parser here; the tests pin down what
 * this reader makes of every case, as papaparse's versions go by.)
 */
class CsvText {
  private readonly parser = new Papa.Parser(CONFIG);
  private pending = '';
  private retryAt = 0;
  /** The line the next row starts on. */
  private line = 1;

  constructor(
    private readonly file: string,
    private readonly maxRowChars: number,
  ) {}

  /** The rows completed by `text` (all that are left when `final`), in order. */
  take(text: string, final: boolean): CsvRecord[] {
    this.pending = this.pending.length === 0 ? text : this.pending + text;
    const out: CsvRecord[] = [];
    if (!final && this.pending.length < this.retryAt) return out;
    for (;;) {
      const result = parse(this.parser, this.pending, final);
      // a bad quote is known for one once a line feed follows it (before, more text may close the cell)
      const malformed = result.errors.find((e) => e.code === 'InvalidQuotes');
      const end = malformed === undefined ? -1 : endOfMalformedRow(this.pending, malformed.index);
      if (malformed !== undefined && (end !== -1 || final)) {
        this.rows(result.data, malformed.row, out);
        this.skipMalformed(malformed.row, end, out);
        if (this.pending.length > 0) continue;
        return out;
      }
      const unclosed = final ? result.errors.find((e) => e.code === 'MissingQuotes') : undefined;
      const rows = unclosed?.row ?? result.data.length;
      this.rows(result.data, rows, out);
      if (unclosed !== undefined) out.push({ line: this.line, error: UNCLOSED_QUOTE });
      this.pending = final ? '' : this.pending.slice(result.meta.cursor);
      this.retryAt = rows === 0 ? 2 * this.pending.length : 0;
      if (this.pending.length > this.maxRowChars) {
        throw new InputError(
          `a row starting on this line is longer than ${this.maxRowChars} characters; is a quote left open on it?`,
          this.file,
          this.line,
        );
      }
      return out;
    }
  }

  /** Hands on the first `count` rows of `data`, numbering their lines. */
  private rows(data: string[][], count: number, out: CsvRecord[]): void {
    for (let i = 0; i < count; i += 1) {
      const cells = data[i]!;
      const last = cells.length - 1;
      if (cells[last]!.charCodeAt(cells[last]!.length - 1) === 0x0d) cells[last] = cells[last]!.slice(0, -1);
      const line = this.line;
      this.line += 1;
      for (const cell of cells) if (cell.includes('\n')) this.line += lineFeedsIn(cell);
      if (last === 0 && cells[0] === '') continue; // an empty line
      out.push({ line, cells });
    }
  }

  /**
   * Rejects row `row` of the pending text, which has a bad quote: from its start to `end`, the line
   * feed after that quote (-1: the end of the text), and drops everything up to there.
   */
  private skipMalformed(row: number, end: number, out: CsvRecord[]): void {
    const start = rowStart(this.pending, row);
    const text = this.pending.slice(start, end === -1 ? this.pending.length : end).replace(/\r$/, '');
    out.push({ line: this.line, error: TEXT_AFTER_QUOTE, text: text.length > KEPT_TEXT_CHARS ? `${text.slice(0, KEPT_TEXT_CHARS)}...` : text });
    this.line += 1 + lineFeedsIn(text);
    this.pending = end === -1 ? '' : this.pending.slice(end + 1);
    this.retryAt = 0;
  }
}

export async function* readCsv(bytes: AsyncIterable<Buffer>, file: string, options: CsvOptions = {}): AsyncGenerator<CsvRecord[]> {
  const decoder = new StringDecoder('utf8');
  const csv = new CsvText(file, options.maxRowChars ?? MAX_ROW_CHARS);
  let first = true;
  const text = (decoded: string): string => {
    if (!first || decoded.length === 0) return decoded;
    first = false;
    return decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded; // a UTF-8 byte order mark
  };
  try {
    for await (const chunk of bytes) {
      const records = csv.take(text(decoder.write(chunk)), false);
      if (records.length > 0) yield records;
    }
    const records = csv.take(text(decoder.end()), true);
    if (records.length > 0) yield records;
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(`cannot read it as CSV (${(error as Error).message})`, file);
  }
}
