// The index entries of the users a run adds to the state (state-file-writer.ts), kept as they come:
// parted by the first 11 bits of their key's hash, each part in chunks that never move. A user is
// found by a search of their part alone (about 1/2048 of the entries), with no index made mid-run
// while such searches are few (the writer then makes one: state-file-writer.ts #searching); at the
// run's end the index is laid out part by part in key order (UserIndex.lay), each part sorted on its
// own, where a sort of the whole would hold a second copy of every entry.
// Given a folder to spill to, it keeps only its last slabs in memory (SPILL_AFTER): the earlier ones
// are written to a file of its own there (spill-file.ts), removed from the folder as soon as it is
// opened (the system frees its space once it is closed, by discard(), the end of the entries, or the
// end of the process, a kill included), and their chunks read back when searched or laid out. A run
// that adds 10 million users holds 4 MiB of them, not 160.
import { SpillFile } from './spill-file.js';

/** Parts: by the key's first PART_BITS bits. */
export const PART_BITS = 11;
export const PARTS = 2 ** PART_BITS;
/** Words an entry takes: its key, its row, the high and low halves of its digest. */
export const WORDS = 4;
/** Entries of a chunk: a part holds its entries in chunks of its own (at most one of them not full). */
const CHUNK = 64;
const CHUNK_WORDS = CHUNK * WORDS;
/** Chunks of a slab of memory they are carved from (1 MiB): no object of its own for each. */
const SLAB_CHUNKS = 1024;
const SLAB_WORDS = SLAB_CHUNKS * CHUNK_WORDS;
/**
 * Slabs kept in memory when the entries may spill (the last ones: a part's chunk being filled is
 * mostly among them, begun within the last 2 MiB of entries on average, and past 4 MiB hardly ever:
 * 128 entries of a part come in 4 MiB on average, and fewer than 64 about never): a run adding 4
 * million users wrote none through to the file with 8, and one adding 10 million took no longer
 * than with 32; 4 keep 4 MB less at the peak.
 */
const SPILL_AFTER = 4;
const TWO_32 = 2 ** 32;

export class PartedEntries {
  /** The slabs of chunks ([key, row, digest high, digest low] per entry); undefined: written to the spill file, at its number times 1 MiB. */
  #slabs: Array<Uint32Array | undefined> = [];
  /** The folder the slabs spill to, the slabs kept in memory, and the file once opened. */
  readonly #spillTo: string | undefined;
  readonly #keep: number;
  #file: SpillFile | undefined;
  /** A spilled chunk read back (what #chunkWords gives for one). */
  readonly #read = new Uint32Array(CHUNK_WORDS);
  #chunkCount = 0;
  /** Per part, its chunks (by number: slab chunk / SLAB_CHUNKS, place chunk % SLAB_CHUNKS), the last one filled to its size modulo CHUNK. */
  #chunks: number[][] = Array.from({ length: PARTS }, () => []);
  #sizes = new Uint32Array(PARTS);
  #count = 0;
  /** What sorted() gives: the words of parts' entries (grown as needed), and the scratch its sort moves them through. */
  #out = new Uint32Array(64 * WORDS);
  #through = new Uint32Array(64 * WORDS);

  /** `spillTo`: a folder the earlier slabs are written to past the last `keep` (none: all are kept in memory). */
  constructor(spillTo?: string, keep = SPILL_AFTER) {
    this.#spillTo = spillTo;
    this.#keep = Math.max(1, keep);
  }

  get count(): number {
    return this.#count;
  }

  /** Entries whose key's first 11 bits are `part`. */
  sizeOf(part: number): number {
    return this.#sizes[part];
  }

  push(anyKey: number, row: number, digest: number): void {
    if (row < 1 || row >= TWO_32) throw new Error(`a state row id out of range: ${row}`);
    const key = anyKey >>> 0;
    const part = key >>> (32 - PART_BITS);
    const size = this.#sizes[part];
    const chunks = this.#chunks[part];
    if (size % CHUNK === 0) {
      if (this.#chunkCount % SLAB_CHUNKS === 0) this.#newSlab();
      chunks.push(this.#chunkCount++);
    }
    const chunk = chunks[chunks.length - 1];
    const slab = Math.floor(chunk / SLAB_CHUNKS);
    const at = ((chunk % SLAB_CHUNKS) * CHUNK + (size % CHUNK)) * WORDS;
    const words = this.#slabs[slab] ?? this.#read;
    const to = words === this.#read ? 0 : at;
    words[to] = key;
    words[to + 1] = row;
    words[to + 2] = Math.floor(digest / TWO_32);
    words[to + 3] = digest >>> 0;
    // (a part's chunk being filled in a slab written out already: rare, SPILL_AFTER slabs after it was begun)
    if (words === this.#read) this.#writeOut(slab, at, words.subarray(0, WORDS));
    this.#sizes[part] = size + 1;
    this.#count += 1;
  }

  /** A slab for the next chunks: in memory, where the earliest one held there is written out first when they are `keep` already (its memory taken for the new one). */
  #newSlab(): void {
    const next = this.#slabs.length;
    if (this.#spillTo === undefined || next < this.#keep) {
      this.#slabs.push(new Uint32Array(SLAB_WORDS));
      return;
    }
    const out = next - this.#keep;
    const words = this.#slabs[out]!;
    this.#writeOut(out, 0, words);
    this.#slabs[out] = undefined;
    this.#slabs.push(words);
  }

  /** Writes words at a place of a slab in the spill file (opened, and removed from its folder, at the first). */
  #writeOut(slab: number, at: number, words: Uint32Array): void {
    this.#file ??= new SpillFile(this.#spillTo!, 'entries');
    this.#file.write(new Uint8Array(words.buffer, words.byteOffset, words.byteLength), (slab * SLAB_WORDS + at) * 4);
  }

  /**
   * Calls fn with the row and digest of each entry under `key` (32 bits, signed or not), in the order
   * they were pushed, until fn returns true; the entries it looked at (those of the key's part, at most).
   */
  find(anyKey: number, fn: (row: number, digest: number) => boolean): number {
    return this.#search(anyKey >>> 0, 0, (words, at) => fn(words[at + 1], words[at + 2] * TWO_32 + words[at + 3]));
  }

  /** Sets the digest of row `row` under `key`, pushing it when not held; the entries it looked at. */
  set(anyKey: number, row: number, digest: number): number {
    const key = anyKey >>> 0;
    let held = false;
    const looked = this.#search(key, row, (words, at, part, c) => {
      words[at + 2] = Math.floor(digest / TWO_32);
      words[at + 3] = digest >>> 0;
      // an entry of a chunk read back from the spill file is written there again
      if (words.buffer === this.#read.buffer) {
        const chunk = this.#chunks[part][c];
        this.#writeOut(Math.floor(chunk / SLAB_CHUNKS), (chunk % SLAB_CHUNKS) * CHUNK_WORDS + at, words.subarray(at, at + WORDS));
      }
      return (held = true);
    });
    if (!held) this.push(key, row, digest);
    return looked;
  }

  /**
   * Calls fn with where each entry under `key` (and of row `row`, unless 0) is, in push order, until
   * it returns true; the entries it looked at (those of the key's part, at most). A search of the
   * key's part: a few nanoseconds an entry (more for chunks read back from the spill file).
   */
  #search(key: number, row: number, fn: (words: Uint32Array, at: number, part: number, c: number) => boolean): number {
    const part = key >>> (32 - PART_BITS);
    for (let c = 0; c < this.#chunks[part].length; c += 1) {
      const words = this.#chunkWords(part, c);
      for (let at = 0; at < words.length; at += WORDS) {
        if (words[at] === key && (row === 0 || words[at + 1] === row) && fn(words, at, part, c)) return c * CHUNK + at / WORDS + 1;
      }
    }
    return this.#sizes[part];
  }

  /** The words of the entries the c-th chunk of a part holds: a view of its slab, or of #read for a chunk read back from the spill file (valid until the next). */
  #chunkWords(part: number, c: number): Uint32Array {
    const chunk = this.#chunks[part][c];
    const first = (chunk % SLAB_CHUNKS) * CHUNK_WORDS;
    const n = Math.min(CHUNK, this.#sizes[part] - c * CHUNK) * WORDS;
    const slab = Math.floor(chunk / SLAB_CHUNKS);
    const words = this.#slabs[slab];
    if (words !== undefined) return words.subarray(first, first + n);
    this.#file!.read(new Uint8Array(this.#read.buffer, 0, n * 4), (slab * SLAB_WORDS + first) * 4);
    return this.#read.subarray(0, n);
  }

  /** Calls fn with each entry, part by part. */
  forEach(fn: (key: number, row: number, digest: number) => void): void {
    for (let part = 0; part < PARTS; part += 1) {
      for (let c = 0; c < this.#chunks[part].length; c += 1) {
        const words = this.#chunkWords(part, c);
        for (let at = 0; at < words.length; at += WORDS) fn(words[at], words[at + 1], words[at + 2] * TWO_32 + words[at + 3]);
      }
    }
  }

  /**
   * The entries of parts `first` to `end` (excluded) in the order of their keys, the order they were
   * pushed kept among equal ones, as WORDS words each (a view valid until the next call); the parts
   * are let go of (their memory once every part is: see #release). Several parts only when they hold
   * few entries (up to 64), as an index's bucket that spans them does.
   */
  sorted(first: number, end: number): Uint32Array {
    let n = 0;
    for (let part = first; part < end; part += 1) n += this.#sizes[part];
    if (end - first > 1 && n > 64) throw new Error(`entries of ${end - first} parts sorted at once: ${n}`);
    if (this.#out.length < n * WORDS) {
      this.#out = new Uint32Array(n * WORDS * 2);
      this.#through = new Uint32Array(n * WORDS * 2);
    }
    const out = this.#out;
    let to = 0;
    for (let part = first; part < end; part += 1) {
      for (let c = 0; c < this.#chunks[part].length; c += 1) {
        const words = this.#chunkWords(part, c);
        out.set(words, to);
        to += words.length;
      }
      this.#count -= this.#sizes[part];
      this.#chunks[part] = [];
      this.#sizes[part] = 0;
    }
    if (this.#count === 0) this.#release();
    if (end - first > 1) insertionSort(out, n);
    else if (n > 1) {
      // one part: its keys share their first 11 bits, and are sorted by the other 21
      radixPass(out, this.#through, n, 0);
      radixPass(this.#through, out, n, 11);
    }
    return out.subarray(0, n * WORDS);
  }

  /** Lets go of the slabs and the spill file, once no part holds an entry. */
  #release(): void {
    this.#slabs = [];
    this.#chunkCount = 0;
    this.#file?.close();
    this.#file = undefined;
  }

  /** Lets go of every entry, and of the spill file (a run that ends before it lays them out). */
  discard(): void {
    this.#chunks = Array.from({ length: PARTS }, () => []);
    this.#sizes.fill(0);
    this.#count = 0;
    this.#release();
  }
}

/** Moves `n` entries from `from` to `to` in the order of 11 bits of their keys from `shift` (the order they were in kept among equal ones). */
function radixPass(from: Uint32Array, to: Uint32Array, n: number, shift: number): void {
  const counts = new Uint32Array(2049);
  for (let i = 0; i < n * WORDS; i += WORDS) counts[((from[i] >>> shift) & 0x7ff) + 1] += 1;
  for (let d = 1; d <= 2048; d += 1) counts[d] += counts[d - 1];
  for (let i = 0; i < n * WORDS; i += WORDS) {
    const at = counts[(from[i] >>> shift) & 0x7ff]++ * WORDS;
    to[at] = from[i];
    to[at + 1] = from[i + 1];
    to[at + 2] = from[i + 2];
    to[at + 3] = from[i + 3];
  }
}

/** Sorts `n` entries by key, in place, the order they were in kept among equal ones (a few entries). */
function insertionSort(words: Uint32Array, n: number): void {
  const entry = new Uint32Array(WORDS);
  for (let i = 1; i < n; i += 1) {
    entry.set(words.subarray(i * WORDS, i * WORDS + WORDS));
    let j = i - 1;
    while (j >= 0 && words[j * WORDS] > entry[0]) j -= 1;
    words.copyWithin((j + 2) * WORDS, (j + 1) * WORDS, i * WORDS);
    words.set(entry, (j + 1) * WORDS);
  }
}
