// CSV rows with the physical line each starts on (RFC 4180 quoting, BOM, LF or CRLF, even mixed),
// read with papaparse's parser over chunks of text, so a 50-million-row file streams through in
// constant memory. A row holding bytes not valid in the file's encoding says so (see decode.ts).
import Papa from 'papaparse';
import { InputError, SourceError, passesThrough } from '../errors.js';
import { CSV_TEXT_AFTER_QUOTE, CSV_UNCLOSED_QUOTE } from '../model/csv-reasons.js';
import { createDecoding, undecodableIn, undecodableMessage, withoutMarks, type InputEncoding } from './decode.js';

export type CsvRecord =
  /**
   * A row: the first one read is the header. `undecodable`: a cell held bytes not valid in the
   * file's encoding (the first such cell, and what is wrong); its cells show U+FFFD in their place.
   */
  | { line: number; cells: string[]; undecodable?: { cell: number; message: string } }
  /** Text that is no row at all; `error` starts with `row:`; `text` is the text, when it is kept. */
  | { line: number; error: string; text?: string };

/** A row longer than this is taken for a quote left open, not for data: reading stops. */
export const MAX_ROW_CHARS = 16 * 1024 * 1024;

import { DELIMITERS, type Delimiter } from './delimiters.js';

export { DELIMITERS, type Delimiter } from './delimiters.js';

export interface CsvOptions {
  /** Default MAX_ROW_CHARS. */
  maxRowChars?: number;
  /** The encoding of the bytes (default utf-8). */
  encoding?: InputEncoding;
  /** Between cells; when not given, the one the header line uses most (a comma when it uses none). */
  delimiter?: Delimiter;
  /** Told the delimiter found in the header line, when it was not given. */
  detected?: (delimiter: Delimiter) => void;
  /** Told once every byte is read: whether some text beyond ASCII was valid UTF-8 (TextDecoding.beyondAscii). */
  textRead?: (beyondAscii: boolean) => void;
}

/** Header names that name the user (after spaces, case and an annotation): a delimiter that splits one out is likely the file's. */
const IDENTIFIER_NAME = /^(external_id|email|phone|service_id|user_alias\.alias_name)(:string)?$/;

/**
 * The delimiter a header line uses: of `,` `;` tab `|`, one whose cells include a column naming the
 * user (`external_id;Company, Inc, Ltd` is `;`), and of those (or of all, when none does) the one it
 * holds most often outside quotes; a comma on a tie or when it holds none.
 */
export function detectDelimiter(headerLine: string): Delimiter {
  const counts = new Map<string, number>();
  let quoted = false;
  for (const char of headerLine) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (DELIMITERS as readonly string[]).includes(char)) counts.set(char, (counts.get(char) ?? 0) + 1);
  }
  const used = DELIMITERS.filter((delimiter) => delimiter === ',' || (counts.get(delimiter) ?? 0) > 0);
  const naming = used.length > 1 ? used.filter((delimiter) => splitsOutIdentifier(headerLine, delimiter)) : [];
  const candidates = naming.length > 0 ? naming : used;
  let best: Delimiter = candidates[0];
  for (const delimiter of candidates) if ((counts.get(delimiter) ?? 0) > (counts.get(best) ?? 0)) best = delimiter;
  return best;
}

/** Whether splitting the header line on `delimiter` (outside quotes) gives a cell that names the user. */
function splitsOutIdentifier(headerLine: string, delimiter: Delimiter): boolean {
  let quoted = false;
  let cell = '';
  for (const char of `${headerLine}${delimiter}`) {
    if (char === '"') quoted = !quoted;
    else if (char === delimiter && !quoted) {
      if (IDENTIFIER_NAME.test(cell.trim().toLowerCase())) return true;
      cell = '';
    } else cell += char;
  }
  return false;
}

/** As much of a rejected row's text as goes to the rejects file. */
const KEPT_TEXT_CHARS = 10_000;


/**
 * Records are split at LF only; a CR before it is dropped from the row's last cell, so LF, CRLF and
 * a mix of both read alike. (A quoted last cell that itself ends in CR loses that CR too.) A CRLF
 * inside a quoted cell is kept as it is.
 */
const CONFIG = { delimiter: ',', newline: '\n', quoteChar: '"', escapeChar: '"' } as const;
type Config = Omit<typeof CONFIG, 'delimiter'> & { delimiter: Delimiter };

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
function rowStart(config: Config, text: string, row: number): number {
  return row === 0 ? 0 : parse(new Papa.Parser({ ...config, preview: row }), text, false).meta.cursor;
}

/**
 * The line feed ending the row that starts at `at`, read as the rules read it and, past a quoted
 * cell's closing quote, as text up to the next comma or line feed (where a bad quote's row goes on);
 * -1 when the text ends first.
 */
function endOfRow(text: string, at: number, delimiter: string): number {
  for (;;) {
    if (text.charCodeAt(at) === 0x22) {
      let quote = text.indexOf('"', at + 1);
      while (quote !== -1 && text.charCodeAt(quote + 1) === 0x22) quote = text.indexOf('"', quote + 2);
      if (quote === -1) return -1;
      at = quote + 1;
    }
    const lineFeed = text.indexOf('\n', at);
    const comma = text.indexOf(delimiter, at);
    if (comma === -1 || (lineFeed !== -1 && lineFeed < comma)) return lineFeed;
    at = comma + 1;
  }
}

function lineFeedsIn(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) count += 1;
  return count;
}

const kept = (text: string): string => (text.length > KEPT_TEXT_CHARS ? `${text.slice(0, KEPT_TEXT_CHARS)}...` : text);

/**
 * After a row with a bad quote, the rest of a piece of text is parsed this much at a time: papaparse
 * reads on past a bad quote to the next closing quote it can find, which may be far.
 */
const WINDOW_AFTER_BAD_ROW = 4096;

/**
 * Reads rows from text given a piece at a time. A row that is not complete yet waits for more text;
 * while one row stays incomplete, it is parsed again only once the text has doubled, so a quote
 * left open costs linear time up to the row limit. (Papa.parse's own streaming parses an incomplete
 * row again with every chunk and has no such limit, hence its Parser here; the tests pin down what
 * this reader makes of every case, as papaparse's versions go by.)
 */
class CsvText {
  private readonly parser: Papa.Parser;
  private pending = '';
  private retryAt = 0;
  /** The line the next row starts on. */
  private line = 1;

  constructor(
    private readonly file: string,
    private readonly maxRowChars: number,
    private readonly config: Config,
  ) {
    this.parser = new Papa.Parser(config);
  }

  /** The rows completed by `text` (all that are left when `final`), in order. */
  take(text: string, final: boolean): CsvRecord[] {
    this.pending = this.pending.length === 0 ? text : this.pending + text;
    const out: CsvRecord[] = [];
    if (!final && this.pending.length < this.retryAt) return out;
    let window = Infinity;
    for (;;) {
      const whole = this.pending.length <= window;
      const input = whole ? this.pending : this.pending.slice(0, window);
      const last = whole && final;
      const result = parse(this.parser, input, last);
      const malformed = result.errors.find((e) => e.code === 'InvalidQuotes');
      const malformedStart = malformed === undefined ? -1 : rowStart(this.config, input, malformed.row);
      // a row with a bad quote ends at the line feed after its last cell: until that is read, it waits
      const malformedEnd = malformed === undefined ? -1 : endOfRow(input, malformedStart, this.config.delimiter);
      if (malformed !== undefined && (malformedEnd !== -1 || last)) {
        this.rows(result.data, malformed.row, out);
        const rowText = input.slice(malformedStart, malformedEnd === -1 ? input.length : malformedEnd).replace(/\r$/, '');
        out.push({ line: this.line, error: CSV_TEXT_AFTER_QUOTE, text: kept(rowText) });
        this.line += 1 + lineFeedsIn(rowText);
        this.pending = malformedEnd === -1 ? '' : this.pending.slice(malformedEnd + 1);
        if (this.pending.length === 0) return out;
        window = WINDOW_AFTER_BAD_ROW;
        continue;
      }
      const unclosed = last ? result.errors.find((e) => e.code === 'MissingQuotes') : undefined;
      const rows = malformed?.row ?? unclosed?.row ?? result.data.length;
      this.rows(result.data, rows, out);
      if (unclosed !== undefined) {
        const rest = input.slice(rowStart(this.config, input, unclosed.row)).replace(/[\r\n]+$/, '');
        out.push({ line: this.line, error: CSV_UNCLOSED_QUOTE, text: kept(rest) });
      }
      const consumed = malformed !== undefined ? malformedStart : last ? input.length : result.meta.cursor;
      this.pending = this.pending.slice(consumed);
      if (!whole) {
        // a window of text: on to the rest, in a wider window when this one held no whole row
        if (consumed === 0) window *= 2;
        continue;
      }
      this.retryAt = rows === 0 ? Math.min(2 * this.pending.length, this.maxRowChars + 1) : 0;
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
}

/** Finds the cells holding bytes that were not valid (marks, see decode.ts) and shows U+FFFD in their place. */
function markUndecodable(records: CsvRecord[], encoding: InputEncoding | undefined): void {
  for (const record of records) {
    if ('error' in record) {
      if (record.text !== undefined) record.text = withoutMarks(record.text);
      continue;
    }
    const { cells } = record;
    for (let i = 0; i < cells.length; i += 1) {
      const found = undecodableIn(cells[i]);
      if (found === undefined) continue;
      record.undecodable ??= { cell: i, message: undecodableMessage(found, encoding) };
      cells[i] = withoutMarks(cells[i]);
    }
  }
}

export async function* readCsv(bytes: AsyncIterable<Buffer>, file: string, options: CsvOptions = {}): AsyncGenerator<CsvRecord[]> {
  const decoder = createDecoding(options.encoding);
  const maxRowChars = options.maxRowChars ?? MAX_ROW_CHARS;
  let csv: CsvText | undefined;
  // without a delimiter given, text waits here until the header line is whole, to be read from it
  let head = '';
  const reader = (text: string, final: boolean): CsvText | undefined => {
    if (csv !== undefined) return csv;
    let delimiter = options.delimiter;
    if (delimiter === undefined) {
      const end = text.indexOf('\n');
      if (end === -1 && !final && text.length <= maxRowChars) return undefined;
      delimiter = detectDelimiter(end === -1 ? text : text.slice(0, end));
      options.detected?.(delimiter);
    }
    csv = new CsvText(file, maxRowChars, { ...CONFIG, delimiter });
    return csv;
  };
  let first = true;
  const text = (decoded: string): string => {
    if (!first || decoded.length === 0) return decoded;
    first = false;
    return decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded; // a UTF-8 byte order mark
  };
  const take = (decoded: string, final: boolean): CsvRecord[] => {
    if (csv === undefined) {
      head += decoded;
      if (reader(head, final) === undefined) return [];
      decoded = head;
      head = '';
    }
    return csv!.take(decoded, final);
  };
  try {
    for await (const chunk of bytes) {
      const records = take(text(decoder.write(chunk)), false);
      if (decoder.damaged) markUndecodable(records, options.encoding);
      if (records.length > 0) yield records;
    }
    // a line feed ends the last row as it ends every other (a file need not end with one)
    const records = take(`${text(decoder.end())}\n`, true);
    if (decoder.damaged) markUndecodable(records, options.encoding);
    if (records.length > 0) yield records;
    options.textRead?.(decoder.beyondAscii);
  } catch (error) {
    // a read the network broke is no fault of the CSV: it stays the SourceError it is (exit 3)
    if (passesThrough(error)) throw error;
    throw new InputError(`cannot read it as CSV (${(error as Error).message})`, file);
  }
}
