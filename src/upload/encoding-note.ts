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
  /** The byte order mark the file starts with, when it is UTF-16's. */
  utf16: Utf16Mark | undefined;
}

/** A note is given once this share of a file's rows, or this many, hold bytes that are not valid. */
const SHARE = 0.01;
const MANY = 100;

const hex = (n: number): string => `0x${n.toString(16).toUpperCase().padStart(2, '0')}`;

type Utf16Mark = 'le' | 'be';

/**
 * The UTF-16 byte order mark where the file starts, from its first byte, which is not UTF-8: FF (FF FE)
 * is UTF-16LE's, which --encoding utf-16le reads; FE (FE FF) is UTF-16BE's, which no --encoding reads.
 */
const utf16Mark = (found: UndecodableProblem): Utf16Mark | undefined =>
  found.offset !== 0 ? undefined : found.value === 0xff ? 'le' : found.value === 0xfe ? 'be' : undefined;

/** What the mark says, and what to do. */
const UTF16_ADVICE: Readonly<Record<Utf16Mark, string>> = {
  le: 'the file starts with FF FE, the mark of UTF-16LE (a spreadsheet\'s "Unicode text"): give --encoding utf-16le',
  be: 'the file starts with FE FF, the mark of UTF-16BE, which no --encoding reads: save the file as UTF-8 (or UTF-16LE, a spreadsheet\'s "Unicode text")',
};

/** The character a byte is in Windows-1252 (as --encoding windows-1252 reads it). */
function windows1252(byte: number): string {
  return createDecoding('windows-1252').write(Buffer.of(byte));
}

/** What the first such byte of a file says of it, for the error of a header that cannot be read. */
export function encodingHint(problem: string, encoding: InputEncoding = 'utf-8'): string | undefined {
  const found = readUndecodableProblem(problem);
  if (found === undefined || encoding !== 'utf-8') return undefined;
  const mark = utf16Mark(found);
  if (mark !== undefined) return UTF16_ADVICE[mark];
  const char = windows1252(found.value);
  if (found.value < 0x80 || char.charCodeAt(0) < 0xa0) return undefined;
  return `${hex(found.value)} is "${char}" in Windows-1252, as spreadsheets and CRMs on Windows write it: if that is the file's encoding, give --encoding windows-1252`;
}

/** Counts the rows of each file rejected for bytes that are not valid in its encoding, and makes their note. */
export function createEncodingTally(encoding: InputEncoding = 'utf-8') {
  const files = new Map<string, FileTally>();
  /** Files some of whose text beyond ASCII was valid UTF-8: they are UTF-8, and their other bytes are the odd ones. */
  const utf8Files = new Set<string>();
  return {
    /** Told once a file's bytes are all read: whether some of its text beyond ASCII was valid UTF-8. */
    textRead(file: string, beyondAscii: boolean): void {
      if (beyondAscii) utf8Files.add(file);
    },
    /** A rejected row's reasons: the first names such a byte when it is why the row was rejected. */
    rejected(file: string, errors: readonly string[]): void {
      if (encoding !== 'utf-8' || errors.length === 0) return;
      const found = readUndecodableProblem(errors[0]);
      if (found === undefined) return;
      let tally = files.get(file);
      if (tally === undefined) files.set(file, (tally = { rows: 0, bytes: new Map(), utf16: undefined }));
      tally.rows += 1;
      tally.bytes.set(found.value, (tally.bytes.get(found.value) ?? 0) + 1);
      tally.utf16 ??= utf16Mark(found);
    },
    /** The note for a file of `rows` rows once it has been read, or undefined when few or none of its rows held such bytes. */
    note(file: string, rows: number): string | undefined {
      const tally = files.get(file);
      const utf8 = utf8Files.delete(file);
      if (tally === undefined) return undefined;
      files.delete(file);
      const held = `${grouped(tally.rows)} of ${grouped(rows)} ${rows === 1 ? 'row holds' : 'rows hold'} bytes that are not valid UTF-8`;
      if (tally.utf16 === 'le') return `${held}, and the file starts with FF FE, the mark of UTF-16LE: read it with --encoding utf-16le`;
      if (tally.utf16 === 'be') return `${held}, and the file starts with FE FF, the mark of UTF-16BE, which no --encoding reads: save it as UTF-8`;
      if (tally.rows < MANY && tally.rows < rows * SHARE) return undefined;
      // in a file of UTF-8 text, one such row is a stray byte
      if (utf8 && tally.rows === 1) return undefined;
      const seen = [...tally.bytes].filter(([byte]) => byte >= 0x80 && windows1252(byte).charCodeAt(0) >= 0xa0);
      if (seen.length === 0) return undefined;
      const examples = seen
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([byte]) => `"${windows1252(byte)}" (${hex(byte)})`);
      if (utf8) {
        // --encoding windows-1252 would read the file's UTF-8 text as other characters ("é" as "Ã©")
        return (
          `${held}, though the rest of its text is UTF-8: those rows were written in another encoding (their bytes look like ` +
          `Windows-1252: ${examples.join(', ')}); fix them in the file, as --encoding windows-1252 would misread the rest`
        );
      }
      return `${held}; they look like Windows-1252, as spreadsheets and CRMs on Windows write ${examples.join(', ')}: read the file with --encoding windows-1252`;
    },
  };
}
