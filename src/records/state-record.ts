// What the delta state compares and learns, as plain values and bytes: a user's key, a value's
// 64-bit hash, an event's 128-bit content hash, and the record of a request's items that the state
// learns once the server acknowledges them (made where the request is planned, read where it is
// settled; bytes, so it crosses between threads without a copy).
import { createHash } from 'node:crypto';
import { CONTROL_FIELDS } from '../model/fields.js';
import type { Identity } from '../model/identity.js';
import { parseTimeValue } from '../model/time.js';

/** The state's name for a user: the identifier the item uses, with its kind (an email in lower case). */
export function stateUserKey(identity: Identity): string | undefined {
  switch (identity.by) {
    case 'external_id':
      return `e:${identity.value}`;
    case 'service_id':
      return `s:${identity.value}`;
    case 'email':
      return `m:${identity.value.trim().toLowerCase()}`;
    case 'phone':
      return `p:${identity.value}`;
    case 'user_alias':
      return `a:${identity.value.alias_label}\u0000${identity.value.alias_name}`;
    case 'anonymous':
      return undefined;
  }
}

/** JSON with every object's keys in order: two values that are equal compare equal, whatever order their keys came in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * A 64-bit hash of a text, as two 32-bit halves: two multiply-xorshift lanes over its UTF-16 code
 * units. Not cryptographic: it tells one user's values apart (a false match needs two values of
 * one attribute of one user to collide, about 1 in 2^64), at a tenth of the cost of node:crypto's
 * digests on short texts.
 */
export function hash64(text: string, tag = 0): [number, number] {
  // the tag (a value's type) is mixed in first, as though it were the text's first character
  let h1 = Math.imul(0xdeadbeef ^ tag, 2654435761);
  let h2 = Math.imul(0x41c6ce57 ^ tag, 1597334677);
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return [h1 >>> 0, h2 >>> 0];
}

/** The hash of an attribute's value: its type and its value, objects and arrays by their canonical JSON. */
export function valueHash(value: unknown): [number, number] {
  switch (typeof value) {
    case 'string':
      return hash64(value, 0x73);
    case 'number':
      return hash64(String(value), 0x6e);
    case 'boolean':
      return hash64(value ? '1' : '0', 0x62);
    default:
      return value === null ? hash64('', 0x7a) : hash64(canonicalJson(value), 0x6a);
  }
}

/** Operations whose effect adds to what the profile holds: sent again, they apply again. */
const ADDING_OPERATIONS: ReadonlySet<string> = new Set(['inc', 'add', 'remove', '$add', '$remove', '$update']);

/** Whether setting this value twice differs from setting it once (an increment, an addition to an array, or several of them). */
export function isAddingOperation(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  let keys = 0;
  for (const key in value) {
    if (!ADDING_OPERATIONS.has(key)) return false;
    keys += 1;
  }
  return keys > 0;
}

/** A name that makes a nested field an operation that adds (`visits.inc` sets `{"visits": {"inc": n}}`). */
export const isAddingOperationName = (name: string): boolean => ADDING_OPERATIONS.has(name);

/**
 * Whether the service may skip the item without a word (spec 2.3, decisions.md): an update of
 * existing profiles only (`_update_existing_only`, the default for a `user_alias`), or an item named
 * by `service_id`, which creates no profile. What it sends is never learned: it may not be held.
 */
export function mayBeSkipped(item: Record<string, unknown>, identifiedBy: string): boolean {
  const only = item._update_existing_only;
  return only === true || identifiedBy === 'service_id' || (identifiedBy === 'user_alias' && only !== false);
}

/**
 * The 128-bit hash of an event's or a purchase's content: its kind, its user (as the state names
 * them), its time as an instant, and every other field by value. Two identical events collide by
 * design; two different ones with odds of about 1 in 2^128 (MD5 as a checksum, not for security).
 */
export function activityHash(kind: 'events' | 'purchases', item: Record<string, unknown>, userKey: string): Uint8Array {
  const { time, external_id: _e, user_alias: _a, service_id: _s, email: _m, phone: _p, ...rest } = item;
  // a currency is a code in any case, and a purchase without a quantity is of one (decisions.md "Events and purchases")
  if (kind === 'purchases') {
    if (typeof rest.currency === 'string') rest.currency = rest.currency.toUpperCase();
    rest.quantity ??= 1;
  }
  const instant = typeof time === 'string' ? (parseTimeValue(time) ?? time) : time;
  const text = `${kind}\u0000${userKey}\u0000${String(instant)}\u0000${canonicalJson(rest)}`;
  return createHash('md5').update(text).digest();
}

/** How the plan marks an item for its request's learn record: not learned, attributes of a user the state does not know or may know, or an activity's content hash. */
export type LearnMark = typeof LEARN_NONE | typeof LEARN_NEW_USER | KnownUser | Uint8Array;
/** A user the state may know: the row is replaced by what `item` sets (the whole item, before what was unchanged was left out). */
export interface KnownUser {
  item: Record<string, unknown>;
}
export const LEARN_NONE = 0;
export const LEARN_NEW_USER = 1;
export const LEARN_KNOWN_USER = 2;
const ACTIVITY = 3;
/** Bytes of an attribute in a record: its name's place in the record's names, its mode, the two halves of the hash. */
const ENTRY = 13;
const SENT = 0;
const FORGET = 1;
/** A value the state held and the request left out as unchanged: written back only where the row was not written meanwhile. */
const UNCHANGED = 2;

/**
 * Calls fn for each attribute of an attributes item that the state learns or forgets: forget for
 * an operation that adds (sent again it applies again), an object merged into what the profile
 * holds (`_merge_objects`: the profile then holds more than was sent), and every value of an item
 * the service may skip; the identifier and the control fields are not attributes.
 */
export function forEachLearnedValue(
  item: Record<string, unknown>,
  identifiedBy: string,
  fn: (name: string, forget: boolean, h1: number, h2: number) => void,
): void {
  const forgetAll = mayBeSkipped(item, identifiedBy);
  const merging = item._merge_objects === true;
  for (const key in item) {
    if (key === identifiedBy || CONTROL_FIELDS.has(key)) continue;
    const value = item[key];
    if (forgetAll || isAddingOperation(value) || (merging && typeof value === 'object' && value !== null && !Array.isArray(value))) fn(key, true, 0, 0);
    else {
      const [h1, h2] = valueHash(value);
      fn(key, false, h1, h2);
    }
  }
}

/**
 * The learn record of a request: for each item, in the order attributes, events, purchases, what
 * the state records when the server accepts it. A user the state may know already is forgotten
 * before the request is posted (a stop between the post and the answer must not leave an old value
 * the server no longer holds), and written again from the whole item once it is accepted: what was
 * left out as unchanged is known again. The names of attributes are written once.
 */
export function learnRecordWriter() {
  let bytes = Buffer.allocUnsafe(8192);
  let at = 0;
  const names = new Map<string, number>();
  const room = (n: number): void => {
    if (at + n <= bytes.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(bytes.length * 2, at + n));
    bytes.copy(bigger, 0, 0, at);
    bytes = bigger;
  };
  const text = (value: string): void => {
    room(4 + value.length * 3);
    const length = bytes.write(value, at + 4);
    bytes.writeUInt32LE(length, at);
    at += 4 + length;
  };
  /** mode: SENT, FORGET, or UNCHANGED (a known value left out of the request). */
  const value = (name: string, mode: number, h1: number, h2: number): void => {
    let place = names.get(name);
    if (place === undefined) names.set(name, (place = names.size));
    room(ENTRY);
    bytes.writeUInt32LE(place, at);
    bytes[at + 4] = mode;
    bytes.writeUInt32LE(h1, at + 5);
    bytes.writeUInt32LE(h2, at + 9);
    at += ENTRY;
  };
  return {
    /** Adds an item: `mark` says how it is learned; an attributes item's values are hashed here. */
    add(mark: LearnMark, sent: Record<string, unknown>, identity: Identity): void {
      if (mark instanceof Uint8Array) {
        room(17);
        bytes[at++] = ACTIVITY;
        bytes.set(mark, at);
        at += 16;
        return;
      }
      const userKey = mark === LEARN_NONE ? undefined : stateUserKey(identity);
      room(1);
      if (userKey === undefined) {
        bytes[at++] = LEARN_NONE;
        return;
      }
      bytes[at++] = typeof mark === 'object' ? LEARN_KNOWN_USER : mark;
      text(userKey);
      room(4);
      const countAt = at;
      at += 4;
      let count = 0;
      forEachLearnedValue(typeof mark === 'object' ? mark.item : sent, identity.by, (name, forget, h1, h2) => {
        value(name, forget ? FORGET : name in sent ? SENT : UNCHANGED, h1, h2);
        count += 1;
      });
      bytes.writeUInt32LE(count, countAt);
    },
    /** The record, as bytes of its own (they may be handed to another thread): the names, then the items. */
    finish(): Uint8Array {
      let size = 4;
      for (const name of names.keys()) size += 4 + Buffer.byteLength(name);
      const record = Buffer.allocUnsafe(size + at);
      record.writeUInt32LE(names.size, 0);
      let offset = 4;
      for (const name of names.keys()) {
        const length = record.write(name, offset + 4);
        record.writeUInt32LE(length, offset);
        offset += 4 + length;
      }
      bytes.copy(record, offset, 0, at);
      return new Uint8Array(record.buffer, record.byteOffset, record.byteLength);
    },
  };
}

/** An attributes item of a learn record, as read: a cursor over its values, reused from item to item. */
export interface LearnedAttributes {
  userKey: string;
  /** The state may know the user (forget before posting, merge when learning). */
  known: boolean;
  count: number;
  /** The value's attribute, as its place in the record's names. */
  name(i: number): number;
  forget(i: number): boolean;
  /** A value the state held and the request left out (unchanged). */
  unchanged(i: number): boolean;
  h1(i: number): number;
  h2(i: number): number;
}

/** A learn record as read: the names its attributes use, and each item by its place in the body (undefined: nothing to learn). */
export function readLearnRecord(record: Uint8Array): { names: string[]; forEach(fn: (index: number, item: LearnedAttributes | Uint8Array | undefined) => void): void } {
  const bytes = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  let at = 4;
  const text = (): string => {
    const length = bytes.readUInt32LE(at);
    const value = bytes.toString('utf8', at + 4, at + 4 + length);
    at += 4 + length;
    return value;
  };
  const names: string[] = [];
  for (let n = bytes.readUInt32LE(0); n > 0; n -= 1) names.push(text());
  const itemsAt = at;
  let first = 0;
  const cursor: LearnedAttributes = {
    userKey: '',
    known: false,
    count: 0,
    name: (i) => bytes.readUInt32LE(first + i * ENTRY),
    forget: (i) => bytes[first + i * ENTRY + 4] === FORGET,
    unchanged: (i) => bytes[first + i * ENTRY + 4] === UNCHANGED,
    h1: (i) => bytes.readUInt32LE(first + i * ENTRY + 5),
    h2: (i) => bytes.readUInt32LE(first + i * ENTRY + 9),
  };
  return {
    names,
    forEach(fn) {
      at = itemsAt;
      for (let index = 0; at < bytes.length; index += 1) {
        const tag = bytes[at++];
        if (tag === LEARN_NONE) fn(index, undefined);
        else if (tag === ACTIVITY) {
          fn(index, record.subarray(at, at + 16));
          at += 16;
        } else {
          cursor.known = tag === LEARN_KNOWN_USER;
          cursor.userKey = text();
          cursor.count = bytes.readUInt32LE(at);
          first = at + 4;
          at = first + cursor.count * ENTRY;
          fn(index, cursor);
        }
      }
    },
  };
}

const TWO_52 = 2 ** 52;

/**
 * One attribute's part of a row digest: 52 bits of its name's id and its value's hash. A row's
 * digest is the sum of its attributes' parts (mod 2^52), so it does not depend on their order.
 */
export function digestPart(nameId: number, h1: number, h2: number): number {
  const a = Math.imul(h1 ^ Math.imul(nameId + 1, 0x9e3779b1), 0x85ebca6b) >>> 0;
  const b = Math.imul(h2 ^ Math.imul(nameId + 1, 0x27d4eb2f), 0xc2b2ae35) >>> 0;
  return (a & 0xfffff) * 2 ** 32 + b;
}

export const addDigest = (digest: number, part: number): number => (digest + part) % TWO_52;
