// What a --delta run has sent of its recent users, attribute by attribute (a value's hash, or
// "forgotten": an operation that adds, or a value the service may skip), so that a later row of one
// of them is compared with it and carries only what differs. Fixed memory whatever the number of
// users (about 10 MB): the users of the last 131,072 rows sent, about, by a 64-bit hash of their key
// (two of them sharing one is a chance of about 1 in 10^9 per run); a user it no longer holds is
// sent whole again. Typed arrays only: a row costs no object the collector must follow, and one
// user's place is one cache line.
import { KEY_HASH } from '../records/state-record.js';

const WAYS = 4;
const BUCKETS = 2 ** 14;
/** A way: the user's key hash (two lanes), where their block starts (its low 32 bits), and META. */
const WAY = 4;
const USED = 1 << 16;
const WHOLE = 1 << 17;
const COUNT = 0xffff;
/** Entries held, in a ring, four numbers each: a user's block is written anew at its head whenever they are sent again. */
const ARENA = 2 ** 18;
/** A user with more attributes than this is not held (a row of thousands of columns): sent whole again. */
export const MAX_HELD = 256;
/** Every so many entries written, ways whose block the ring no longer holds are let go (so a block's start fits 32 bits). */
const SWEEP = 2 ** 30;

/** What the run sent of an attribute of a user: nothing, a value of that hash, or something the state must not learn. */
export const NOT_SENT = 0;
export const SENT = 1;
export const FORGOTTEN = 2;

export function createSentInRun() {
  /** Attribute names as the run numbers them. */
  const names = new Map<string, number>();
  const nameList: string[] = [];
  /** The last row's names in order, and their numbers: the rows of a file name their attributes in one order. */
  const lastNames: string[] = [];
  const lastIds: number[] = [];
  let place = 0;
  const nameId = (name: string): number => {
    if (lastNames[place] === name) return lastIds[place++];
    let id = names.get(name);
    if (id === undefined) {
      names.set(name, (id = nameList.length));
      nameList.push(name);
    }
    lastNames[place] = name;
    lastIds[place++] = id;
    return id;
  };
  const ways = new Int32Array(BUCKETS * WAYS * WAY);
  /** A block: a head [key hash lane 0, 1, 2, this row's values], then [name, forgotten (1) or not (0), h1, h2] per value (a learn record's layout). */
  const arena = new Int32Array(ARENA * 4);
  /** The state's row id of each block's user (by where the block starts in the ring), 0 when not known. */
  const rows = new Uint32Array(ARENA);
  /** Entries ever written (the next one goes to head % ARENA), and the low 32 bits of that count. */
  let head = 0;
  let headLow = 0;
  let nextSweep = SWEEP;
  /** The block being written (begin/add/end), and the old one it replaces. */
  let writing = -1;
  let writingStart = 0;
  let whole = false;
  const old = new Int32Array(MAX_HELD * 4);
  let oldCount = 0;

  /** Where the block of the way at `w` starts, in entries ever written; -1 when the ring no longer holds it. */
  const startOf = (w: number): number => {
    if ((ways[w + 3] & USED) === 0) return -1;
    const distance = (headLow - ways[w + 2]) >>> 0;
    return distance <= ARENA ? head - distance : -1;
  };
  /** The user's way (as an index into `ways`), or -1. */
  const find = (k1: number, k2: number): number => {
    const first = (k1 & (BUCKETS - 1)) * WAYS * WAY;
    for (let w = first; w < first + WAYS * WAY; w += WAY) {
      if (ways[w] === k1 && ways[w + 1] === k2 && startOf(w) !== -1) return w;
    }
    return -1;
  };
  const put = (values: ArrayLike<number>, from: number): void => {
    const at = (head % ARENA) * 4;
    arena[at] = values[from];
    arena[at + 1] = values[from + 1];
    arena[at + 2] = values[from + 2];
    arena[at + 3] = values[from + 3];
    head += 1;
    headLow = (headLow + 1) | 0;
  };
  const sweep = (): void => {
    for (let w = 0; w < ways.length; w += WAY) if (startOf(w) === -1) ways[w + 3] = 0;
    nextSweep += SWEEP;
  };

  /** The last word touch() read: kept, so that the read is made. */
  let touched = 0;

  return {
    /**
     * Reads the bucket of the user whose key's hash starts with k1 and does nothing with it: called
     * before the filter of users seen is asked, both reads miss the cache at once rather than one
     * after the other (begin() finds the bucket in the cache).
     */
    touch(k1: number): void {
      touched ^= ways[(k1 & (BUCKETS - 1)) * WAYS * WAY];
    },
    /** The user's entry (a handle for the calls below), or -1 when the run holds nothing of them. */
    find,
    /** Whether outside what the run sent, the user's values are what the plan read from the state. */
    whole: (way: number): boolean => (ways[way + 3] & WHOLE) !== 0,
    /** The id of the user's row in the state file, when the plan found it (0: not known). */
    row: (way: number): number => rows[startOf(way) % ARENA],
    /** What the run sent of attribute `name` of the user: NOT_SENT, SENT (`same`: with this hash) or FORGOTTEN. */
    sent(way: number, name: string, h1: number, h2: number): { mode: number; same: boolean } {
      const id = names.get(name);
      const start = startOf(way) + 1;
      const count = ways[way + 3] & COUNT;
      for (let i = 0; id !== undefined && i < count; i += 1) {
        const at = ((start + i) % ARENA) * 4;
        if (arena[at] !== id) continue;
        if (arena[at + 1] === 1) return { mode: FORGOTTEN, same: false };
        return { mode: SENT, same: arena[at + 2] === h1 && arena[at + 3] === h2 };
      }
      return { mode: NOT_SENT, same: false };
    },
    /**
     * Starts the block of the user whose key's hash KEY_HASH holds (and whose row in the state file
     * has the id `row`, 0 when not known): a head of their key's hash and how many values this row
     * gives, what add() gives, then what the run sent before of other attributes. Returns where the
     * block starts, for HeldValues. `unseen`: the run has not sent the user before (no look for them).
     */
    begin(isWhole: boolean, row: number, unseen = false): number {
      if (head >= nextSweep) sweep();
      const k1 = KEY_HASH[0];
      const k2 = KEY_HASH[1];
      let way = unseen ? -1 : find(k1, k2);
      oldCount = 0;
      if (way !== -1) {
        const start = startOf(way) + 1;
        oldCount = ways[way + 3] & COUNT;
        for (let i = 0; i < oldCount; i += 1) old.set(arena.subarray(((start + i) % ARENA) * 4, ((start + i) % ARENA) * 4 + 4), i * 4);
      } else {
        // the way whose block is oldest (or one no longer held: at a distance beyond the ring's) gives way
        const first = (k1 & (BUCKETS - 1)) * WAYS * WAY;
        way = first;
        let farthest = -1;
        for (let w = first; w < first + WAYS * WAY; w += WAY) {
          const distance = (ways[w + 3] & USED) === 0 ? Infinity : (headLow - ways[w + 2]) >>> 0;
          if (distance > farthest) {
            way = w;
            farthest = distance;
          }
        }
      }
      writing = way;
      writingStart = head;
      whole = isWhole;
      ways[way] = k1;
      ways[way + 1] = k2;
      ways[way + 3] = 0;
      place = 0;
      rows[head % ARENA] = row;
      put(KEY_HASH, 0);
      arena[(writingStart % ARENA) * 4 + 3] = 0;
      return writingStart;
    },
    add(name: string, forget: boolean, h1: number, h2: number): void {
      if (writing === -1) return;
      if (head - writingStart > MAX_HELD) {
        writing = -1; // too wide to hold
        return;
      }
      const at = (head % ARENA) * 4;
      arena[at] = nameId(name);
      arena[at + 1] = forget ? 1 : 0;
      arena[at + 2] = h1;
      arena[at + 3] = h2;
      head += 1;
      headLow = (headLow + 1) | 0;
    },
    /** Ends the block; false when it holds nothing of this row (too wide: it is hashed again for its record, and sent whole again). */
    end(): boolean {
      if (writing === -1) return false;
      const added = head - writingStart - 1;
      arena[(writingStart % ARENA) * 4 + 3] = added;
      for (let o = 0; o < oldCount; o += 1) {
        let overridden = false;
        for (let i = 1; i <= added && !overridden; i += 1) overridden = arena[((writingStart + i) % ARENA) * 4] === old[o * 4];
        if (overridden) continue;
        // too wide to hold for the user's later rows: this row's own values are held all the same
        if (head - writingStart > MAX_HELD) {
          writing = -1;
          return true;
        }
        put(old, o * 4);
      }
      ways[writing + 2] = (headLow - (head - writingStart)) | 0;
      ways[writing + 3] = USED | (whole ? WHOLE : 0) | (head - writingStart - 1);
      writing = -1;
      return true;
    },
    /** HeldValues: a row's block, while the ring holds it. */
    holds: (at: number): boolean => at >= head - ARENA && at < head,
    keyHashOf(at: number, into: Int32Array, offset: number): void {
      const place = (at % ARENA) * 4;
      into[offset] = arena[place];
      into[offset + 1] = arena[place + 1];
      into[offset + 2] = arena[place + 2];
    },
    count: (at: number): number => arena[(at % ARENA) * 4 + 3],
    rowOf: (at: number): number => rows[at % ARENA],
    words: arena,
    valuesAt: (at: number): number => ((at + 1) % ARENA) * 4,
    nameOf: (name: number): string => nameList[name],
  };
}
