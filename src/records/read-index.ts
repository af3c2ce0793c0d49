// A target's index as a --delta plan reads it (state.ts): the persisted index (user-index.ts) packed
// as it loads, 12 bytes a user where the index a run writes to takes about 26 (buckets of 32 places,
// two thirds full). Each bucket's entries follow one another, and of each only its row, its digest
// and the last 12 bits of its key are kept: a plan only looks users up, and the first bits of a key
// chose its bucket (18 or more of them at 10 million users). A match of the last 12 is
// confirmed by what follows it, as a match of the whole key was (two users may share one): a row is
// a user's once their key is read from the file (rowFinder), and a digest matches only the user it
// was made for (state-record.ts userPart). A user the index does not hold shares a bucket and those
// 12 bits with one it holds in about 1 look in 200: the plan then reads a row that is not theirs.
// Past ROWS_IN_MEMORY users, given a folder, it writes the rows to a file there (spill-file.ts) and
// reads a row back when a user's key matches (a user whose digest did not: changed, or not held),
// 8 bytes a user in memory: an unchanged re-upload reads none.
import { SpillFile } from './spill-file.js';
import { BUCKET, bucketHoldsARowTwice, ENTRIES, HIGH, LOW, ROWS } from './user-index.js';

const TAG = 0xfff;
/** A head holds the key's last 12 bits above the digest's high 20. */
const TAG_SHIFT = 20;
const HIGH_MASK = 0xfffff;
const TWO_32 = 2 ** 32;

/** What a plan asks of a target's index: this one, or a UserIndex made from the rows. */
export interface UserLookup {
  readonly size: number;
  has(anyKey: number, digest?: number): boolean;
  find(anyKey: number, fn: (row: number, digest: number) => boolean): void;
  /** Lets go of what it holds outside memory. */
  close(): void;
}

export class ReadIndex implements UserLookup {
  /** Users it holds at most: where an entry's bucket begins is written in 27 bits. */
  static readonly MOST = 2 ** 27 - 1;
  /** Users whose rows it keeps in memory (4 MiB of them) where it is given a folder to write them to. */
  static readonly ROWS_IN_MEMORY = 2 ** 20;
  /** Rows written to the file at a time (1 MiB of them). */
  static readonly ROWS_CHUNK = 2 ** 18;
  /** The file its rows are written to, in that folder. */
  static readonly rowsFile = (folder: string): SpillFile => new SpillFile(folder, 'rows');
  readonly size: number;
  readonly #bits: number;
  /** Per prefix of a key's first bits: where its bucket's entries begin, times 32, plus how many they are. */
  readonly #directory: Uint32Array;
  /** Two words an entry: the last bits of its key above the high bits of its digest (a head), then its digest's low 32 bits. */
  readonly #entries: Uint32Array;
  /** Each entry's row; or, while they are written to #file, the chunk of them being filled, then the one row read back. */
  #rows: Uint32Array;
  #file: SpillFile | undefined;
  readonly #chunk = ReadIndex.ROWS_CHUNK;

  private constructor(size: number, bits: number, rowsTo: string | undefined) {
    this.size = size;
    this.#bits = bits;
    this.#directory = new Uint32Array(2 ** bits);
    this.#entries = new Uint32Array(size * 2);
    // (a folder the rows cannot be written to leaves them in memory)
    try {
      if (rowsTo !== undefined && size > ReadIndex.ROWS_IN_MEMORY) this.#file = ReadIndex.rowsFile(rowsTo);
    } catch {
      this.#file = undefined;
    }
    this.#rows = new Uint32Array(this.#file === undefined ? size : this.#chunk);
  }

  /**
   * The index of the persisted one with this shape ([bits, buckets, users]) and directory, from its
   * slabs read one at a time (each let go of once packed); undefined when it must be made from the
   * rows: it holds a row twice (UserIndex.holdsARowTwice), or other than the users its shape says.
   * `rowsTo`: a folder its rows may be written to (see ROWS_IN_MEMORY).
   */
  static of(shape: Uint32Array, directory: Uint32Array, slabs: Iterable<Uint32Array>, rowsTo?: string): ReadIndex | undefined {
    const [bits, buckets, users] = shape;
    const index = new ReadIndex(users, bits, rowsTo);
    try {
      /** Where each bucket's entries begin, and the last one's end. */
      const starts = new Uint32Array(buckets + 1);
      let bucket = 0;
      for (const slab of slabs) {
        for (let at = 0; at < slab.length && bucket < buckets; at += BUCKET, bucket += 1) {
          if (!index.#pack(slab, at, bucket, starts)) return index.#dropped();
        }
      }
      // (the last bucket's end is written once it is packed)
      if (starts[buckets] !== users) return index.#dropped();
      for (let prefix = 0; prefix < directory.length; prefix += 1) {
        const b = directory[prefix];
        index.#directory[prefix] = ((starts[b] << 5) | (starts[b + 1] - starts[b])) >>> 0;
      }
      if (users % index.#chunk !== 0) index.#writeRows(users - (users % index.#chunk), users % index.#chunk);
      if (index.#file !== undefined) index.#rows = new Uint32Array(1);
      return index;
    } catch (error) {
      index.close();
      throw error;
    }
  }

  /** Undefined, once its file is let go of. */
  #dropped(): undefined {
    this.close();
    return undefined;
  }

  /** Keeps the row of the e-th entry (entries come in order): in memory, or in the chunk written to the file once full. */
  #putRow(e: number, row: number): void {
    // (one past the users its shape says is not kept: such an index is not made)
    if (e >= this.size) return;
    if (this.#file === undefined) {
      this.#rows[e] = row;
      return;
    }
    const i = e % this.#chunk;
    this.#rows[i] = row;
    if (i === this.#chunk - 1) this.#writeRows(e - i, this.#chunk);
  }

  /** Writes the first n rows of the chunk as those of entries from `first` on; where the file cannot take them, the rows are kept in memory from now on. */
  #writeRows(first: number, n: number): void {
    if (this.#file === undefined) return;
    try {
      this.#file.write(new Uint8Array(this.#rows.buffer, 0, n * 4), first * 4);
    } catch {
      // (a full disk: those written are read back)
      const rows = new Uint32Array(this.size);
      this.#file.read(new Uint8Array(rows.buffer, 0, first * 4), 0);
      rows.set(this.#rows.subarray(0, n), first);
      this.close();
      this.#rows = rows;
    }
  }

  /** The row of the e-th entry. */
  #rowOf(e: number): number {
    if (this.#file === undefined) return this.#rows[e];
    this.#file.read(new Uint8Array(this.#rows.buffer, 0, 4), e * 4);
    return this.#rows[0];
  }

  close(): void {
    this.#file?.close();
    this.#file = undefined;
  }

  /** Packs the bucket at `at` of a slab after the one before it (past the users the shape says, nothing is kept); false when it holds a row twice, or a user in each of its places. */
  #pack(slab: Uint32Array, at: number, bucket: number, starts: Uint32Array): boolean {
    if (bucketHoldsARowTwice(slab, at)) return false;
    let e = starts[bucket];
    for (let i = 0; i < ENTRIES; i += 1) {
      const row = slab[at + ROWS + i];
      if (row === 0) continue;
      const key = slab[at + i];
      this.#entries[e * 2] = ((key & TAG) << TAG_SHIFT) | (slab[at + HIGH + i] & HIGH_MASK);
      this.#entries[e * 2 + 1] = slab[at + LOW + i];
      this.#putRow(e, row);
      e += 1;
    }
    starts[bucket + 1] = e;
    // (one that holds them all is not as saved: a bucket splits at 30)
    return e - starts[bucket] < ENTRIES;
  }

  /** Whether an entry whose key ends as `key` does has this digest (with no digest: whether there is any such entry). */
  has(anyKey: number, digest?: number): boolean {
    const key = anyKey >>> 0;
    const place = this.#directory[this.#bits === 0 ? 0 : key >>> (32 - this.#bits)];
    const first = (place >>> 5) * 2;
    const count = place & 31;
    const tag = key & TAG;
    for (let e = first; e < first + count * 2; e += 2) {
      const head = this.#entries[e];
      if (head >>> TAG_SHIFT !== tag) continue;
      if (digest === undefined || (head & HIGH_MASK) * TWO_32 + this.#entries[e + 1] === digest) return true;
    }
    return false;
  }

  /** Calls fn with the row id and digest of each entry whose key ends as `key` does, until fn returns true. */
  find(anyKey: number, fn: (row: number, digest: number) => boolean): void {
    const key = anyKey >>> 0;
    const place = this.#directory[this.#bits === 0 ? 0 : key >>> (32 - this.#bits)];
    const first = place >>> 5;
    const count = place & 31;
    const tag = key & TAG;
    for (let e = first; e < first + count; e += 1) {
      const head = this.#entries[e * 2];
      if (head >>> TAG_SHIFT === tag && fn(this.#rowOf(e), (head & HIGH_MASK) * TWO_32 + this.#entries[e * 2 + 1])) return;
    }
  }
}
