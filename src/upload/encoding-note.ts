// Which encoding a file's bytes look like, when many of its rows were rejected for bytes that are not
// valid in the one it was read with: one note naming the encoding and the flag that reads it, rather
// than a reason per byte. Only UTF-8 (the default) is guessed against: the single-byte encodings
// read any byte, and a UTF-16LE file read as anything else stops at its header.
import { createDecoding, readUndecodableProblem, type InputEncoding, type UndecodableProblem } from '../input/decode.js';
import { grouped } from '../mapping/header-notes.js';

/** Rows of a file that hold such bytes, and how often each byte was the first of its row. */
interface FileTally {
  rows: number;
  bytes: Map<number, number>;
  /** The file starts with a UTF-16LE byte order mark (FF FE). */
  utf16: boolean;
}

/** A note is given once this share of a file's rows, or this many, hold bytes that are not valid. */
const SHARE = 0.01;
const MANY = 100;

const hex = (n: number): string => `0x${n.toString(16).toUpperCase().padStart(2, '0')}`;

/** A UTF-16LE byte order mark (FF FE) where the file starts. */
const isUtf16Mark = (found: UndecodableProblem): boolean => found.offset <= 1 && (found.value === 0xff || found.value === 0xfe);

/** The character a byte is in Windows-1252 (as --encoding windows-1252 reads it). */
function windows1252(byte: number): string {
  return createDecoding('windows-1252').write(Buffer.of(byte));
}

/** What the first such byte of a file says of it, for the error of a header that cannot be read. */
export function encodingHint(problem: string, encoding: InputEncoding = 'utf-8'): string | undefined {
  const found = readUndecodableProblem(problem);
  if (found === undefined || encoding !== 'utf-8') return undefined;
  if (isUtf16Mark(found)) {
    return 'the file starts with FF FE, the mark of UTF-16LE (a spreadsheet\'s "Unicode text"): give --encoding utf-16le';
  }
  const char = windows1252(found.value);
  if (found.value < 0x80 || char.charCodeAt(0) < 0xa0) return undefined;
  return `${hex(found.value)} is "${char}" in Windows-1252, as spreadsheets and CRMs on Windows write it: if that is the file's encoding, give --encoding windows-1252`;
}

/** Counts the rows of each file rejected for bytes that are not valid in its encoding, and makes their note. */
export function createEncodingTally(encoding: InputEncoding = 'utf-8') {
  const files = new Map<string, FileTally>();
  return {
    /** A rejected row's reasons: the first names such a byte when it is why the row was rejected. */
    rejected(file: string, errors: readonly string[]): void {
      if (encoding !== 'utf-8' || errors.length === 0) return;
      const found = readUndecodableProblem(errors[0]);
      if (found === undefined) return;
      let tally = files.get(file);
      if (tally === undefined) files.set(file, (tally = { rows: 0, bytes: new Map(), utf16: false }));
      tally.rows += 1;
      tally.bytes.set(found.value, (tally.bytes.get(found.value) ?? 0) + 1);
      if (isUtf16Mark(found)) tally.utf16 = true;
    },
    /** The note for a file of `rows` rows once it has been read, or undefined when few or none of its rows held such bytes. */
    note(file: string, rows: number): string | undefined {
      const tally = files.get(file);
      if (tally === undefined) return undefined;
      files.delete(file);
      const held = `${grouped(tally.rows)} of ${grouped(rows)} ${rows === 1 ? 'row holds' : 'rows hold'} bytes that are not valid UTF-8`;
      if (tally.utf16) return `${held}, and the file starts with FF FE, the mark of UTF-16LE: read it with --encoding utf-16le`;
      if (tally.rows < MANY && tally.rows < rows * SHARE) return undefined;
      const seen = [...tally.bytes].filter(([byte]) => byte >= 0x80 && windows1252(byte).charCodeAt(0) >= 0xa0);
      if (seen.length === 0) return undefined;
      const examples = seen
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([byte]) => `"${windows1252(byte)}" (${hex(byte)})`);
      return (
        `${held}; they look like Windows-1252, as spreadsheets and CRMs on Windows write ${examples.join(', ')}: ` +
        'read the file with --encoding windows-1252 (if some of its text reads right as UTF-8, it mixes encodings: fix those rows instead)'
      );
    },
  };
}
