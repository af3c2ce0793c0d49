// The users a --delta run has planned to send (delta.ts): a later row of one of them is compared
// with what the run sends of them (sent-in-run.ts), not with the state, which does not hold that yet.
//
// A chain of Bloom filters whose probes for one user fall in one 64-byte block, so a filter costs a
// row one cache miss, not seven. The first is sized by the users the inputs' size suggests (32 bits
// each: 256 KiB to 32 MiB, 16 MiB for standard input); once it holds as many users as it was made
// for, the next (twice its size, up to 32 MiB) takes the users that follow, and so on: memory grows
// with the users a run sends (about 4 bytes each past the first filter), and a new user matches
// falsely about 1 time in 7,000 at 50 million users (192 MiB of filters), where one filter of 32 MiB
// would have filled up and matched 1 in 40.
//
// A false match costs a look in what the run sent that finds nothing: the row is sent whole, and what
// it sends forgotten in the state before it is posted (a round trip to the state's writer). It never
// leaves out a value: a filter never misses a user it was given.

/** Bits a user sets in their block. */
const PROBES = 7;
/** Users a filter is made for per block of 512 bits (32 bits a user). */
const USERS_PER_BLOCK = 16;
/** Blocks of the first filter: from 2^12 (256 KiB) to 2^19 (32 MiB). */
const FEWEST_BITS = 12;
const MOST_BITS = 19;
const STANDARD_INPUT_BITS = 18;

/** One filter: its words (16 to a block) and its blocks (a power of two). */
interface Filter {
  words: Uint32Array;
  blocks: number;
}

/** The i-th probe's bit in its block of 512: the i-th 9 bits of the hash's last 64 (the first 32 chose the block). */
const bitOf = (h2: number, h3: number, i: number): number => (i < 3 ? h2 >>> (i * 9) : i === 3 ? (h2 >>> 27) | (h3 << 5) : h3 >>> (i * 9 - 32)) & 511;

function holds(words: Uint32Array, blocks: number, h1: number, h2: number, h3: number): boolean {
  const block = (h1 & (blocks - 1)) * 16;
  for (let i = 0; i < PROBES; i += 1) {
    const bit = bitOf(h2, h3, i);
    if ((words[block + (bit >>> 5)] & (1 << (bit & 31))) === 0) return false;
  }
  return true;
}

/**
 * The users seen, by the three lanes of their key's hash (state-record.ts keyHashInto). `users`: how
 * many the inputs may name (undefined for standard input).
 */
export function createSeenUsers(users: number | undefined) {
  const bits = users === undefined ? STANDARD_INPUT_BITS : Math.min(MOST_BITS, Math.max(FEWEST_BITS, Math.ceil(Math.log2(users / USERS_PER_BLOCK))));
  // the filter being filled, in variables of its own (a row's look reads no object first)
  let blocks = 2 ** bits;
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
        blocks = Math.min(blocks * 2, 2 ** MOST_BITS);
        words = new Uint32Array(blocks * 16);
        room = blocks * USERS_PER_BLOCK;
      }
      room -= 1;
      const block = (h1 & (blocks - 1)) * 16;
      for (let i = 0; i < PROBES; i += 1) {
        const bit = bitOf(h2, h3, i);
        words[block + (bit >>> 5)] |= 1 << (bit & 31);
      }
    },
  };
}
