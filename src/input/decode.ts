// Bytes -> text in the encoding a file is in, chunk by chunk. Bytes that are not valid in it are not
// replaced by U+FFFD, which would pass for data: each becomes a mark in the text that the readers
// find in the row it fell in, to reject that row with the byte and its place in the file. A mark is
// lone low surrogates, which no valid input decodes to: U+DFFF, then the byte (or UTF-16 unit) as
// two characters U+DC00 + 8 bits, then its offset in the file as five such characters.
import { isAscii, isUtf8 } from 'node:buffer';

export const INPUT_ENCODINGS = ['utf-8', 'latin1', 'windows-1252', 'utf-16le'] as const;
export type InputEncoding = (typeof INPUT_ENCODINGS)[number];

/** How each encoding is named in messages. */
const NAMES: Record<InputEncoding, string> = { 'utf-8': 'UTF-8', latin1: 'Latin-1', 'windows-1252': 'Windows-1252', 'utf-16le': 'UTF-16LE' };

export interface TextDecoding {
  write(bytes: Buffer): string;
  /** The text of what is left (an incomplete character at the end of the input is not valid). */
  end(): string;
  /** True once some bytes were not valid: from then on, text may hold marks (see undecodableIn). */
  readonly damaged: boolean;
  /**
   * UTF-8: true once some text beyond ASCII was valid (a file of UTF-8 text, whatever bytes elsewhere
   * are not); false for the other encodings, which say nothing of it.
   */
  readonly beyondAscii: boolean;
}

const MARK = 0xdfff;
const MARK_LENGTH = 8;
const PAYLOAD = 0xdc00;

function mark(value: number, offset: number): string {
  const units = [MARK, PAYLOAD + (value >> 8), PAYLOAD + (value & 0xff)];
  for (let shift = 32; shift >= 0; shift -= 8) units.push(PAYLOAD + (Math.floor(offset / 2 ** shift) & 0xff));
  return String.fromCharCode(...units);
}

/** The length of the valid UTF-8 sequence at `i`, or 0 when the byte there starts none. */
function sequenceLength(bytes: Buffer, i: number, end: number): number {
  const b0 = bytes[i];
  if (b0 < 0x80) return 1;
  const continues = (at: number, low = 0x80, high = 0xbf): boolean => at < end && bytes[at] >= low && bytes[at] <= high;
  if (b0 < 0xc2) return 0;
  if (b0 < 0xe0) return continues(i + 1) ? 2 : 0;
  if (b0 < 0xf0) {
    const ok = continues(i + 1, b0 === 0xe0 ? 0xa0 : 0x80, b0 === 0xed ? 0x9f : 0xbf) && continues(i + 2);
    return ok ? 3 : 0;
  }
  if (b0 < 0xf5) {
    const ok = continues(i + 1, b0 === 0xf0 ? 0x90 : 0x80, b0 === 0xf4 ? 0x8f : 0xbf) && continues(i + 2) && continues(i + 3);
    return ok ? 4 : 0;
  }
  return 0;
}

/** Where the bytes stop holding only whole characters: before a character the next chunk completes. */
function wholeEnd(bytes: Buffer): number {
  const length = bytes.length;
  for (let k = 1; k <= Math.min(3, length); k += 1) {
    const b = bytes[length - k];
    if ((b & 0xc0) === 0x80) continue;
    if (b < 0xc0) return length;
    const needs = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    return needs > k ? length - k : length;
  }
  return length;
}

function utf8(): TextDecoding {
  let carry: Buffer | undefined;
  let offset = 0;
  let damaged = false;
  let beyondAscii = false;
  const decode = (bytes: Buffer, end: number): string => {
    const base = offset;
    offset += end;
    const whole = bytes.subarray(0, end);
    if (isUtf8(whole)) {
      if (!beyondAscii && !isAscii(whole)) beyondAscii = true;
      return bytes.toString('utf8', 0, end);
    }
    damaged = true;
    let text = '';
    let run = 0;
    for (let i = 0; i < end; ) {
      const length = sequenceLength(bytes, i, end);
      if (length > 0) {
        if (length > 1) beyondAscii = true;
        i += length;
        continue;
      }
      text += bytes.toString('utf8', run, i) + mark(bytes[i], base + i);
      i += 1;
      run = i;
    }
    return text + bytes.toString('utf8', run, end);
  };
  return {
    write(chunk) {
      const bytes = carry === undefined ? chunk : Buffer.concat([carry, chunk]);
      const end = wholeEnd(bytes);
      carry = end === bytes.length ? undefined : Buffer.from(bytes.subarray(end));
      return decode(bytes, end);
    },
    end() {
      const bytes = carry ?? Buffer.alloc(0);
      carry = undefined;
      return decode(bytes, bytes.length);
    },
    get damaged() {
      return damaged;
    },
    get beyondAscii() {
      return beyondAscii;
    },
  };
}

function utf16le(): TextDecoding {
  let carry: Buffer | undefined;
  let offset = 0;
  let damaged = false;
  const decode = (bytes: Buffer, end: number, final: boolean): string => {
    const base = offset;
    offset += end;
    const text = bytes.toString('utf16le', 0, end - (end % 2));
    const odd = final && end % 2 === 1 ? mark(bytes[end - 1], base + end - 1) : '';
    if (odd !== '') damaged = true;
    if ((text as string & { isWellFormed(): boolean }).isWellFormed()) return text + odd;
    damaged = true;
    let out = '';
    let run = 0;
    for (let i = 0; i < text.length; i += 1) {
      const c = text.charCodeAt(i);
      if (c < 0xd800 || c > 0xdfff) continue;
      const paired = c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      if (paired) {
        i += 1;
        continue;
      }
      out += text.slice(run, i) + mark(c, base + 2 * i);
      run = i + 1;
    }
    return out + text.slice(run) + odd;
  };
  return {
    write(chunk) {
      const bytes = carry === undefined ? chunk : Buffer.concat([carry, chunk]);
      let end = bytes.length - (bytes.length % 2);
      // a high surrogate at the end waits for the low one that may start the next chunk
      if (end >= 2 && (bytes[end - 1] & 0xfc) === 0xd8) end -= 2;
      carry = end === bytes.length ? undefined : Buffer.from(bytes.subarray(end));
      return decode(bytes, end, false);
    },
    end() {
      const bytes = carry ?? Buffer.alloc(0);
      carry = undefined;
      return decode(bytes, bytes.length, true);
    },
    get damaged() {
      return damaged;
    },
    beyondAscii: false,
  };
}

/** Single-byte encodings: every byte is a character. */
function singleByte(decode: (bytes: Buffer) => string): TextDecoding {
  return { write: decode, end: () => '', damaged: false, beyondAscii: false };
}

export function createDecoding(encoding: InputEncoding = 'utf-8'): TextDecoding {
  switch (encoding) {
    case 'utf-8':
      return utf8();
    case 'utf-16le':
      return utf16le();
    case 'latin1':
      // ISO-8859-1: each byte is the code point of the same number (a TextDecoder labelled latin1
      // would read windows-1252, where 0x80 is €)
      return singleByte((bytes) => bytes.toString('latin1'));
    case 'windows-1252': {
      const decoder = new TextDecoder('windows-1252');
      return singleByte((bytes) => decoder.decode(bytes, { stream: true }));
    }
  }
}

export interface Undecodable {
  /** Where the mark starts in the text. */
  index: number;
  /** The byte, or the UTF-16 unit, that was not valid. */
  value: number;
  /** Its offset in the file (after gunzip), from 0. */
  offset: number;
}

/** The mark that starts at `index` of `text`. */
function markAt(text: string, index: number): Undecodable {
  const byte = (k: number): number => text.charCodeAt(index + k) - PAYLOAD;
  let offset = 0;
  for (let k = 3; k < MARK_LENGTH; k += 1) offset = offset * 256 + byte(k);
  return { index, value: (byte(1) << 8) | byte(2), offset };
}

/** The first mark in `text`, or undefined: cheap for text holding none (well-formed text holds none). */
export function undecodableIn(text: string): Undecodable | undefined {
  if ((text as string & { isWellFormed(): boolean }).isWellFormed()) return undefined;
  const index = text.indexOf(String.fromCharCode(MARK));
  if (index === -1 || index + MARK_LENGTH > text.length) return undefined;
  return markAt(text, index);
}

/**
 * The text with each mark as one U+FFFD, and the marks, each `index` its place in that text: for a
 * reader that encodes the text again (UTF-8 has no lone surrogates: a mark would become eight U+FFFD
 * that no check could tell from data), so that it can still say where each byte not valid stood.
 */
export function marksReplaced(text: string): { text: string; marks: Undecodable[] } {
  const marks: Undecodable[] = [];
  let out = '';
  let from = 0;
  for (let index = text.indexOf(String.fromCharCode(MARK)); index !== -1 && index + MARK_LENGTH <= text.length; index = text.indexOf(String.fromCharCode(MARK), from)) {
    out += text.slice(from, index);
    marks.push({ ...markAt(text, index), index: out.length });
    out += '\uFFFD';
    from = index + MARK_LENGTH;
  }
  return { text: out + text.slice(from), marks };
}

/** The text with each mark as U+FFFD: what the rejects file shows in the place of a byte that was not valid. */
export function withoutMarks(text: string): string {
  if ((text as string & { isWellFormed(): boolean }).isWellFormed()) return text;
  const marks = new RegExp(`\\u${MARK.toString(16)}[\\udc00-\\udcff]{0,${MARK_LENGTH - 1}}`, 'g');
  return text.replace(marks, '\uFFFD');
}

/** What is wrong, for a row's error: `byte 0xFF at offset 12 of the file is not valid UTF-8; ...`. */
export function undecodableMessage(found: Undecodable, encoding: InputEncoding = 'utf-8'): string {
  const hex = (n: number, digits: number): string => `0x${n.toString(16).toUpperCase().padStart(digits, '0')}`;
  const what = encoding === 'utf-16le' && found.value > 0xff ? `the unit ${hex(found.value, 4)} (a lone surrogate)` : `byte ${hex(found.value, 2)}`;
  const advice =
    encoding === 'utf-8'
      ? 'save the file as UTF-8, or give its encoding with --encoding latin1, windows-1252 or utf-16le'
      : `fix the file, or give its encoding with --encoding`;
  return `${what} at byte offset ${found.offset} of the file is not valid ${NAMES[encoding]}; ${advice}`;
}

/** What undecodableMessage wrote, read back: the text before it (`email: `), the byte, its offset, and the message without either. */
export interface UndecodableProblem {
  prefix: string;
  value: number;
  offset: number;
  /** The message without the byte and its place: the same for every such row of a file. */
  reason: string;
}

const UNDECODABLE_MESSAGE = /^(.*?)(?:byte 0x([0-9A-F]{2})|the unit 0x([0-9A-F]{4}) \(a lone surrogate\)) at byte offset (\d+) of the file is not valid ([^;]+); (.*)$/s;

/** A problem undecodableMessage wrote (after its field's name), read back; undefined for any other. */
export function readUndecodableProblem(problem: string): UndecodableProblem | undefined {
  // most problems are not: the pattern's open start would try it from every character
  if (!problem.includes(' at byte offset ')) return undefined;
  const found = UNDECODABLE_MESSAGE.exec(problem);
  if (found === null) return undefined;
  const [, prefix, byte, unit, offset, name, advice] = found;
  const what = unit === undefined ? 'bytes' : 'lone surrogates';
  return { prefix, value: parseInt(byte ?? unit, 16), offset: Number(offset), reason: `${prefix}${what} not valid ${name}; ${advice}` };
}
