// About how many rows a run's inputs hold, before they are read: what a --delta run sizes its filter
// of users sent by (seen-users.ts), so that it takes about the memory the users need, not a guess's.
//
// The largest local file of text and the largest gzipped one are each sampled: the lines in their
// first 64 KiB (inflated, for gzip) say how many bytes a row takes, and the inputs' sizes how many
// rows they hold. Where a sample says nothing (a JSON array on one line, Parquet or other bytes that
// are not text, a file that cannot be read), a row is taken to be 40 bytes (8 of a gzipped file):
// more rows than most text files hold, and fewer than a Parquet file may. A guess, never a bound:
// the filter grows past it.
import { statSync } from 'node:fs';
import { constants, gunzipSync } from 'node:zlib';
import { fileStart } from '../file-start.js';
import { isRemote } from '../input/location.js';
import { isGzip } from '../input/signature.js';

/** Bytes of a file's start that are sampled. */
const SAMPLE_BYTES = 64 * 1024;
/** Most bytes a gzipped sample is inflated to (64 times its size: more is not rows of text, but a bomb). */
const INFLATED_BYTES = 4 * 1024 * 1024;
/** Bytes taken for a row when a sample says nothing: generous (more rows than most text files hold). */
const GUESSED_ROW_BYTES = 40;
const GUESSED_GZIP_RATIO = 5;
const NEWLINE = 0x0a;

/**
 * About how many rows the files `inputs` hold, or a share of them (`shares`: the shards they are
 * parted among, --shard); undefined for standard input, or an input that is not a local file (a
 * pipe, an object in storage).
 */
export function rowsIn(inputs: readonly string[], shares = 1): number | undefined {
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
  return Math.ceil((text / textRow + gzipped / gzipRow) / shares);
}

/** Bytes of the file a row takes, by the lines of its start (inflated, for gzip); undefined when the sample says nothing. */
function rowBytes(file: string, size: number): number | undefined {
  const sample = fileStart(file, Math.min(size, SAMPLE_BYTES));
  if (sample === undefined || sample.length === 0) return undefined;
  const whole = sample.length === size;
  if (isGzip(sample)) {
    const text = inflatedStart(sample);
    if (text === undefined) return undefined;
    // a byte of text takes this much of the file
    const packing = sample.length / Math.max(1, text.length);
    const length = lineLength(text, whole);
    return length === undefined ? undefined : length * packing;
  }
  // Parquet, and anything else not text: its bytes are not lines
  if (sample.subarray(0, 4).toString('latin1') === 'PAR1' || sample.includes(0)) return undefined;
  return lineLength(sample, whole);
}

/**
 * The length of a line of a sample: of its whole lines (a line cut at its end is not one), or of all
 * of it when it is the whole file (an unended last line too); undefined when it holds no whole line.
 */
function lineLength(bytes: Buffer, whole: boolean): number | undefined {
  let lines = 0;
  let end = 0;
  for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) {
    lines += 1;
    end = at + 1;
  }
  if (whole) return bytes.length / (end < bytes.length ? lines + 1 : Math.max(1, lines));
  return lines === 0 ? undefined : end / lines;
}

/** What the start of gzip data inflates to (it may be cut anywhere); undefined when it is not gzip that inflates, or more than INFLATED_BYTES. */
function inflatedStart(packed: Buffer): Buffer | undefined {
  try {
    return gunzipSync(packed, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: INFLATED_BYTES });
  } catch {
    return undefined;
  }
}
