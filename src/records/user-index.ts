// (Over 350 lines: the index, its persisted form, and its laying out at once from entries belong together.)
// A target's users in memory, by a 32-bit hash of their key: for each, the slot of their row in the
// state file (its pack and its place there: state-rows.ts) and the digest of the attributes it holds (keyed by the user: state-record.ts
// keyHashInto). A plan tells an unchanged row by one look here, whatever the order of the file's
// ids, instead of a search of the file (microseconds each, in no order the disk can help).
// Two users may share a key hash: a row found here is that user's only once its key is read from the
// file, and a digest matches only the user it was made for (1 in 2^52 for another).
//
// Extendible hashing: a directory, by the key's first bits, of buckets of 32 places (a key's place in
// its bucket by its last bits, the next free one after it when taken); a bucket 7/8 full splits in
// two by one more bit. Buckets are carved from slabs of 1 MiB and never move, so the index grows by a
// slab at a time and never holds two copies of itself while it grows (a table that is copied into a
// bigger one leaves the old one for the collector, which may take its time).
import { PART_BITS, PARTS, type PartedEntries, WORDS } from './parted-entries.js';

/** Places in a bucket: their keys first (two cache lines to search), then their rows (0: free), then their digests' halves. */
export const ENTRIES = 32;
/** Entries past which a bucket splits (its places then stay short to search). */
const FULL = 30;
export const BUCKET = ENTRIES * 4;
export const ROWS = ENTRIES;
export const HIGH = ENTRIES * 2;
export const LOW = ENTRIES * 3;
/** Buckets of a slab (a part of the persisted index). */
const SLAB = 2048;
/** A bucket's entries while it splits (one split at a time). */
const SPLITTING = new Uint32Array(BUCKET);
const TWO_32 = 2 ** 32;

/** The index as it is persisted: its shape and its buckets. */
export interface PersistedIndex {
  /** [bits of the directory, buckets, users]. */
  shape: Uint32Array;
  directory: Uint32Array;
  /** Per bucket: the bits its keys share, and how many entries it holds. */
  depths: Uint8Array;
  counts: Uint8Array;
  /** The buckets, a slab (up to SLAB buckets) each. */
  slabs: Uint32Array[];
}

export class UserIndex {
  #bits = 0;
  #directory: Uint32Array = new Uint32Array(1);
  #slabs: Uint32Array[] = [];
  #depths: Uint8Array[] = [];
  #counts: Uint8Array[] = [];
  #buckets = 0;
  #size = 0;

  /** An empty index, or one as persist() gave it. */
  constructor(persisted?: PersistedIndex) {
    if (persisted === undefined) {
      this.#newBucket(0);
      return;
    }
    [this.#bits, this.#buckets, this.#size] = persisted.shape;
    this.#directory = persisted.directory;
    this.#slabs = persisted.slabs.map((slab) => (slab.length === SLAB * BUCKET ? slab : grown(slab, SLAB * BUCKET)));
    for (let i = 0; i < this.#slabs.length; i += 1) {
      this.#depths.push(grown(persisted.depths.subarray(i * SLAB, (i + 1) * SLAB), SLAB));
      this.#counts.push(grown(persisted.counts.subarray(i * SLAB, (i + 1) * SLAB), SLAB));
    }
  }

  get size(): number {
    return this.#size;
  }

  #newBucket(depth: number): number {
    const bucket = this.#buckets++;
    if (bucket % SLAB === 0) {
      this.#slabs.push(new Uint32Array(SLAB * BUCKET));
      this.#depths.push(new Uint8Array(SLAB));
      this.#counts.push(new Uint8Array(SLAB));
    }
    this.#depths[Math.floor(bucket / SLAB)][bucket % SLAB] = depth;
    return bucket;
  }

  /** The bucket of a key (unsigned): its slab, where it starts there, and how many entries it holds. */
  #bucketOf(key: number): number {
    return this.#directory[this.#bits === 0 ? 0 : key >>> (32 - this.#bits)];
  }

  /** Calls fn with the row id and digest of each entry under `key` (32 bits, signed or not), until fn returns true. */
  find(anyKey: number, fn: (row: number, digest: number) => boolean): void {
    const key = anyKey >>> 0;
    const bucket = this.#bucketOf(key);
    const slab = this.#slabs[Math.floor(bucket / SLAB)];
    const at = (bucket % SLAB) * BUCKET;
    for (let n = 0, i = key & (ENTRIES - 1); n < ENTRIES && slab[at + ROWS + i] !== 0; n += 1, i = (i + 1) & (ENTRIES - 1)) {
      if (slab[at + i] === key && fn(slab[at + ROWS + i], slab[at + HIGH + i] * TWO_32 + slab[at + LOW + i])) return;
    }
  }

  /** Whether an entry under `key` has this digest (with no digest: whether there is any entry under `key`). */
  has(anyKey: number, digest?: number): boolean {
    const key = anyKey >>> 0;
    const bucket = this.#bucketOf(key);
    const slab = this.#slabs[Math.floor(bucket / SLAB)];
    const at = (bucket % SLAB) * BUCKET;
    for (let n = 0, i = key & (ENTRIES - 1); n < ENTRIES && slab[at + ROWS + i] !== 0; n += 1, i = (i + 1) & (ENTRIES - 1)) {
      if (slab[at + i] === key && (digest === undefined || slab[at + HIGH + i] * TWO_32 + slab[at + LOW + i] === digest)) return true;
    }
    return false;
  }

  /** (A UserLookup: it holds nothing outside memory.) */
  close(): void {}

  /** Sets the digest of row `row` under `key`, adding it when the index does not hold it. */
  set(anyKey: number, row: number, digest: number): void {
    this.#put(anyKey >>> 0, row, digest, true);
  }

  /** Adds a row the index does not hold (a row just added to the file): no search for it first. */
  add(anyKey: number, row: number, digest: number): void {
    this.#put(anyKey >>> 0, row, digest, false);
  }

  #put(key: number, row: number, digest: number, search: boolean): void {
    if (row < 1 || row >= TWO_32) throw new Error(`a state row id out of range: ${row}`);
    for (;;) {
      const bucket = this.#bucketOf(key);
      const slab = this.#slabs[Math.floor(bucket / SLAB)];
      const counts = this.#counts[Math.floor(bucket / SLAB)];
      const at = (bucket % SLAB) * BUCKET;
      let i = key & (ENTRIES - 1);
      // the row's place when it is there, or the first free one
      while (slab[at + ROWS + i] !== 0 && !(search && slab[at + i] === key && slab[at + ROWS + i] === row)) i = (i + 1) & (ENTRIES - 1);
      if (slab[at + ROWS + i] === 0) {
        if (counts[bucket % SLAB] >= FULL) {
          this.#split(bucket, key);
          continue;
        }
        counts[bucket % SLAB] += 1;
        this.#size += 1;
      }
      slab[at + i] = key;
      slab[at + ROWS + i] = row;
      slab[at + HIGH + i] = Math.floor(digest / TWO_32);
      slab[at + LOW + i] = digest >>> 0;
      return;
    }
  }

  /** Splits a full bucket in two by one more bit of its keys (`key`: one that leads to it), doubling the directory when it must. */
  #split(bucket: number, key: number): void {
    const depths = this.#depths[Math.floor(bucket / SLAB)];
    const depth = depths[bucket % SLAB];
    if (depth === 32) throw new Error('the state index holds more than 30 users of one key hash');
    if (depth === this.#bits) {
      const directory = new Uint32Array(this.#directory.length * 2);
      for (let i = 0; i < directory.length; i += 1) directory[i] = this.#directory[i >> 1];
      this.#directory = directory;
      this.#bits += 1;
    }
    depths[bucket % SLAB] = depth + 1;
    const other = this.#newBucket(depth + 1);
    // the directory's upper half of this bucket's range goes to the other bucket; the entries are placed again
    const span = 2 ** (this.#bits - depth);
    const first = (key >>> (32 - this.#bits)) & ~(span - 1);
    for (let i = first + span / 2; i < first + span; i += 1) this.#directory[i] = other;
    const slab = this.#slabs[Math.floor(bucket / SLAB)];
    const at = (bucket % SLAB) * BUCKET;
    const entries = SPLITTING;
    entries.set(slab.subarray(at, at + BUCKET));
    slab.fill(0, at, at + BUCKET);
    this.#size -= this.#counts[Math.floor(bucket / SLAB)][bucket % SLAB];
    this.#counts[Math.floor(bucket / SLAB)][bucket % SLAB] = 0;
    for (let i = 0; i < ENTRIES; i += 1) {
      if (entries[ROWS + i] !== 0) this.#put(entries[i], entries[ROWS + i], entries[HIGH + i] * TWO_32 + entries[LOW + i], false);
    }
  }

  /** The index of these entries, made at once (see lay); the entries hold none after. */
  static of(entries: PartedEntries): UserIndex {
    const slabs: Uint32Array[] = [];
    const laid = UserIndex.lay(entries, (_, words) => slabs.push(words));
    return new UserIndex({ ...laid, slabs });
  }

  /**
   * Lays out the index of these entries, slab by slab (`done` takes each in turn, the last cut to the
   * buckets in use, as persist() gives them), and gives the rest of its persisted form; the
   * entries hold none after. Of entries of one key and one row, the last pushed is the one laid out
   * (a digest set again). Each bucket holds what it would had the entries been added one by one
   * (up to FULL), but it is filled once, in key order, with no search and no split (an add in no order
   * reaches the memory of its bucket and its directory in no order either). The entries are sorted a
   * part at a time (PartedEntries), never all at once. `reuse`: each slab is laid in the words of the
   * one before (done is through with them), so only one is held.
   */
  static lay(entries: PartedEntries, done: (index: number, words: Uint32Array) => void, reuse = false): Omit<PersistedIndex, 'slabs'> {
    let size = 0;
    const ends = new Uint32Array(PARTS + 1);
    for (let part = 0; part < PARTS; part += 1) ends[part + 1] = ends[part] + entries.sizeOf(part);
    const depths: number[] = [];
    const prefixes: number[] = [];
    const counts: number[] = [];
    let slab = new Uint32Array(SLAB * BUCKET);
    let inSlab = 0;
    let bits = 0;
    /** A bucket of the entries from `first` to `end` of `words` (sorted), of keys sharing `prefix`, their first `depth` bits. */
    const bucket = (words: Uint32Array, first: number, end: number, depth: number, prefix: number): void => {
      const at = inSlab * BUCKET;
      for (let e = first * WORDS; e < end * WORDS; e += WORDS) {
        const key = words[e];
        let i = key & (ENTRIES - 1);
        for (let n = 0; slab[at + ROWS + i] !== 0; n += 1) {
          // (a slab laid in words not cleared)
          if (n === ENTRIES) throw new Error('a bucket of the index being laid out holds no free place');
          i = (i + 1) & (ENTRIES - 1);
        }
        slab[at + i] = key;
        slab[at + ROWS + i] = words[e + 1];
        slab[at + HIGH + i] = words[e + 2];
        slab[at + LOW + i] = words[e + 3];
      }
      depths.push(depth);
      prefixes.push(prefix);
      counts.push(end - first);
      bits = Math.max(bits, depth);
      if (++inSlab < SLAB) return;
      done(depths.length / SLAB - 1, slab);
      if (reuse) slab.fill(0);
      else slab = new Uint32Array(SLAB * BUCKET);
      inSlab = 0;
    };
    /** The buckets of one part's entries (sorted) whose keys share `prefix`, their first `depth` bits: split by one more bit while they are more than a bucket takes. */
    const split = (words: Uint32Array, first: number, end: number, depth: number, prefix: number): void => {
      if (end - first <= FULL) return bucket(words, first, end, depth, prefix);
      if (depth === 32) throw new Error('the state index holds more than 30 users of one key hash');
      // the entries whose next bit is 1 follow those whose next bit is 0
      const bit = 2 ** (31 - depth);
      let low = first;
      let high = end;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if ((words[middle * WORDS] & bit) === 0) low = middle + 1;
        else high = middle;
      }
      split(words, first, low, depth + 1, prefix * 2);
      split(words, low, end, depth + 1, prefix * 2 + 1);
    };
    // down to a part, by how many entries each part holds; within one, by its entries sorted
    const ranges: number[] = [0, 0];
    while (ranges.length > 0) {
      const prefix = ranges.pop()!;
      const depth = ranges.pop()!;
      const [first, end] = [prefix * 2 ** (PART_BITS - depth), (prefix + 1) * 2 ** (PART_BITS - depth)];
      const n = ends[end] - ends[first];
      if (n <= FULL || depth === PART_BITS) {
        const words = entries.sorted(first, end);
        const kept = latestOfEach(words, n);
        size += kept;
        split(words, 0, kept, depth, prefix);
      } else ranges.push(depth + 1, prefix * 2 + 1, depth + 1, prefix * 2);
    }
    if (inSlab > 0) done(Math.floor(depths.length / SLAB), slab.subarray(0, inSlab * BUCKET));
    const directory = new Uint32Array(2 ** bits);
    for (let b = 0; b < depths.length; b += 1) {
      const span = 2 ** (bits - depths[b]);
      directory.fill(b, prefixes[b] * span, (prefixes[b] + 1) * span);
    }
    return { shape: Uint32Array.of(bits, depths.length, size), directory, depths: Uint8Array.from(depths), counts: Uint8Array.from(counts) };
  }

  /**
   * Whether a row is held twice (two entries of one key and one row): an index an earlier track saved
   * at the end of a run that added users to a target that had some held each of them twice, and a
   * later change of one of them set only one entry, the other keeping the user's earlier digest.
   */
  holdsARowTwice(): boolean {
    for (let s = 0; s < this.#slabs.length; s += 1) {
      const slab = this.#slabs[s];
      for (let bucket = 0; bucket < SLAB && s * SLAB + bucket < this.#buckets; bucket += 1) {
        if (bucketHoldsARowTwice(slab, bucket * BUCKET)) return true;
      }
    }
    return false;
  }

  /** Calls fn with each entry of a slab of a persisted index, bucket by bucket; false (and no more calls) at a bucket holding a row twice. */
  static forEachIn(slab: Uint32Array, fn: (key: number, row: number, digest: number) => void): boolean {
    for (let at = 0; at < slab.length; at += BUCKET) {
      if (bucketHoldsARowTwice(slab, at)) return false;
      for (let i = 0; i < ENTRIES; i += 1) if (slab[at + ROWS + i] !== 0) fn(slab[at + i], slab[at + ROWS + i], slab[at + HIGH + i] * TWO_32 + slab[at + LOW + i]);
    }
    return true;
  }

  /** Calls fn with every entry. */
  forEach(fn: (key: number, row: number, digest: number) => void): void {
    this.#slabs.forEach((slab, s) => {
      for (let bucket = 0; bucket < SLAB && s * SLAB + bucket < this.#buckets; bucket += 1) {
        const at = bucket * BUCKET;
        for (let i = 0; i < ENTRIES; i += 1) if (slab[at + ROWS + i] !== 0) fn(slab[at + i], slab[at + ROWS + i], slab[at + HIGH + i] * TWO_32 + slab[at + LOW + i]);
      }
    });
  }

  /**
   * Sets the digests of rows the persisted index holds, a slab at a time (`slab(i)` reads the i-th,
   * `write` puts it back), without reading the whole index; false when one of the rows is not there,
   * or is there twice (see holdsARowTwice), or `slab(i)` gives none.
   * A row set twice takes the digest it was set to last.
   */
  static patch(shape: Uint32Array, directory: Uint32Array, changes: IndexEntries, slab: (index: number) => Uint32Array | undefined, write: (index: number, slab: Uint32Array) => void): boolean {
    const bits = shape[0];
    const slabs = Math.ceil(shape[1] / SLAB);
    const bucketOf = (key: number): number => directory[bits === 0 ? 0 : key >>> (32 - bits)];
    // the changes by slab, each slab's in the order they were set (a counting sort): ends[s] is where slab s's end
    const ends = new Uint32Array(slabs + 1);
    let outside = false;
    changes.forEach((key) => {
      const s = Math.floor(bucketOf(key) / SLAB);
      if (s < slabs) ends[s + 1] += 1;
      else outside = true;
    });
    if (outside) return false;
    for (let s = 1; s <= slabs; s += 1) ends[s] += ends[s - 1];
    const order = new Uint32Array(changes.count);
    let n = 0;
    changes.forEach((key) => {
      order[ends[Math.floor(bucketOf(key) / SLAB)]++] = n++;
    });
    for (let s = 0, first = 0; s < slabs; first = ends[s], s += 1) {
      if (first === ends[s]) continue;
      const words = slab(s);
      if (words === undefined) return false;
      for (let c = first; c < ends[s]; c += 1) {
        const [key, row, digest] = changes.at(order[c]);
        const at = (bucketOf(key) % SLAB) * BUCKET;
        // every place of the row: an index an earlier version saved after a run that added users to a known target holds each of them twice
        let found = 0;
        for (let i = 0; i < ENTRIES; i += 1) {
          if (words[at + i] !== key || words[at + ROWS + i] !== row) continue;
          words[at + HIGH + i] = Math.floor(digest / TWO_32);
          words[at + LOW + i] = digest >>> 0;
          found += 1;
        }
        // one held twice (an earlier version wrote it since this one remade the file): saved whole, made from the rows
        if (found !== 1) return false;
      }
      write(s, words);
    }
    return true;
  }

  /** The index as it is persisted (its last slab cut to the buckets in use). */
  persist(): PersistedIndex {
    const used = this.#buckets - (this.#slabs.length - 1) * SLAB;
    const slabs = this.#slabs.map((slab, i) => (i === this.#slabs.length - 1 ? slab.subarray(0, used * BUCKET) : slab));
    const depths = new Uint8Array(this.#buckets);
    const counts = new Uint8Array(this.#buckets);
    this.#depths.forEach((part, i) => depths.set(part.subarray(0, Math.min(SLAB, this.#buckets - i * SLAB)), i * SLAB));
    this.#counts.forEach((part, i) => counts.set(part.subarray(0, Math.min(SLAB, this.#buckets - i * SLAB)), i * SLAB));
    return { shape: Uint32Array.of(this.#bits, this.#buckets, this.#size), directory: this.#directory, depths, counts, slabs };
  }
}

/** Whether the bucket at `at` of a slab of a persisted index holds a row twice (see holdsARowTwice). */
export function bucketHoldsARowTwice(slab: Uint32Array, at: number): boolean {
  for (let i = 0; i < ENTRIES; i += 1) {
    const row = slab[at + ROWS + i];
    if (row === 0) continue;
    for (let j = i + 1; j < ENTRIES; j += 1) if (slab[at + ROWS + j] === row && slab[at + j] === slab[at + i]) return true;
  }
  return false;
}

/** Keeps, of sorted entries of one key and one row (in the order pushed), the last one; how many are kept, moved to the front. */
function latestOfEach(words: Uint32Array, n: number): number {
  let kept = 0;
  for (let at = 0; at < n * WORDS; at += WORDS) {
    let later = false;
    for (let next = at + WORDS; next < n * WORDS && words[next] === words[at] && !later; next += WORDS) later = words[next + 1] === words[at + 1];
    if (later) continue;
    if (kept * WORDS !== at) words.copyWithin(kept * WORDS, at, at + WORDS);
    kept += 1;
  }
  return kept;
}

/**
 * The byte length of each part of an index persisted with this shape ([bits, buckets, users]): its
 * shape, directory, depths, counts, then its slabs (the last cut to the buckets in use); undefined
 * for a shape no index has.
 */
export function persistedLengths(shape: Uint32Array): number[] | undefined {
  const [bits, buckets] = shape;
  if (shape.length !== 3 || bits > 32 || buckets === 0 || buckets > 2 ** bits) return undefined;
  const slabs = Array.from({ length: Math.ceil(buckets / SLAB) }, (_, i) => Math.min(SLAB, buckets - i * SLAB) * BUCKET * 4);
  return [12, 2 ** bits * 4, buckets, buckets, ...slabs];
}

/** Entries in the order they were pushed (the digests a run changed: UserIndex.patch), in chunks that never move, as the slabs. */
export class IndexEntries {
  static readonly #CHUNK = 65536;
  readonly #keys: Uint32Array[] = [];
  readonly #rows: Uint32Array[] = [];
  readonly #digests: Float64Array[] = [];
  #count = 0;

  get count(): number {
    return this.#count;
  }

  push(anyKey: number, row: number, digest: number): void {
    if (row < 1 || row >= TWO_32) throw new Error(`a state row id out of range: ${row}`);
    const chunk = Math.floor(this.#count / IndexEntries.#CHUNK);
    const at = this.#count % IndexEntries.#CHUNK;
    if (at === 0) {
      this.#keys.push(new Uint32Array(IndexEntries.#CHUNK));
      this.#rows.push(new Uint32Array(IndexEntries.#CHUNK));
      this.#digests.push(new Float64Array(IndexEntries.#CHUNK));
    }
    this.#keys[chunk][at] = anyKey >>> 0;
    this.#rows[chunk][at] = row;
    this.#digests[chunk][at] = digest;
    this.#count += 1;
  }

  /** The key, row and digest of the entry pushed `i`-th. */
  at(i: number): [number, number, number] {
    const [chunk, at] = [Math.floor(i / IndexEntries.#CHUNK), i % IndexEntries.#CHUNK];
    return [this.#keys[chunk][at], this.#rows[chunk][at], this.#digests[chunk][at]];
  }

  /** Calls fn with each entry, in the order they were pushed. */
  forEach(fn: (key: number, row: number, digest: number) => void): void {
    for (let i = 0; i < this.#count; i += 1) {
      const [chunk, at] = [Math.floor(i / IndexEntries.#CHUNK), i % IndexEntries.#CHUNK];
      fn(this.#keys[chunk][at], this.#rows[chunk][at], this.#digests[chunk][at]);
    }
  }
}

/** A copy of `part` in an array of `length` (a last slab read back, grown to a whole one). */
function grown<T extends Uint32Array | Uint8Array>(part: T, length: number): T {
  const whole = new (part.constructor as new (length: number) => T)(length);
  whole.set(part);
  return whole;
}
