// The learn record of a request: what the delta state records of its items once the server accepts
// them, made where the request is planned and read where it is settled. One buffer a request,
// handed to the sending thread without a copy: 32-bit words (the items, the values' hashes as the
// plan holds them, copied rather than encoded one by one), then the texts (attribute names, users'
// keys) as one UTF-8 run, decoded once.
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
  /** The lanes of the user's key's hash (see keyHashInto), into KEY_HASH. */
  keyHashOf(at: number): void;
  /** The id of the user's row in the state file, when the plan found it there (0: not known). */
  rowOf(at: number): number;
  /** How many values of the row the block holds. */
  count(at: number): number;
  /** The i-th value: [name (a number of the plan's), forget (1) or not (0), h1, h2] into `into` at `offset`. */
  value(at: number, i: number, into: Int32Array, offset: number): void;
  /** The name the plan numbers `name`. */
  nameOf(name: number): string;
}

const NEW_USER = 1;
const KNOWN_USER = 2;
const ACTIVITY = 3;
/** Words of a record's head: flags, names, items, words before the texts. */
const HEAD = 4;
const HAS_KNOWN_USERS = 1;
/** Words of a user's item before their values: tag, key hash lanes 0-2, values, key length, row id (0: not known). */
const USER_HEAD = 7;
/** Words of a value: name (its place in the record's names), forget, h1, h2. */
const VALUE = 4;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();
/** The words a record is made in (one request at a time), before they are copied out. */
let scratch = new Int32Array(16 * 1024);

/** Writes the learn record of one request, item by item in body order (attributes, events, purchases). */
export function learnRecordWriter(held?: HeldValues) {
  let words = scratch;
  let at = HEAD;
  let items = 0;
  let flags = 0;
  const texts: string[] = [];
  const names: string[] = [];
  const placeOfName = new Map<string, number>();
  /** The record's place of each of the plan's names (held values), when stamped with this record. */
  const placeOfHeld: number[] = [];
  const room = (n: number): void => {
    if (at + n <= words.length) return;
    const bigger = new Int32Array(Math.max(words.length * 2, at + n));
    bigger.set(words.subarray(0, at));
    words = bigger;
    if (bigger.length <= 4 * 1024 * 1024) scratch = bigger;
  };
  const place = (name: string): number => {
    let found = placeOfName.get(name);
    if (found === undefined) {
      placeOfName.set(name, (found = names.length));
      names.push(name);
    }
    return found;
  };
  const hashed = (name: string, forget: boolean, h1: number, h2: number): void => {
    room(VALUE);
    words[at] = place(name);
    words[at + 1] = forget ? 1 : 0;
    words[at + 2] = h1;
    words[at + 3] = h2;
    at += VALUE;
  };
  /** Copies the held values of the block at `block` (their names numbered as the record's). */
  const copyHeld = (source: HeldValues, block: number, count: number): void => {
    room(count * VALUE);
    for (let i = 0; i < count; i += 1, at += VALUE) {
      source.value(block, i, words, at);
      const name = words[at];
      words[at] = placeOfHeld[name] ??= place(source.nameOf(name));
    }
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
      const identity = mark === LEARN_NONE ? undefined : identityOf(sent);
      const userKey = identity === undefined ? undefined : stateUserKey(identity);
      if (userKey === undefined) {
        words[at++] = LEARN_NONE;
        return;
      }
      const known = mark % 2 === 1;
      const block = (mark - 2 - (known ? 1 : 0)) / 2 - 1;
      const isHeld = block >= 0 && held?.holds(block) === true;
      if (isHeld) held!.keyHashOf(block);
      else keyHashInto(userKey);
      if (known) flags |= HAS_KNOWN_USERS;
      const head = at;
      words[head] = known ? KNOWN_USER : NEW_USER;
      words.set(KEY_HASH, head + 1);
      words[head + 5] = userKey.length;
      words[head + 6] = isHeld ? held!.rowOf(block) : 0;
      texts.push(userKey);
      at += USER_HEAD;
      if (isHeld) {
        const count = held!.count(block);
        copyHeld(held!, block, count);
        words[head + 4] = count;
      } else {
        forEachLearnedValue(sent, identity!.by, hashed);
        words[head + 4] = (at - head - USER_HEAD) / VALUE;
      }
    },
    /** The record, as a buffer of its own (it may be handed to another thread). */
    finish(): Uint8Array {
      const text = utf8.encode(names.join('') + texts.join(''));
      const nameWords = names.length;
      const size = (at + nameWords) * 4;
      const record = new Uint8Array(size + text.byteLength);
      const out = new Int32Array(record.buffer, 0, at + nameWords);
      out[0] = flags;
      out[1] = names.length;
      out[2] = items;
      out[3] = at + nameWords;
      names.forEach((name, i) => (out[HEAD + i] = name.length));
      out.set(words.subarray(HEAD, at), HEAD + nameWords);
      record.set(text, size);
      return record;
    },
  };
}

/** An attributes item of a learn record, as read: a cursor over its values, reused from item to item. */
export interface LearnedAttributes {
  userKey: string;
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
  const text = fromUtf8.decode(record.subarray(head[3] * 4));
  let textAt = 0;
  const names: string[] = [];
  for (let i = 0; i < head[1]; i += 1) {
    names.push(text.slice(textAt, textAt + words[HEAD + i]));
    textAt += words[HEAD + i];
  }
  const keysAt = textAt;
  let first = 0;
  const cursor: LearnedAttributes = {
    userKey: '',
    keyHash: 0,
    userPart: 0,
    row: 0,
    known: false,
    count: 0,
    name: (i) => words[first + i * VALUE],
    forget: (i) => words[first + i * VALUE + 1] === 1,
    h1: (i) => words[first + i * VALUE + 2],
    h2: (i) => words[first + i * VALUE + 3],
  };
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
        } else {
          cursor.known = tag === KNOWN_USER;
          cursor.keyHash = words[at + 1];
          cursor.userPart = (words[at + 2] & 0xfffff) * 2 ** 32 + (words[at + 3] >>> 0);
          cursor.count = words[at + 4];
          cursor.userKey = text.slice(textAt, textAt + words[at + 5]);
          cursor.row = words[at + 6] >>> 0;
          textAt += words[at + 5];
          first = at + USER_HEAD;
          at = first + cursor.count * VALUE;
          fn(index, cursor);
        }
      }
    },
  };
}
