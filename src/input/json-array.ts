// A `.json` file: a top-level array of objects, streamed an element at a time in constant memory by
// @streamparser/json (a document of one array is never held whole), or NDJSON when its first byte
// that is not a space is `{`, or objects one after another when its first line is `{` alone (no line
// of NDJSON is: a pretty-printer wrote it, and read a line at a time every line of it but an object's
// last was refused). Each element is a row numbered from 1, with the line of the file where it
// begins (for messages), read as an NDJSON line is: a number JavaScript cannot hold as written, text
// not valid in the file's encoding, or nesting too deep rejects the element, not the file. JSON that
// is broken stops the reading there, naming the byte: past it, where the next element begins cannot
// be known. One object holding the rows under a key is refused (json-wrapper.ts).
import { Tokenizer, TokenParser, TokenType, type ParsedTokenInfo } from '@streamparser/json';
import { InputError, passesThrough } from '../errors.js';
import { numberTextProblem } from '../model/exact-numbers.js';
import { brokenJson, TextLines } from './broken-json.js';
import { createDecoding, marksReplaced, undecodableIn, undecodableMessage, type InputEncoding, type Undecodable } from './decode.js';
import { refusingWrapper } from './json-wrapper.js';
import { MAX_LINE_CHARS, MAX_LINE_DEPTH, readNdjson, type NdjsonRecord } from './ndjson.js';

/** A number JavaScript cannot hold as written, kept as its text until its element is checked. */
class UnheldNumber {
  constructor(
    readonly text: string,
    readonly problem: string,
  ) {}
}

/** A tokenizer that keeps numbers it cannot hold exactly as UnheldNumber (the rule of NDJSON numbers). */
class ExactTokenizer extends Tokenizer {
  unheld = 0;

  protected override parseNumber(text: string): number {
    const n = Number(text);
    // shorter numbers without an exponent are always held exactly
    if (text.length < 16 && !text.includes('e') && !text.includes('E')) return n;
    const problem = numberTextProblem(text);
    if (problem === undefined) return n;
    this.unheld += 1;
    return new UnheldNumber(text, problem) as unknown as number;
  }
}

/** The first UnheldNumber in a value, with its path (`properties.big`, `tags[2]`). */
function firstUnheld(value: unknown, path = ''): { path: string; number: UnheldNumber } | undefined {
  if (value instanceof UnheldNumber) return { path, number: value };
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const found = firstUnheld(inner, Array.isArray(value) ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The element's JSON with each number as written: what the rejects file keeps of it. */
const writtenText = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) => (inner instanceof UnheldNumber ? `\u0000${inner.text}\u0000` : inner)).replace(/"\\u0000([^"\\]*)\\u0000"/g, '$1');

export interface JsonArrayOptions {
  /** The encoding of the bytes (default utf-8). */
  encoding?: InputEncoding;
  /** An element longer than this many bytes is rejected unread, and memory stays bounded (default MAX_LINE_CHARS, an NDJSON line's bound). */
  maxElementBytes?: number;
}

/** What is read of an element (`line`: its place in the array; `fileLine`: the line of the file where it begins): the record, once it is whole. */
function elementRecord(line: number, fileLine: number, value: unknown, chars: number, unheld: boolean, deepest: number, undecodable: Undecodable | undefined, encoding?: InputEncoding): NdjsonRecord {
  if (deepest > MAX_LINE_DEPTH) return { line, fileLine, text: '', error: `row: nests deeper than ${MAX_LINE_DEPTH} levels; it was not read` };
  if (unheld) {
    const found = firstUnheld(value)!;
    return { line, fileLine, text: writtenText(value), error: `${found.path === '' ? 'row' : found.path}: ${found.number.problem}` };
  }
  // (its text holds a U+FFFD where the byte stood, as the rejects file shows it)
  if (undecodable !== undefined) return { line, fileLine, text: JSON.stringify(value), error: `row: ${undecodableMessage(undecodable, encoding)}` };
  // (an object literal: spreading a place into each record cost a quarter of the reading)
  return { line, fileLine, value, chars };
}

/**
 * What a `.json` file holds: the elements of one array, or values one after another, each over as
 * many lines as it takes (a pretty-printed object, or several as `jq` writes them without -c).
 */
type JsonLayout = 'array' | 'values';

type OnValue = (value: { value: unknown; stack: unknown[] }) => void;

/**
 * A parser of the layout's rows, each given to `onValue`; `after` an element whose tokens were let go,
 * one standing where the last stood (within the array: after a value, a null that is no row).
 */
function parserOf(layout: JsonLayout, onValue: OnValue, after = false): TokenParser {
  const made = new TokenParser(layout === 'array' ? { paths: ['$.*'], keepStack: false } : { paths: ['$'], keepStack: false, separator: '' });
  if (after && layout === 'array') {
    made.onValue = () => undefined;
    for (const token of [TokenType.LEFT_BRACKET, TokenType.NULL]) made.write({ token, value: token === TokenType.NULL ? null : '[', offset: 0 } as ParsedTokenInfo);
  }
  made.onValue = onValue as TokenParser['onValue'];
  return made;
}

/** The error for JSON that breaks where the token at byte `at` begins, `row` rows read. */
function brokenError(error: unknown, where: { file: string; layout: JsonLayout; at: number; row: number; lines: TextLines }): InputError {
  const said = brokenJson((error as Error).message, where.at) ?? { what: (error as Error).message };
  const after = where.row > 0 ? `after row ${where.row}, which was read` : undefined;
  const parts = [said.byte === undefined ? undefined : `byte ${said.byte}`, after].filter((part) => part !== undefined);
  const line = said.byte === undefined ? where.lines.lastLine() : where.lines.lineAt(said.byte);
  const what = where.layout === 'array' ? 'is not a valid JSON array' : 'is not valid JSON (objects one after another)';
  return new InputError(`${what}: ${said.what}${parts.length > 0 ? ` (${parts.join('; ')})` : ''}`, where.file, line);
}

/**
 * The bytes handed to the tokenizer, a chunk of text at a time: each byte that was not valid in the
 * encoding becomes one U+FFFD, and its place among those bytes is kept, so that the element it falls
 * in is rejected, naming it.
 */
function tokenizerFeed(damaged: () => boolean) {
  let fed = 0;
  /** The bytes not valid not yet behind the element being read, each `at` its byte among those fed. */
  const invalid: Array<{ at: number; undecodable: Undecodable }> = [];
  /** The first of them not yet behind (those before are dropped now and then, not one by one). */
  let next = 0;
  return {
    bytesOf(text: string): Buffer {
      const replaced = damaged() ? marksReplaced(text) : { text, marks: [] };
      let at = fed;
      let from = 0;
      for (const undecodable of replaced.marks) {
        at += Buffer.byteLength(replaced.text.slice(from, undecodable.index));
        from = undecodable.index;
        invalid.push({ at, undecodable });
      }
      const bytes = Buffer.from(replaced.text);
      fed += bytes.length;
      return bytes;
    },
    /** The first byte not valid within the element from byte `start` to byte `end`. */
    invalidWithin(start: number, end: number): Undecodable | undefined {
      while (next < invalid.length && invalid[next].at < start) next += 1;
      if (next > 1024 && next * 2 > invalid.length) {
        invalid.splice(0, next);
        next = 0;
      }
      return next < invalid.length && invalid[next].at <= end ? invalid[next].undecodable : undefined;
    },
  };
}

/** The rows of a JSON document (`layout`), a chunk of input text at a time. */
async function* jsonRows(chunks: AsyncIterator<string>, file: string, options: JsonArrayOptions, damaged: () => boolean, layout: JsonLayout): AsyncGenerator<NdjsonRecord[]> {
  const tokenizer = new ExactTokenizer();
  // a row is an element of the array (depth 1), or a value at the top
  const top = layout === 'array' ? 1 : 0;
  const maxBytes = options.maxElementBytes ?? MAX_LINE_CHARS;
  let batch: NdjsonRecord[] = [];
  let row = 0;
  let depth = 0;
  let deepest = 0;
  let start = 0;
  /** The line of the file where the element being read begins. */
  let startLine = 1;
  let unheldBefore = 0;
  let endOffset = 0;
  /** Where the token being read starts, in bytes of the text: where broken JSON is named. */
  let at = 0;
  const lines = new TextLines();
  /** The element being read grew past maxBytes: its tokens are let go, not parsed. */
  let tooLong = false;
  const fed = tokenizerFeed(damaged);
  // (the parser is made below, with its handler; the tokenizer calls this only once it is written to)
  tokenizer.onToken = (info: ParsedTokenInfo) => {
    at = info.offset;
    if (depth === top && info.token !== TokenType.COMMA && info.token !== TokenType.RIGHT_BRACKET) {
      start = info.offset;
      startLine = lines.lineFrom(start);
    }
    if (info.token === TokenType.LEFT_BRACE || info.token === TokenType.LEFT_BRACKET) deepest = Math.max(deepest, (depth += 1));
    else if (info.token === TokenType.RIGHT_BRACE || info.token === TokenType.RIGHT_BRACKET) depth -= 1;
    endOffset = info.offset;
    if (!tooLong && depth > top && info.offset - start > maxBytes) tooLong = true;
    if (!tooLong) return parser.write(info);
    // an element past the bound is let go token by token, not parsed, until its last
    if (depth > top) return;
    tooLong = false;
    row += 1;
    batch.push({ line: row, fileLine: startLine, text: '', error: `row: is longer than ${maxBytes} bytes; it was not read` });
    parser = parserOf(layout, onValue, true);
    deepest = depth;
    unheldBefore = tokenizer.unheld;
  };
  const onValue = ({ value, stack }: { value: unknown; stack: unknown[] }): void => {
    if (stack.length !== top) return;
    row += 1;
    const unheld = tokenizer.unheld > unheldBefore;
    unheldBefore = tokenizer.unheld;
    batch.push(elementRecord(row, startLine, value, endOffset - start + 1, unheld, deepest - top, fed.invalidWithin(start, endOffset), options.encoding));
    deepest = depth;
  };
  let parser = parserOf(layout, onValue);
  const fail = (error: unknown): never => {
    throw brokenError(error, { file, layout, at, row, lines });
  };
  try {
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) {
      if (next.value !== '') {
        // the tokenizer takes the bytes as they are counted, not text it would encode again
        const bytes = fed.bytesOf(next.value);
        lines.add(bytes);
        tokenizer.write(bytes);
      }
      if (batch.length > 0) yield batch;
      batch = [];
    }
    tokenizer.end();
  } catch (error) {
    if (batch.length > 0) yield batch;
    batch = [];
    if (passesThrough(error)) throw error;
    fail(error);
  }
  if (layout === 'array' && !parser.isEnded) fail(new Error('the file ends before the array is closed with ]'));
  if (layout === 'values' && depth > 0) fail(new Error('the file ends before the object is closed with }'));
  if (batch.length > 0) yield batch;
}

/**
 * How a `.json` input's text begins: its first character that is not a space, and whether its first
 * line is `{` alone, as a pretty-printer writes an object (no line of NDJSON is); undefined when empty.
 */
async function leadOf(source: AsyncIterator<Buffer>, seen: Buffer[], encoding?: InputEncoding): Promise<{ lead: string; head: string; spread: boolean } | undefined> {
  const probe = createDecoding(encoding);
  let head = '';
  for (;;) {
    const next = await source.next();
    if (next.done === true) return head === '' ? undefined : { lead: head[0], head, spread: false };
    seen.push(next.value);
    head = (head + probe.write(next.value)).replace(/^\uFEFF/, '').trimStart();
    if (head === '') continue;
    const end = head.indexOf('\n');
    // (undecided, the head is `{` and spaces: it stays short)
    if (head[0] !== '{' || end !== -1 || head.trim() !== '{') return { lead: head[0], head, spread: end !== -1 && head.slice(0, end).trim() === '{' };
  }
}

/** Why a `.json` input that begins with neither [ nor { cannot be read: a byte order mark of UTF-16 or a byte not valid in its encoding is named as such. */
function notJson(head: string, first: Buffer, encoding?: InputEncoding): string {
  if (first[0] === 0xfe && first[1] === 0xff) return 'starts with FE FF, the mark of UTF-16BE, which no --encoding reads: save it as UTF-8';
  const undecodable = undecodableIn(head);
  if (undecodable?.index !== 0) return `is not a JSON array of objects (it begins with ${JSON.stringify(head[0])}); a .json input holds [ {...}, {...} ], or one object a line`;
  if (first[0] === 0xff && first[1] === 0xfe && encoding !== 'utf-16le') return 'starts with FF FE, the mark of UTF-16LE: give --encoding utf-16le';
  return `is not a JSON array of objects: ${undecodableMessage(undecodable, encoding)}`;
}

/**
 * The rows of a `.json` input: the elements of its top-level array; its lines when it is NDJSON (its
 * first character that is not a space is `{`); or, when its first line is `{` alone, the objects it
 * holds one after another, each over as many lines as it takes. Anything else is an InputError naming the file.
 */
export async function* readJson(bytes: AsyncIterable<Buffer>, file: string, options: JsonArrayOptions = {}): AsyncGenerator<NdjsonRecord[]> {
  const source = bytes[Symbol.asyncIterator]();
  try {
    yield* jsonOf(source, file, options);
  } finally {
    // a reader that stops early (a preview) ends the read, and the file is closed
    await source.return?.();
  }
}

/** readJson(), from its source's iterator. */
async function* jsonOf(source: AsyncIterator<Buffer>, file: string, options: JsonArrayOptions): AsyncGenerator<NdjsonRecord[]> {
  // the bytes read to find the first character are handed on whole to the reader chosen
  const seen: Buffer[] = [];
  const begins = await leadOf(source, seen, options.encoding);
  const replayed = async function* (): AsyncGenerator<Buffer> {
    yield* seen;
    for (let next = await source.next(); next.done !== true; next = await source.next()) yield next.value;
  };
  if (begins === undefined) return; // an empty file holds no rows
  const { lead, spread } = begins;
  if (lead === '{' && !spread) {
    yield* refusingWrapper(readNdjson(replayed(), options), file, begins.head);
    return;
  }
  if (lead !== '[' && lead !== '{') throw new InputError(notJson(begins.head, seen[0], options.encoding), file);
  const decoding = createDecoding(options.encoding);
  const texts = (async function* (): AsyncGenerator<string> {
    let first = true;
    for await (const chunk of replayed()) {
      const text = decoding.write(chunk);
      yield first ? text.replace(/^\uFEFF/, '') : text;
      first = false;
    }
    yield decoding.end();
  })();
  if (lead === '[') yield* jsonRows(texts, file, options, () => decoding.damaged, 'array');
  else yield* refusingWrapper(jsonRows(texts, file, options, () => decoding.damaged, 'values'), file, begins.head);
}
