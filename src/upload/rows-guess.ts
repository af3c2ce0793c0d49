// About how many rows a run's inputs hold, before they are read: what a --delta run sizes its filter
// of users sent by (seen-users.ts), so that it takes about the memory the users need, not a guess's.
//
// The largest local file of text and the largest gzipped one are each sampled: the lines in their
// first 64 KiB (inflated, for gzip) say how many bytes a row takes, and the inputs' sizes how many
// rows they hold. Where a sample says little (a JSON array on one line, rows of kilobytes, Parquet,
// a file that cannot be read), a row is taken to be 40 bytes (8 of a gzipped file): more rows than
// most files hold. A guess, never a bound: the filter grows past it.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { constants, gunzipSync } from 'node:zlib';
import { isRemote } from '../input/location.js';

/** Bytes of a file's start that are sampled. */
const SAMPLE_BYTES = 64 * 1024;
/** Most bytes a gzipped sample is inflated to (64 times its size: more is not rows of text, but a bomb). */
const INFLATED_BYTES = 4 * 1024 * 1024;
/** Lines a sample needs to say how long a row is (fewer: the rows are long, or not lines at all). */
const FEWEST_LINES = 16;
/** Bytes taken for a row when a sample says nothing: generous (more rows than most files hold). */
const GUESSED_ROW_BYTES = 40;
const GUESSED_GZIP_RATIO = 5;
const NEWLINE = 0x0a;

/** About how many rows the files `inputs` hold; undefined for standard input, or an input that is not a local file (a pipe, an object in storage). */
export function rowsIn(inputs: readonly string[]): number | undefined {
  let text = 0;
  let gzipped = 0;
  let largestText: { file: string; size: number } | undefined;
  let largestGzip: { file: string; size: number } | undefined;
  for (const file of inputs) {
    if (file === '-' || isRemote(file)) return undefined;
    let size: number;
    try {
      const info = statSync(file);
      // a pipe (`<(zcat x.gz)`) or a device is not opened here: a read would take what the run reads
      if (!info.isFile()) return undefined;
      size = info.size;
    } catch {
      return undefined;
    }
    if (/\.gz$/i.test(file)) {
      gzipped += size;
      if (size > (largestGzip?.size ?? -1)) largestGzip = { file, size };
    } else {
      text += size;
      if (size > (largestText?.size ?? -1)) largestText = { file, size };
    }
  }
  const textRow = largestText === undefined ? GUESSED_ROW_BYTES : rowBytes(largestText.file, largestText.size) ?? GUESSED_ROW_BYTES;
  const gzipRow = largestGzip === undefined ? GUESSED_ROW_BYTES / GUESSED_GZIP_RATIO : rowBytes(largestGzip.file, largestGzip.size) ?? GUESSED_ROW_BYTES / GUESSED_GZIP_RATIO;
  return Math.ceil(text / textRow + gzipped / gzipRow);
}

/** Bytes of the file a row takes, by the lines of its start (inflated, for gzip); undefined when the sample says nothing. */
function rowBytes(file: string, size: number): number | undefined {
  const sample = readStart(file, Math.min(size, SAMPLE_BYTES));
  if (sample === undefined || sample.length === 0) return undefined;
  const whole = sample.length === size;
  if (sample[0] === 0x1f && sample[1] === 0x8b) {
    const text = inflatedStart(sample);
    if (text === undefined) return undefined;
    const lines = linesIn(text, whole);
    return lines < FEWEST_LINES && !whole ? undefined : sample.length / Math.max(1, lines);
  }
  // Parquet, and anything else not text: its bytes are not lines
  if (sample.subarray(0, 4).toString('latin1') === 'PAR1' || sample.includes(0)) return undefined;
  const lines = linesIn(sample, whole);
  return lines < FEWEST_LINES && !whole ? undefined : sample.length / Math.max(1, lines);
}

/** The lines of a sample: its newlines, and an unended last line when the sample is the whole file. */
function linesIn(bytes: Buffer, whole: boolean): number {
  let lines = 0;
  for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) lines += 1;
  if (whole && bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE) lines += 1;
  return lines;
}

function readStart(file: string, bytes: number): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const buffer = Buffer.alloc(bytes);
    return buffer.subarray(0, readSync(fd, buffer, 0, bytes, 0));
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** What the start of gzip data inflates to (it may be cut anywhere); undefined when it is not gzip that inflates, or more than INFLATED_BYTES. */
function inflatedStart(packed: Buffer): Buffer | undefined {
  try {
    return gunzipSync(packed, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: INFLATED_BYTES });
  } catch {
    return undefined;
  }
}
