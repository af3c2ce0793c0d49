// NDJSON lines (one JSON value a line; LF or CRLF; blank lines skipped) with their line numbers,
// parsed in chunks of lines; a line that is not JSON is data for the rejects file, not an error.
import { StringDecoder } from 'node:string_decoder';

export type NdjsonRecord =
  /** `chars`: the length of the line's text. */
  | { line: number; value: unknown; chars: number }
  /** A line that could not be read; `text` is as much of it as is kept, `error` starts with `line:`. */
  | { line: number; text: string; error: string };

/** A line longer than this is rejected unread, and memory stays bounded. */
export const MAX_LINE_CHARS = 16 * 1024 * 1024;

export interface NdjsonOptions {
  /** Default MAX_LINE_CHARS. */
  maxLineChars?: number;
}

const BLANK = /^\s*$/;

function parseLine(line: number, text: string): NdjsonRecord | undefined {
  if (text.length === 0 || (text.length < 64 && BLANK.test(text))) return undefined;
  try {
    return { line, value: JSON.parse(text), chars: text.length };
  } catch (error) {
    if (BLANK.test(text)) return undefined;
    return { line, text, error: `line: is not valid JSON (${(error as Error).message})` };
  }
}

export async function* readNdjson(bytes: AsyncIterable<Buffer>, options: NdjsonOptions = {}): AsyncGenerator<NdjsonRecord[]> {
  const maxLineChars = options.maxLineChars ?? MAX_LINE_CHARS;
  const decoder = new StringDecoder('utf8');
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
    const record = parseLine(line, end === text.length ? text : text.slice(0, end));
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
}

function tooLong(line: number, start: string, max: number): NdjsonRecord {
  return { line, text: `${start}...`, error: `line: is longer than ${max} characters; it was not read` };
}
