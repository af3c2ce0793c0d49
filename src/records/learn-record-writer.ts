// The writer of learn records (learn-record.ts sets out their layout and reads them): a plan's items,
// request by request, their values' hashes taken as the plan holds them (sent-in-run.ts).
import { identityOf } from '../model/identity.js';
import { ACTIVITY, HAS_KNOWN_USERS, HEAD, KNOWN_USER, LEARN_NONE, NEW_USER, PACKED, USER_HEAD, VALUE, type LearnMark } from './learn-record.js';
import { forEachLearnedValue, KEY_HASH, keyHashInto, stateUserKey } from './state-record.js';

/**
 * The mark of a user's attributes: `known` when the state may know the user (from before the run,
 * or from this run's requests: what a request sends of them is forgotten before it is posted), and
 * where the plan holds the item's values hashed (HeldValues), or -1: they are hashed from the item.
 */
export const userMark = (known: boolean, at: number): number => 2 + (at + 1) * 2 + (known ? 1 : 0);

/** Values and key hashes the plan hashed already (sent-in-run.ts), by where it said it holds them. */
export interface HeldValues {
  /** Whether the block at `at` is still held (then the calls below may be made). */
  holds(at: number): boolean;
  /** The lanes of the user's key's hash (see keyHashInto), into `into` at `offset`. */
  keyHashOf(at: number, into: Int32Array, offset: number): void;
  /** The id of the user's row in the state file, when the plan found it there (0: not known). */
  rowOf(at: number): number;
  /** How many values of the row the block holds. */
  count(at: number): number;
  /** The words the blocks are held in, VALUE words a value: [name (a number of the plan's), forget (1) or not (0), h1, h2], going round to its start after its end. */
  readonly words: Int32Array;
  /** Where in `words` the first value of the block at `at` is. */
  valuesAt(at: number): number;
  /** The name the plan numbers `name`. */
  nameOf(name: number): string;
}

const utf8 = new TextEncoder();
/** The words and the texts' bytes a record is made in (one request at a time), before they are copied out. */
let scratch = new Int32Array(16 * 1024);
let scratchNames = new Uint8Array(1024);
let scratchKeys = new Uint8Array(16 * 1024);

/** The array, or when it is shorter than `need`, a copy of its first `used` elements at least twice as long (kept as the next record's scratch unless huge). */
function withRoom<T extends Int32Array<ArrayBuffer> | Uint8Array<ArrayBuffer>>(array: T, used: number, need: number, keep: (bigger: T) => void): T {
  if (need <= array.length) return array;
  const bigger = new (array.constructor as new (length: number) => T)(Math.max(array.length * 2, need));
  bigger.set(array.subarray(0, used));
  if (bigger.length <= 4 * 1024 * 1024) keep(bigger);
  return bigger;
}

/** A growing run of UTF-8 bytes, written without making a string of what is joined. */
function textRun(initial: Uint8Array<ArrayBuffer>, keep: (bytes: Uint8Array<ArrayBuffer>) => void) {
  let bytes = initial;
  let at = 0;
  const room = (n: number): void => {
    if (at + n > bytes.length) bytes = withRoom(bytes, at, at + n, keep);
  };
  return {
    /** Appends the text (most are ASCII: a byte a character, until one is not); the bytes it took. */
    add(text: string): number {
      room(text.length * 3);
      const start = at;
      let i = 0;
      for (; i < text.length; i += 1) {
        const c = text.charCodeAt(i);
        if (c >= 0x80) break;
        bytes[at + i] = c;
      }
      at += i;
      if (i < text.length) at += utf8.encodeInto(text.slice(i), bytes.subarray(at)).written;
      return at - start;
    },
    get length(): number {
      return at;
    },
    reset(): void {
      at = 0;
    },
    copyTo(into: Uint8Array, offset: number): void {
      into.set(bytes.subarray(0, at), offset);
    },
  };
}

/** Bytes of a slab records are carved from. */
const SLAB_BYTES = 256 * 1024;
let slab = new ArrayBuffer(0);
let slabUsed = 0;

/**
 * `size` bytes for a record, at an 8-byte boundary of a slab no record is ever written to again once
 * full (a record may outlive its request's plan: the state holds it until it is written): a buffer a
 * request took 8 µs to make, and as many for the collector to let go of. Every byte is written by the
 * caller: not zeroed first. A plain Uint8Array, whose slice() copies (as a Buffer's does not).
 */
function recordBytes(size: number): Uint8Array {
  if (size > SLAB_BYTES / 4) return new Uint8Array(Buffer.allocUnsafeSlow(size).buffer);
  if (slabUsed + size > slab.byteLength) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES).buffer;
    slabUsed = 0;
  }
  const bytes = new Uint8Array(slab, slabUsed, size);
  slabUsed = (slabUsed + size + 7) & ~7;
  return bytes;
}

/**
 * Writes learn records, one request's at a time, item by item in body order (attributes, events,
 * purchases): finish() gives the record and starts the next (a plan keeps one writer: a request
 * made no object of its own to write it, and its record is the only buffer it leaves).
 */
export function learnRecordWriter(held?: HeldValues) {
  let words = scratch;
  let at = HEAD;
  let items = 0;
  let flags = 0;
  const names: string[] = [];
  const nameText = textRun(scratchNames, (bytes) => (scratchNames = bytes));
  const keyText = textRun(scratchKeys, (bytes) => (scratchKeys = bytes));
  /** Made anew for each record, not cleared (see the batcher's `latest`). */
  let placeOfName = new Map<string, number>();
  /** The record's place of each of the plan's names (held values), when stamped with this record's number. */
  const placeOfHeld: number[] = [];
  const stampOfHeld: number[] = [];
  let record = 0;
  const keepWords = (bigger: Int32Array<ArrayBuffer>): void => {
    scratch = bigger;
  };
  const room = (n: number): void => {
    if (at + n > words.length) words = withRoom(words, at, at + n, keepWords);
  };
  /** Each name's length in UTF-8 bytes, by its place. */
  const nameBytes: number[] = [];
  const placeOf = (name: string): number => {
    let found = placeOfName.get(name);
    if (found === undefined) {
      placeOfName.set(name, (found = names.length));
      names.push(name);
      nameBytes.push(nameText.add(name));
    }
    return found;
  };
  const hashed = (name: string, forget: boolean, h1: number, h2: number): void => {
    room(PACKED);
    words[at] = placeOf(name) * 2 + (forget ? 1 : 0);
    words[at + 1] = h1;
    words[at + 2] = h2;
    at += PACKED;
  };
  /** Copies the held values of the block at `block`, packed, their names numbered as the record's. */
  const copyHeld = (source: HeldValues, block: number, count: number): void => {
    room(count * PACKED);
    const held = source.words;
    let from = source.valuesAt(block);
    for (let i = 0; i < count; i += 1, at += PACKED) {
      const name = held[from];
      if (stampOfHeld[name] !== record) {
        stampOfHeld[name] = record;
        placeOfHeld[name] = placeOf(source.nameOf(name));
      }
      words[at] = placeOfHeld[name] * 2 + held[from + 1];
      words[at + 1] = held[from + 2];
      words[at + 2] = held[from + 3];
      from += VALUE;
      if (from === held.length) from = 0;
    }
  };
  /** The user's key, into the record's texts (and hashed into KEY_HASH when `hash`); its length in UTF-8 bytes (-1: no user). */
  const addKey = (sent: Record<string, unknown>, hash: boolean): number => {
    // an item named by an external id (the usual one) is keyed by it as stateUserKey does, its key's text not made
    const id = sent.external_id;
    if (typeof id === 'string' && sent.push_token_import !== true) {
      if (hash) keyHashInto(`e:${id}`);
      return keyText.add('e:') + keyText.add(id);
    }
    const userKey = stateUserKey(identityOf(sent, 'attributes'));
    if (userKey === undefined) return -1;
    if (hash) keyHashInto(userKey);
    return keyText.add(userKey);
  };
  return {
    /** Adds an item as sent (its values hashed here unless `mark` says where they are held), and how it is learned. */
    add(mark: LearnMark, sent: Record<string, unknown>): void {
      items += 1;
      room(USER_HEAD);
      if (mark instanceof Uint8Array) {
        words[at] = ACTIVITY;
        new Uint8Array(words.buffer, (at + 1) * 4, 16).set(mark);
        at += 5;
        return;
      }
      const known = mark % 2 === 1;
      const block = (mark - 2 - (known ? 1 : 0)) / 2 - 1;
      const isHeld = block >= 0 && held?.holds(block) === true;
      const keyLength = mark === LEARN_NONE ? -1 : addKey(sent, !isHeld);
      if (keyLength === -1) {
        words[at++] = LEARN_NONE;
        return;
      }
      if (known) flags |= HAS_KNOWN_USERS;
      const head = at;
      words[head] = known ? KNOWN_USER : NEW_USER;
      words[head + 5] = keyLength;
      at += USER_HEAD;
      if (isHeld) {
        held!.keyHashOf(block, words, head + 1);
        words[head + 6] = held!.rowOf(block);
        const count = held!.count(block);
        copyHeld(held!, block, count);
        words[head + 4] = count;
      } else {
        words.set(KEY_HASH, head + 1);
        words[head + 6] = 0;
        forEachLearnedValue(sent, identityOf(sent, 'attributes').by, hashed);
        words[head + 4] = (at - head - USER_HEAD) / PACKED;
      }
    },
    /**
     * The record, as bytes no other record shares (a part of a slab of records: see recordBytes); the
     * writer then writes the next.
     */
    finish(): Uint8Array {
      const nameWords = names.length;
      const size = (at + nameWords) * 4;
      const bytes = recordBytes(size + nameText.length + keyText.length);
      const out = new Int32Array(bytes.buffer, bytes.byteOffset, at + nameWords);
      out[0] = flags;
      out[1] = names.length;
      out[2] = items;
      out[3] = at + nameWords;
      for (let i = 0; i < nameWords; i += 1) out[HEAD + i] = nameBytes[i];
      out.set(words.subarray(HEAD, at), HEAD + nameWords);
      nameText.copyTo(bytes, size);
      keyText.copyTo(bytes, size + nameText.length);
      // the next record
      at = HEAD;
      items = 0;
      flags = 0;
      names.length = 0;
      nameBytes.length = 0;
      nameText.reset();
      keyText.reset();
      placeOfName = new Map();
      record += 1;
      return bytes;
    },
  };
}
