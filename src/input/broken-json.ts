// What is wrong where a JSON array breaks, in words a person reads: the line and byte, what was
// found and what belongs there, in place of the parser's own terms (`at chunk position "89" ... in
// state TRUE3`). The line is counted over the text the reader was given, a chunk at a time.

/** Counts the lines of a text given a chunk at a time, to tell the line of a byte offset in it (UTF-8). */
export class TextLines {
  private before = { bytes: 0, lines: 0 };
  /** The last two chunks, each with the bytes and line breaks before it: a token may begin in the one before. */
  private chunks: { text: string; bytes: number; lines: number }[] = [];

  add(text: string): void {
    const last = this.chunks.at(-1);
    if (last !== undefined) this.before = { bytes: last.bytes + Buffer.byteLength(last.text), lines: last.lines + breaks(last.text) };
    this.chunks = [...this.chunks.slice(-1), { text, ...this.before }];
  }

  /** The line (from 1) of the byte at `offset`, or undefined when its chunk is no longer kept. */
  lineAt(offset: number): number | undefined {
    for (const chunk of this.chunks) {
      const inside = offset - chunk.bytes;
      if (inside >= 0 && inside <= Buffer.byteLength(chunk.text)) return chunk.lines + breaks(Buffer.from(chunk.text).subarray(0, inside).toString()) + 1;
    }
    return this.chunks.length === 0 ? 1 : undefined;
  }

  /** The line of the text's end. */
  lastLine(): number {
    const last = this.chunks.at(-1);
    return last === undefined ? 1 : last.lines + breaks(last.text) + 1;
  }
}

function breaks(text: string): number {
  let n = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) n += 1;
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
