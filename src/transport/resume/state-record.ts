// What the delta state compares and learns, as plain values and bytes: a user's key, a value's
// 64-bit hash, an event's 128-bit content hash, and the record of a request's items that the state
// learns once the server acknowledges them (made where the request is planned, read where it is
// settled; bytes, so it crosses between threads without a copy).
import { createHash } from 'node:crypto';
import type { Identity } from '../../model/identity.js';
import { parseTimeValue } from '../../model/time.js';

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
export function hash64(text: string): [number, number] {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
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
      return hash64(`s${value}`);
    case 'number':
      return hash64(`n${value}`);
    case 'boolean':
      return hash64(value ? 'b1' : 'b0');
    default:
      return hash64(value === null ? 'z' : `j${canonicalJson(value)}`);
  }
}

/** Operations whose effect adds to what the profile holds: sent again, they apply again. */
const ADDING_OPERATIONS: ReadonlySet<string> = new Set(['inc', 'add', 'remove', '$add', '$remove', '$update']);

/** Whether setting this value twice differs from setting it once (an increment, an addition to an array). */
export function isAddingOperation(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  let only: string | undefined;
  for (const key in value) {
    if (only !== undefined) return false;
    only = key;
  }
  return only !== undefined && ADDING_OPERATIONS.has(only);
}

/**
 * The 128-bit hash of an event's or a purchase's content: its kind, its user (as the state names
 * them), its time as an instant, and every other field by value. Two identical events collide by
 * design; two different ones with odds of about 1 in 2^128 (MD5 as a checksum, not for security).
 */
export function activityHash(kind: 'events' | 'purchases', item: Record<string, unknown>, userKey: string): Uint8Array {
  const { time, external_id: _e, user_alias: _a, service_id: _s, email: _m, phone: _p, ...rest } = item;
  const instant = typeof time === 'string' ? (parseTimeValue(time) ?? time) : time;
  const text = `${kind}\u0000${userKey}\u0000${String(instant)}\u0000${canonicalJson(rest)}`;
  return createHash('md5').update(text).digest();
}

/** How an item of a request is learned: not at all (an item of no user, an update for existing users only), its attributes, or its content (an event or a purchase). */
export const LearnTag = { None: 0, Attributes: 1, Activity: 2 } as const;
type LearnTags = typeof LearnTag;

/** An attribute's value the state learns (its hash), or forgets (an adding operation: what the profile holds is unknown). */
export type LearnedValue = { name: string; hash: [number, number] } | { name: string; forget: true };

/**
 * The learn record of a request: for each item, in the order attributes, events, purchases, what
 * the state records when the server accepts it. `forgetFirst`: the user is in the state already, so
 * the values about to change are forgotten before the request is posted (a stop between the post
 * and the answer must not leave an old value the server no longer holds).
 */
export function learnRecordWriter() {
  let bytes = Buffer.allocUnsafe(4096);
  let at = 0;
  const room = (n: number): void => {
    if (at + n <= bytes.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(bytes.length * 2, at + n));
    bytes.copy(bigger, 0, 0, at);
    bytes = bigger;
  };
  const text = (value: string): void => {
    const length = Buffer.byteLength(value);
    room(4 + length);
    bytes.writeUInt32LE(length, at);
    at += 4;
    at += bytes.write(value, at);
  };
  return {
    none(): void {
      room(1);
      bytes[at++] = LearnTag.None;
    },
    attributes(userKey: string, forgetFirst: boolean, values: readonly LearnedValue[]): void {
      room(6);
      bytes[at++] = LearnTag.Attributes;
      bytes[at++] = forgetFirst ? 1 : 0;
      bytes.writeUInt32LE(values.length, at);
      at += 4;
      text(userKey);
      for (const value of values) {
        text(value.name);
        room(9);
        if ('forget' in value) bytes[at++] = 1;
        else {
          bytes[at++] = 0;
          bytes.writeUInt32LE(value.hash[0], at);
          bytes.writeUInt32LE(value.hash[1], at + 4);
          at += 8;
        }
      }
    },
    activity(hash: Uint8Array): void {
      room(17);
      bytes[at++] = LearnTag.Activity;
      bytes.set(hash, at);
      at += 16;
    },
    /** The record, as bytes of its own (they may be handed to another thread). */
    finish(): Uint8Array {
      return new Uint8Array(bytes.subarray(0, at));
    },
  };
}

export type LearnedItem =
  | { tag: LearnTags['None'] }
  | { tag: LearnTags['Attributes']; userKey: string; forgetFirst: boolean; values: LearnedValue[] }
  | { tag: LearnTags['Activity']; hash: Uint8Array };

/** Reads a learn record back, item by item. */
export function* learnedItems(record: Uint8Array): Generator<LearnedItem> {
  const bytes = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  let at = 0;
  const text = (): string => {
    const length = bytes.readUInt32LE(at);
    at += 4;
    const value = bytes.toString('utf8', at, at + length);
    at += length;
    return value;
  };
  while (at < bytes.length) {
    const tag = bytes[at++];
    if (tag === LearnTag.None) {
      yield { tag };
    } else if (tag === LearnTag.Activity) {
      yield { tag, hash: bytes.subarray(at, at + 16) };
      at += 16;
    } else {
      const forgetFirst = bytes[at++] === 1;
      const count = bytes.readUInt32LE(at);
      at += 4;
      const userKey = text();
      const values: LearnedValue[] = [];
      for (let i = 0; i < count; i += 1) {
        const name = text();
        if (bytes[at++] === 1) values.push({ name, forget: true });
        else {
          values.push({ name, hash: [bytes.readUInt32LE(at), bytes.readUInt32LE(at + 4)] });
          at += 8;
        }
      }
      yield { tag: LearnTag.Attributes, userKey, forgetFirst, values };
    }
  }
}
