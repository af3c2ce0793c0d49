// The learn record of a request: what the delta state records of its items once the server accepts
// them, made where the request is planned and read where it is settled. One run of bytes a request
// (carved from a slab of them), handed on to the sending thread: 32-bit words (the items, the values' hashes as the
// plan holds them, copied rather than encoded one by one, three words a value), then the texts
// (attribute names, users' keys) as one UTF-8 run, written as they come. The reader decodes the
// names; a key stays bytes (a new user's is copied as it is into the state's pack) unless asked for.
// The planning thread makes them (learn-record-writer.ts); the state writer's thread reads them with
// this module alone, and so loads nothing a plan needs to make one.

/**
 * How the plan marks an item for its request's learn record: not learned (LEARN_NONE), an
 * activity's content hash, or the attributes of a user (userMark): a number, so that the items a
 * plan holds carry no object of their own.
 */
export type LearnMark = number | Uint8Array;
export const LEARN_NONE = 0;

export const NEW_USER = 1;
export const KNOWN_USER = 2;
export const ACTIVITY = 3;
/** A user's item held in doubt that set no value: nothing is learned of it (not even that the user exists). */
const UNSETTLED_USER = 4;
/** Words of a record's head: flags, names, items, words before the texts. */
export const HEAD = 4;
export const HAS_KNOWN_USERS = 1;
/** Words of a user's item before their values: tag, key hash lanes 0-2, values, key length (UTF-8 bytes), row id (0: not known). */
export const USER_HEAD = 7;
/**
 * Words of a value as a record holds it: its name (its place in the record's names) twice over and
 * 1 when it is forgotten, h1, h2. Values are written first as the plan holds them (VALUE words:
 * name, forget, h1, h2) and packed in place.
 */
export const VALUE = 4;
export const PACKED = 3;

// a text that begins with U+FEFF keeps it (a name or a key, not a byte-order mark)
const fromUtf8 = new TextDecoder('utf-8', { ignoreBOM: true });

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
