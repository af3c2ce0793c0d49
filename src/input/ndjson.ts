// NDJSON lines (one JSON value a line; LF or CRLF; blank lines skipped) with their line numbers,
// parsed in chunks of lines; a line that cannot be read as it was written is data for the rejects
// file, not an error: not JSON, bytes not valid in the file's encoding, nested too deep, a number
// JavaScript cannot hold.
import { inexactNumberIn } from '../model/exact-numbers.js';
import { MAX_NESTING_DEPTH } from '../model/shape.js';
import { createDecoding, undecodableIn, undecodableMessage, withoutMarks, type InputEncoding } from './decode.js';

export type NdjsonRecord = (
  /** `chars`: the length of the line's text. */
  | { line: number; value: unknown; chars: number }
  /**
   * A line that could not be read; `text` is as much of it as is kept; `error` starts with `line:`,
   * or with the field of a number that cannot be held.
   */
  | { line: number; text: string; error: string }
) & {
  /** The line of the file where it begins, when `line` is not it: a JSON array's element is numbered by its place. */
  fileLine?: number;
};

/** A line longer than this is rejected unread, and memory stays bounded. */
export const MAX_LINE_CHARS = 16 * 1024 * 1024;

/**
 * A line nesting deeper than this is rejected unread. No item nesting deeper than MAX_NESTING_DEPTH
 * is valid, a line adds a few levels around its items, and a value nested some thousands deep is
 * beyond what JSON.stringify and postMessage can take (they recurse): the reject must not end the run.
 */
export const MAX_LINE_DEPTH = 4 * MAX_NESTING_DEPTH;

/** As much of a line read no further as goes to the rejects file. */
const KEPT_TEXT_CHARS = 10_000;

export interface NdjsonOptions {
  /** Default MAX_LINE_CHARS. */
  maxLineChars?: number;
  /** The encoding of the bytes (default utf-8). */
  encoding?: InputEncoding;
  /** Told once every byte is read: whether some text beyond ASCII was valid UTF-8 (TextDecoding.beyondAscii). */
  textRead?: (beyondAscii: boolean) => void;
}

const BLANK = /^\s*$/;

/** Whether JSON text nests arrays and objects deeper than `max`; cheap unless it holds more than `max` brackets. */
export function nestsDeeperThan(text: string, max: number): boolean {
  if (text.length <= 2 * max) return false;
  let brackets = 0;
  for (const open of ['[', '{']) {
    for (let at = text.indexOf(open); at !== -1 && brackets <= max; at = text.indexOf(open, at + 1)) brackets += 1;
  }
  if (brackets <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // skip the string: to the next quote not escaped by a backslash
      for (i += 1; i < text.length && text.charCodeAt(i) !== 0x22; i += 1) if (text.charCodeAt(i) === 0x5c) i += 1;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return false;
}

const kept = (text: string): string => (text.length > KEPT_TEXT_CHARS ? `${text.slice(0, KEPT_TEXT_CHARS)}...` : text);

function parseLine(line: number, text: string): NdjsonRecord | undefined {
  if (text.length === 0 || (text.length < 64 && BLANK.test(text))) return undefined;
  if (nestsDeeperThan(text, MAX_LINE_DEPTH)) {
    const error = `line: nests deeper than ${MAX_LINE_DEPTH} levels (an item's fields may nest ${MAX_NESTING_DEPTH}); it was not read`;
    return { line, text: kept(text), error };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    if (BLANK.test(text)) return undefined;
    return { line, text, error: `line: is not valid JSON (${(error as Error).message})` };
  }
  const inexact = inexactNumberIn(text);
  if (inexact !== undefined) return { line, text, error: `${inexact.path === '' ? 'line' : inexact.path}: ${inexact.message}` };
  return { line, value, chars: text.length };
}

export async function* readNdjson(bytes: AsyncIterable<Buffer>, options: NdjsonOptions = {}): AsyncGenerator<NdjsonRecord[]> {
  const maxLineChars = options.maxLineChars ?? MAX_LINE_CHARS;
  const decoder = createDecoding(options.encoding);
  let pending = '';
  let line = 1;
  /** The line being skipped because it grew past MAX_LINE_CHARS, if any. */
  let overlong: number | undefined;
  let first = true;

  const take = (text: string, batch: NdjsonRecord[]): void => {
    if (first) {
      first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const end = text.endsWith('\r') ? text.length - 1 : text.length;
    if (end !== text.length) text = text.slice(0, end);
    const undecodable = decoder.damaged ? undecodableIn(text) : undefined;
    if (undecodable !== undefined) {
      batch.push({ line, text: withoutMarks(text), error: `line: ${undecodableMessage(undecodable, options.encoding)}` });
      return;
    }
    const record = parseLine(line, text);
    if (record !== undefined) batch.push(record);
  };

  const consume = (chunk: string, batch: NdjsonRecord[]): void => {
    let start = 0;
    for (let at = chunk.indexOf('\n'); at !== -1; at = chunk.indexOf('\n', start)) {
      if (overlong !== undefined) {
        batch.push(tooLong(overlong, pending, maxLineChars));
        overlong = undefined;
        pending = '';
        first = false;
      } else {
        take(pending.length === 0 ? chunk.slice(start, at) : pending + chunk.slice(start, at), batch);
        pending = '';
      }
      line += 1;
      start = at + 1;
    }
    if (overlong !== undefined) return;
    pending = pending.length === 0 ? chunk.slice(start) : pending + chunk.slice(start);
    if (pending.length > maxLineChars) {
      overlong = line;
      pending = pending.slice(0, 200);
    }
  };

  for await (const chunk of bytes) {
    const batch: NdjsonRecord[] = [];
    consume(decoder.write(chunk), batch);
    if (batch.length > 0) yield batch;
  }
  const batch: NdjsonRecord[] = [];
  consume(decoder.end(), batch);
  if (overlong !== undefined) batch.push(tooLong(overlong, pending, maxLineChars));
  else if (pending.length > 0) take(pending, batch);
  if (batch.length > 0) yield batch;
  options.textRead?.(decoder.beyondAscii);
}

function tooLong(line: number, start: string, max: number): NdjsonRecord {
  return { line, text: `${withoutMarks(start)}...`, error: `line: is longer than ${max} characters; it was not read` };
}
