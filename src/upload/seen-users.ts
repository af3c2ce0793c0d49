// The users a --delta run has planned to send (delta.ts): a later row of one of them is compared
// with what the run sends of them (sent-in-run.ts), not with the state, which does not hold that yet.
//
// A chain of Bloom filters whose probes for one user fall in one 64-byte block, so a filter costs a
// row one cache miss, not seven. The first is made for the rows the inputs hold (rows-guess.ts reads
// the start of the largest file; a shard's share of them), at about 24 bits a user: from 256 KiB to
// 32 MiB (11 million users), 16 MiB for standard input, a pipe or objects in storage; 10 million
// rows take 29 MiB. A guess may count more rows than there are users (a JSON array printed over
// many lines, a user on many rows), never more than that cap. Once a filter holds as many users as
// it was made for, the next (twice its size, up to 32 MiB, at 32 bits a user) takes the users that
// follow, and so on: memory follows the users a run sends. A new user matches falsely about 1 time
// in 9,000 once the first is full, and 1 in 4,500 at 50 million users (192 MiB of filters; 208
// from standard input).
//
// A false match costs a look in what the run sent that finds nothing: the row is sent whole, and what
// it sends forgotten in the state before it is posted (a round trip to the state's writer). It never
// leaves out a value: a filter never misses a user it was given. A user left out as unchanged is
// not added, so a run that sends few users (a daily re-run) matches falsely far less, and one that
// sends none, never.

/** Bits a user sets in their block. */
const PROBES = 7;
/** Users the first filter is made for per block of 512 bits (about 24 bits a user), and a later one (32 bits a user). */
const USERS_PER_BLOCK = 21;
const LATER_USERS_PER_BLOCK = 16;
/** Blocks of a filter: 2^12 (256 KiB) at least, 2^19 (32 MiB) at most; the first, when the rows are not known (standard input), 2^18 (16 MiB). */
const FEWEST_BLOCKS = 2 ** 12;
const MOST_BLOCKS = 2 ** 19;
const STANDARD_INPUT_BLOCKS = 2 ** 18;

/** One filter: its words (16 to a block) and its blocks (any number). */
interface Filter {
  words: Uint32Array;
  blocks: number;
}

/** The i-th probe's bit in its block of 512: the i-th 9 bits of the hash's last 64 (the first 32 chose the block). */
const bitOf = (h2: number, h3: number, i: number): number => (i < 3 ? h2 >>> (i * 9) : i === 3 ? (h2 >>> 27) | (h3 << 5) : h3 >>> (i * 9 - 32)) & 511;

/** The first word of the block the hash's first 32 bits choose, of `blocks` (by their share of 2^32: any number of blocks). */
const blockOf = (h1: number, blocks: number): number => (((h1 >>> 0) * blocks) / 4294967296) << 4;

function holds(words: Uint32Array, blocks: number, h1: number, h2: number, h3: number): boolean {
  const block = blockOf(h1, blocks);
  for (let i = 0; i < PROBES; i += 1) {
    const bit = bitOf(h2, h3, i);
    if ((words[block + (bit >>> 5)] & (1 << (bit & 31))) === 0) return false;
  }
  return true;
}

/**
 * The users seen, by the three lanes of their key's hash (state-record.ts keyHashInto). `users`: how
 * many the inputs may name (undefined when not known: standard input, a pipe, objects in storage).
 */
export function createSeenUsers(users: number | undefined) {
  // the filter being filled, in variables of its own (a row's look reads no object first)
  let blocks = users === undefined ? STANDARD_INPUT_BLOCKS : Math.min(MOST_BLOCKS, Math.max(FEWEST_BLOCKS, Math.ceil(users / USERS_PER_BLOCK)));
  let words = new Uint32Array(blocks * 16);
  /** Users it takes before the next one is made. */
  let room = blocks * USERS_PER_BLOCK;
  /** The filters filled before it. */
  const earlier: Filter[] = [];
  let empty = true;
  return {
    has(h1: number, h2: number, h3: number): boolean {
      if (empty) return false;
      if (holds(words, blocks, h1, h2, h3)) return true;
      for (let i = 0; i < earlier.length; i += 1) if (holds(earlier[i].words, earlier[i].blocks, h1, h2, h3)) return true;
      return false;
    },
    /** Adds a user has() does not find (a user added twice takes twice the room). */
    add(h1: number, h2: number, h3: number): void {
      empty = false;
      if (room === 0) {
        earlier.push({ words, blocks });
        blocks = Math.min(blocks * 2, MOST_BLOCKS);
        words = new Uint32Array(blocks * 16);
        room = blocks * LATER_USERS_PER_BLOCK;
      }
      room -= 1;
      const block = blockOf(h1, blocks);
      for (let i = 0; i < PROBES; i += 1) {
        const bit = bitOf(h2, h3, i);
        words[block + (bit >>> 5)] |= 1 << (bit & 31);
      }
    },
  };
}
