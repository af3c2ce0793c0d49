// What is wrong where a JSON array breaks, in words a person reads: the line and byte, what was
// found and what belongs there, in place of the parser's own terms (`at chunk position "89" ... in
// state TRUE3`). The line is counted over the text the reader was given, a chunk at a time; so is
// the line where each element begins.

/**
 * Counts the lines of a text given a chunk of UTF-8 bytes at a time, to tell the line of a byte
 * offset in its last two chunks (a token may begin in the one before): where broken JSON is named,
 * and where each element begins. One count runs forward through the text, each byte counted once;
 * an offset before it is counted back from it.
 */
export class TextLines {
  private chunks: { bytes: Buffer; start: number }[] = [];
  /** Where the count has reached, and the line there. */
  private cursor = { offset: 0, line: 1 };

  add(bytes: Buffer): void {
    const last = this.chunks.at(-1);
    // the count runs past a chunk before it is let go
    if (this.chunks.length === 2) this.lineFrom(this.chunks[1].start);
    this.chunks = [...this.chunks.slice(-1), { bytes, start: last === undefined ? 0 : last.start + last.bytes.length }];
  }

  /** The line (from 1) of the byte at `offset`, or undefined when its chunk is no longer kept. */
  lineAt(offset: number): number | undefined {
    const first = this.chunks[0];
    const last = this.chunks.at(-1);
    if (first === undefined || last === undefined) return 1;
    if (offset < first.start || offset > last.start + last.bytes.length) return undefined;
    const { offset: at, line } = this.cursor;
    return offset >= at ? line + this.breaksBetween(at, offset) : line - this.breaksBetween(offset, at);
  }

  /** The line of the byte at `offset`, which is never before one asked for earlier: the count moves on to it. */
  lineFrom(offset: number): number {
    if (offset > this.cursor.offset) this.cursor = { offset, line: this.cursor.line + this.breaksBetween(this.cursor.offset, offset) };
    return this.cursor.line;
  }

  /** The line of the text's end. */
  lastLine(): number {
    const last = this.chunks.at(-1);
    return last === undefined ? 1 : this.lineAt(last.start + last.bytes.length)!;
  }

  /** The line feeds from `from` to `to`, offsets within the chunks kept. */
  private breaksBetween(from: number, to: number): number {
    let n = 0;
    for (const { bytes, start } of this.chunks) {
      const a = Math.max(from, start);
      const b = Math.min(to, start + bytes.length);
      if (a < b) n += breaks(bytes, a - start, b - start);
    }
    return n;
  }
}

/** The line feeds among `bytes` from `from` to `to` (a loop: a call into Buffer's indexOf for each one cost more than the parsing). */
function breaks(bytes: Buffer, from: number, to: number): number {
  let n = 0;
  for (let at = from; at < to; at += 1) if (bytes[at] === 0x0a) n += 1;
  return n;
}

const WORD = 'in a word that is not true, false or null (text goes in double quotes)';

/** What the tokenizer was reading in a state, by the state's name. */
function tokenizerPlace(state: string): string {
  if (/^(TRUE|FALSE|NULL)\d$/.test(state)) return WORD;
  if (state === 'STRING_AFTER_BACKSLASH') return 'after a backslash in a string, which no escape of JSON begins (\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)';
  if (state.startsWith('STRING_UNICODE_DIGIT')) return 'in a \\u escape of a string, where 4 hexadecimal digits belong';
  if (state.startsWith('STRING')) return 'in a string, where a line break or control character must be written as an escape (\\n, \\t)';
  if (state.startsWith('NUMBER')) return 'in a number';
  return 'where a value belongs, or one of , : [ ] { } (names and text go in double quotes)';
}

/** What the parser expected in a state, by the state's name. */
const PARSER_EXPECTS: Record<string, string> = {
  VALUE: 'where a value belongs (an object, text in double quotes, a number, true, false or null)',
  KEY: 'where a field name in double quotes belongs (or the } that closes the object)',
  COLON: 'where the : after a field name belongs',
  COMMA: 'where a , or the ] or } that closes the array or object belongs',
  ENDED: 'after the ] that closes the array: nothing but spaces may follow it',
};

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const shown = (text: string): string => (text === '\n' ? 'a line break' : text === '\r' ? 'a carriage return' : JSON.stringify(text));

/**
 * The parser's error in words, with the byte it names (`at`: the start of the token the parser got, for
 * its errors; the tokenizer names its own). Undefined for an error in other terms.
 */
export function brokenJson(message: string, at: number): { what: string; byte?: number } | undefined {
  const tokenizer = /^Unexpected "([\s\S])" at chunk position "\d+" \(absolute position "(\d+)"\) in state (\w+)$/.exec(message);
  if (tokenizer !== null) {
    // the tokenizer names a byte: one past ASCII is a part of a character it cannot show
    const found = tokenizer[1].charCodeAt(0) >= 0x80 ? 'a character outside ASCII' : shown(tokenizer[1]);
    return { what: `found ${found} ${tokenizerPlace(tokenizer[3])}`, byte: Number(tokenizer[2]) };
  }
  const parser = /^Unexpected (?:partial )?\w+ \(([\s\S]*)\) in state (\w+)$/.exec(message);
  if (parser !== null && PARSER_EXPECTS[parser[2]] !== undefined) {
    const value = parsed(parser[1]);
    return { what: `found ${typeof value === 'string' && value.length === 1 ? shown(value) : parser[1]} ${PARSER_EXPECTS[parser[2]]}`, byte: at };
  }
  const ended = /^Tokenizer ended in the middle of a token \(state: (\w+)\)/.exec(message);
  if (ended !== null) {
    const state = ended[1];
    const token = state.startsWith('STRING') ? 'a string (its closing " is missing)' : state.startsWith('NUMBER') ? 'a number' : 'a word';
    return { what: `the file ends in the middle of ${token}` };
  }
  return undefined;
}
