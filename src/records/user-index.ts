// A target's users in memory, by a 32-bit hash of their key: for each, the id of their row in the
// state file and the digest of the attributes it holds (keyed by the user: state-record.ts
// keyHashInto). A plan tells an unchanged row by one look here, whatever the order of the file's
// ids, instead of a search of the file (microseconds each, in no order the disk can help).
// Two users may share a key hash: a row found here is that user's only once its key is read from the
// file, and a digest matches only the user it was made for (1 in 2^52 for another).
//
// Extendible hashing: a directory, by the key's first bits, of buckets of 32 entries; a full bucket
// splits in two by one more bit. Buckets are carved from slabs of 1 MiB and never move, so the index
// grows by a slab at a time and never holds two copies of itself while it grows (a table that is
// copied into a bigger one leaves the old one for the collector, which may take its time).

/** Entries a bucket holds: their keys first (two cache lines to search), then their rows, then their digests' halves. */
const ENTRIES = 32;
const BUCKET = ENTRIES * 4;
const ROWS = ENTRIES;
const HIGH = ENTRIES * 2;
const LOW = ENTRIES * 3;
const SLAB = 2048;
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
    const count = this.#counts[Math.floor(bucket / SLAB)][bucket % SLAB];
    for (let i = 0; i < count; i += 1) {
      if (slab[at + i] === key && fn(slab[at + ROWS + i], slab[at + HIGH + i] * TWO_32 + slab[at + LOW + i])) return;
    }
  }

  /** Whether an entry under `key` has this digest (with no digest: whether there is any entry under `key`). */
  has(anyKey: number, digest?: number): boolean {
    const key = anyKey >>> 0;
    const bucket = this.#bucketOf(key);
    const slab = this.#slabs[Math.floor(bucket / SLAB)];
    const at = (bucket % SLAB) * BUCKET;
    const count = this.#counts[Math.floor(bucket / SLAB)][bucket % SLAB];
    for (let i = 0; i < count; i += 1) {
      if (slab[at + i] === key && (digest === undefined || slab[at + HIGH + i] * TWO_32 + slab[at + LOW + i] === digest)) return true;
    }
    return false;
  }

  /** Sets the digest of row `row` under `key`, adding it when the index does not hold it. */
  set(anyKey: number, row: number, digest: number): void {
    const key = anyKey >>> 0;
    if (row < 1 || row >= TWO_32) throw new Error(`a state row id out of range: ${row}`);
    for (;;) {
      const bucket = this.#bucketOf(key);
      const slab = this.#slabs[Math.floor(bucket / SLAB)];
      const counts = this.#counts[Math.floor(bucket / SLAB)];
      const at = (bucket % SLAB) * BUCKET;
      const count = counts[bucket % SLAB];
      let i = 0;
      while (i < count && !(slab[at + i] === key && slab[at + ROWS + i] === row)) i += 1;
      if (i === ENTRIES) {
        this.#split(bucket, key);
        continue;
      }
      if (i === count) {
        counts[bucket % SLAB] = count + 1;
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
    if (depth === 32) throw new Error('the state index holds more than 32 users of one key hash');
    if (depth === this.#bits) {
      const directory = new Uint32Array(this.#directory.length * 2);
      for (let i = 0; i < directory.length; i += 1) directory[i] = this.#directory[i >> 1];
      this.#directory = directory;
      this.#bits += 1;
    }
    depths[bucket % SLAB] = depth + 1;
    const other = this.#newBucket(depth + 1);
    // the entries whose next bit is 1 move to the other bucket, and so does the directory's upper half of this bucket's range
    const span = 2 ** (this.#bits - depth);
    const first = (key >>> (32 - this.#bits)) & ~(span - 1);
    for (let i = first + span / 2; i < first + span; i += 1) this.#directory[i] = other;
    const slab = this.#slabs[Math.floor(bucket / SLAB)];
    const at = (bucket % SLAB) * BUCKET;
    const moving: number[] = [];
    let kept = 0;
    for (let i = 0; i < ENTRIES; i += 1) {
      const bit = (slab[at + i] >>> (31 - depth)) & 1;
      if (bit === 1) moving.push(slab[at + i], slab[at + ROWS + i], slab[at + HIGH + i], slab[at + LOW + i]);
      else {
        slab[at + kept] = slab[at + i];
        slab[at + ROWS + kept] = slab[at + ROWS + i];
        slab[at + HIGH + kept] = slab[at + HIGH + i];
        slab[at + LOW + kept] = slab[at + LOW + i];
        kept += 1;
      }
    }
    this.#counts[Math.floor(bucket / SLAB)][bucket % SLAB] = kept;
    this.#size -= moving.length / 4;
    for (let m = 0; m < moving.length; m += 4) this.set(moving[m], moving[m + 1], moving[m + 2] * TWO_32 + moving[m + 3]);
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

/** A copy of `part` in an array of `length` (a last slab read back, grown to a whole one). */
function grown<T extends Uint32Array | Uint8Array>(part: T, length: number): T {
  const whole = new (part.constructor as new (length: number) => T)(length);
  whole.set(part);
  return whole;
}
