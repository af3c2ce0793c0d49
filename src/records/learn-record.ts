// (Over 350 lines: the record's writer, its copy held in doubt and its reader share one layout, set out once here.)
// The learn record of a request: what the delta state records of its items once the server accepts
// them, made where the request is planned and read where it is settled. One run of bytes a request
// (carved from a slab of them), handed on to the sending thread: 32-bit words (the items, the values' hashes as the
// plan holds them, copied rather than encoded one by one, three words a value), then the texts
// (attribute names, users' keys) as one UTF-8 run, written as they come. The reader decodes the
// names; a key stays bytes (a new user's is copied as it is into the state's pack) unless asked for.
import { identityOf } from '../model/identity.js';
import { forEachLearnedValue, KEY_HASH, keyHashInto, stateUserKey } from './state-record.js';

/**
 * How the plan marks an item for its request's learn record: not learned (LEARN_NONE), an
 * activity's content hash, or the attributes of a user (userMark): a number, so that the items a
 * plan holds carry no object of their own.
 */
export type LearnMark = number | Uint8Array;
export const LEARN_NONE = 0;

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
  /** The first `count` values, VALUE words each: [name (a number of the plan's), forget (1) or not (0), h1, h2], into `into` at `offset`. */
  values(at: number, count: number, into: Int32Array, offset: number): void;
  /** The name the plan numbers `name`. */
  nameOf(name: number): string;
}

const NEW_USER = 1;
const KNOWN_USER = 2;
const ACTIVITY = 3;
/** A user's item held in doubt that set no value: nothing is learned of it (not even that the user exists). */
const UNSETTLED_USER = 4;
/** Words of a record's head: flags, names, items, words before the texts. */
const HEAD = 4;
const HAS_KNOWN_USERS = 1;
/** Words of a user's item before their values: tag, key hash lanes 0-2, values, key length (UTF-8 bytes), row id (0: not known). */
const USER_HEAD = 7;
/**
 * Words of a value as a record holds it: its name (its place in the record's names) twice over and
 * 1 when it is forgotten, h1, h2. Values are written first as the plan holds them (VALUE words:
 * name, forget, h1, h2) and packed in place.
 */
const VALUE = 4;
const PACKED = 3;

const utf8 = new TextEncoder();
// a text that begins with U+FEFF keeps it (a name or a key, not a byte-order mark)
const fromUtf8 = new TextDecoder('utf-8', { ignoreBOM: true });
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
    room(count * VALUE);
    source.values(block, count, words, at);
    for (let i = 0, from = at; i < count; i += 1, from += VALUE, at += PACKED) {
      const name = words[from];
      const forget = words[from + 1];
      words[at + 1] = words[from + 2];
      words[at + 2] = words[from + 3];
      if (stampOfHeld[name] !== record) {
        stampOfHeld[name] = record;
        placeOfHeld[name] = placeOf(source.nameOf(name));
      }
      words[at] = placeOfHeld[name] * 2 + forget;
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

/**
 * A copy of a request's record to learn when its outcome stays unknown (the server may have applied
 * it or not): every value its users' items set held in doubt, rows made for the users the state did
 * not know (a user the plan took for new is new: its filter of users never misses one, and a later
 * request naming them waits for this one to be settled); and the places of its activities, which are
 * not learned (pass them as refused).
 */
export function inDoubtRecord(record: Uint8Array): { learn: Uint8Array; activities: Set<number> } {
  const learn = record.slice();
  const head = new Int32Array(learn.buffer, 0, HEAD);
  const words = new Int32Array(learn.buffer, 0, head[3]);
  const activities = new Set<number>();
  let at = HEAD + head[1];
  for (let index = 0; index < head[2]; index += 1) {
    const tag = words[at];
    if (tag === LEARN_NONE) at += 1;
    else if (tag === ACTIVITY) {
      activities.add(index);
      at += 5;
    } else {
      // a row of no values would say the user exists, which an answer never given does not tell
      if (words[at + 4] === 0) words[at] = UNSETTLED_USER;
      const first = at + USER_HEAD;
      at = first + words[at + 4] * PACKED;
      for (let value = first; value < at; value += PACKED) words[value] |= 1;
    }
  }
  return { learn, activities };
}

/** An attributes item of a learn record, as read: a cursor over its values, reused from item to item. */
export interface LearnedAttributes {
  /** The user's key (decoded from the record when asked for). */
  readonly userKey: string;
  /** The record, and where in it the user's key is, in UTF-8 (keyStart to keyEnd). */
  readonly record: Uint8Array;
  keyStart: number;
  keyEnd: number;
  /** The lane of the user's key the index finds them by, and their part of their row's digest (keyHashInto), as the plan made them. */
  keyHash: number;
  userPart: number;
  /** The id of the user's row in the state file, when the plan found it (0: not known). */
  row: number;
  /** The state may know the user: what the request sends of them is forgotten before it is posted. */
  known: boolean;
  count: number;
  /** The value's attribute, as its place in the record's names. */
  name(i: number): number;
  forget(i: number): boolean;
  h1(i: number): number;
  h2(i: number): number;
}

/** Whether a request's items name a user the state may know (what it sends of them is then forgotten before it is posted). */
export const namesKnownUsers = (record: Uint8Array): boolean => (new Int32Array(record.buffer, record.byteOffset, 1)[0] & HAS_KNOWN_USERS) !== 0;

/** A learn record as read: the names its attributes use, and each item by its place in the body (undefined: nothing to learn). */
export function readLearnRecord(record: Uint8Array): { names: string[]; forEach(fn: (index: number, item: LearnedAttributes | Uint8Array | undefined) => void): void } {
  const head = new Int32Array(record.buffer, record.byteOffset, HEAD);
  const words = new Int32Array(record.buffer, record.byteOffset, head[3]);
  let textAt = head[3] * 4;
  const names: string[] = [];
  for (let i = 0; i < head[1]; i += 1) {
    names.push(fromUtf8.decode(record.subarray(textAt, textAt + words[HEAD + i])));
    textAt += words[HEAD + i];
  }
  const keysAt = textAt;
  const cursor = new AttributesCursor(record, words);
  return {
    names,
    forEach(fn) {
      let at = HEAD + head[1];
      textAt = keysAt;
      for (let index = 0; index < head[2]; index += 1) {
        const tag = words[at];
        if (tag === LEARN_NONE) {
          fn(index, undefined);
          at += 1;
        } else if (tag === ACTIVITY) {
          fn(index, record.subarray((at + 1) * 4, (at + 5) * 4));
          at += 5;
        } else if (tag === UNSETTLED_USER) {
          fn(index, undefined);
          textAt += words[at + 5];
          at += USER_HEAD;
        } else {
          cursor.known = tag === KNOWN_USER;
          cursor.keyHash = words[at + 1];
          cursor.userPart = (words[at + 2] & 0xfffff) * 2 ** 32 + (words[at + 3] >>> 0);
          cursor.count = words[at + 4];
          cursor.keyStart = textAt;
          cursor.keyEnd = textAt += words[at + 5];
          cursor.row = words[at + 6] >>> 0;
          cursor.first = at + USER_HEAD;
          at = cursor.first + cursor.count * PACKED;
          fn(index, cursor);
        }
      }
    },
  };
}

/** readLearnRecord's cursor over a record's attributes items. */
class AttributesCursor implements LearnedAttributes {
  keyStart = 0;
  keyEnd = 0;
  keyHash = 0;
  userPart = 0;
  row = 0;
  known = false;
  count = 0;
  /** Where the item's values start in the words. */
  first = 0;
  constructor(
    readonly record: Uint8Array,
    private readonly words: Int32Array,
  ) {}

  get userKey(): string {
    return fromUtf8.decode(this.record.subarray(this.keyStart, this.keyEnd));
  }

  name(i: number): number {
    return this.words[this.first + i * PACKED] >>> 1;
  }

  forget(i: number): boolean {
    return (this.words[this.first + i * PACKED] & 1) === 1;
  }

  h1(i: number): number {
    return this.words[this.first + i * PACKED + 1];
  }

  h2(i: number): number {
    return this.words[this.first + i * PACKED + 2];
  }
}
