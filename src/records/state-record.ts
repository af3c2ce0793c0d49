// What the delta state compares, as plain values: a user's key and its hash, a value's 64-bit hash,
// an event's 128-bit content hash, which values of an item the state learns, and a row's digest.
// What a request's items teach the state once accepted is in learn-record.ts.
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

/** Whether a key is a control field (CONTROL_FIELDS): the names of attributes are mostly shorter than any of them. */
export const isControlField = (key: string): boolean => key.length >= 14 && CONTROL_FIELDS.has(key);

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
 * Where hash64Into() and valueHashInto() leave a hash: its two 32-bit halves, as signed integers
 * (no array a call, and numbers a call can pass without boxing them: small integers to V8).
 */
export const HASH = new Int32Array(2);

/**
 * A 64-bit hash of a text, as two 32-bit halves left in HASH: two multiply-xorshift lanes over its
 * UTF-16 code units. Not cryptographic: it tells one user's values apart (a false match needs two
 * values of one attribute of one user to collide, about 1 in 2^64), at a tenth of the cost of
 * node:crypto's digests on short texts.
 */
export function hash64Into(text: string, tag = 0): void {
  // the tag (a value's type) is mixed in first, as though it were the text's first character
  let h1 = Math.imul(0xdeadbeef ^ tag, 2654435761);
  let h2 = Math.imul(0x41c6ce57 ^ tag, 1597334677);
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  settleHash(h1, h2);
}

/** The two lanes of hash64Into mixed, left in HASH. */
function settleHash(lane1: number, lane2: number): void {
  const h1 = Math.imul(lane1 ^ (lane1 >>> 16), 2246822507) ^ Math.imul(lane2 ^ (lane2 >>> 13), 3266489909);
  HASH[0] = h1;
  HASH[1] = Math.imul(lane2 ^ (lane2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
}

/** Decimal digits of an integer, most significant last (integerHashInto's scratch: 16 digits at most). */
const DIGITS = new Uint8Array(16);

/** The hashes of the integers below SMALL (two lanes each), made when first asked for: counts and flags repeat. */
const SMALL = 1024;
const smallHashes = new Int32Array(SMALL * 2);
const smallHashed = new Uint8Array(SMALL);

/**
 * hash64Into(String(value), 0x6e) for a safe integer, without making the text: its digits are
 * hashed as the characters they are (a column of numbers hashes a million of them in a first run).
 */
function integerHashInto(value: number): void {
  // -0 is hashed as 0 (both are written "0")
  if (value >= 0 && value < SMALL) {
    if (smallHashed[value] === 1) {
      HASH[0] = smallHashes[value * 2];
      HASH[1] = smallHashes[value * 2 + 1];
      return;
    }
    digitsHashInto(value);
    smallHashes[value * 2] = HASH[0];
    smallHashes[value * 2 + 1] = HASH[1];
    smallHashed[value] = 1;
    return;
  }
  digitsHashInto(value);
}

/** integerHashInto(), from the digits. */
function digitsHashInto(value: number): void {
  let h1 = Math.imul(0xdeadbeef ^ 0x6e, 2654435761);
  let h2 = Math.imul(0x41c6ce57 ^ 0x6e, 1597334677);
  // -0 is written "0", as String() writes it
  if (value < 0) {
    h1 = Math.imul(h1 ^ 0x2d, 2654435761);
    h2 = Math.imul(h2 ^ 0x2d, 1597334677);
  }
  let rest = Math.abs(value);
  let digits = 0;
  do {
    const next = Math.floor(rest / 10);
    DIGITS[digits++] = rest - next * 10;
    rest = next;
  } while (rest > 0);
  while (digits > 0) {
    const c = 0x30 + DIGITS[--digits];
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  settleHash(h1, h2);
}

/** hash64Into() as a pair. */
export function hash64(text: string, tag = 0): [number, number] {
  hash64Into(text, tag);
  return [HASH[0], HASH[1]];
}

/** The hash of an attribute's value, left in HASH: its type and its value, objects and arrays by their canonical JSON. */
export function valueHashInto(value: unknown): void {
  switch (typeof value) {
    case 'string':
      return hash64Into(value, 0x73);
    case 'number':
      return Number.isSafeInteger(value) ? integerHashInto(value) : hash64Into(String(value), 0x6e);
    case 'boolean':
      return hash64Into(value ? '1' : '0', 0x62);
    default:
      return value === null ? hash64Into('', 0x7a) : hash64Into(canonicalJson(value), 0x6a);
  }
}

/** valueHashInto() as a pair. */
export function valueHash(value: unknown): [number, number] {
  valueHashInto(value);
  return [HASH[0], HASH[1]];
}

/**
 * What a row holds of an attribute a request sends while it is in flight, or of one an accepted item
 * set without the state learning its value (an operation that adds, an object merged, an item the
 * service may skip): a value the server may or may not hold. It matches no value (what is sent is
 * sent again) and is not a null (an emptied cell under --empty-as-null clears it), so neither a stop
 * before the answer nor a value not learned leaves either claim.
 */
export const IN_DOUBT: readonly [number, number] = [0, 0];

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

/** Whether an event's or a purchase's `properties` are an object that holds nothing (`{}`): the same event as one without. */
export function hasEmptyProperties(item: Record<string, unknown>): boolean {
  const properties = item.properties;
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) return false;
  for (const key in properties) if ((properties as Record<string, unknown>)[key] !== undefined) return false;
  return true;
}

/**
 * The 128-bit hash of an event's or a purchase's content: its kind, its user (as the state names
 * them), its time as an instant, and every other field by value; `"properties": {}` is hashed as no
 * properties (`asBefore`: kept, as states written before did, so that a lookup finds what they
 * learned). Two identical events collide by design; two different ones with odds of about 1 in
 * 2^128 (MD5 as a checksum, not for security).
 */
export function activityHash(kind: 'events' | 'purchases', item: Record<string, unknown>, userKey: string, asBefore = false): Uint8Array {
  const { time, external_id: _e, user_alias: _a, service_id: _s, email: _m, phone: _p, ...rest } = item;
  if (!asBefore && hasEmptyProperties(rest)) delete rest.properties;
  // a currency is a code in any case, and a purchase without a quantity is of one (decisions.md "Events and purchases")
  if (kind === 'purchases') {
    if (typeof rest.currency === 'string') rest.currency = rest.currency.toUpperCase();
    rest.quantity ??= 1;
  }
  const instant = typeof time === 'string' ? (parseTimeValue(time) ?? time) : time;
  const text = `${kind}\u0000${userKey}\u0000${String(instant)}\u0000${canonicalJson(rest)}`;
  return createHash('md5').update(text).digest();
}

/**
 * Whether the state learns no value of an attribute of an item (see forEachLearnedValue): `forgetAll`
 * when the service may skip the item, `merging` when it merges objects. A null is learned even then:
 * once accepted, the profile holds no value of it whether the service applied the item or skipped it.
 */
export const isForgotten = (value: unknown, forgetAll: boolean, merging: boolean): boolean =>
  value !== null && (forgetAll || isAddingOperation(value) || (merging && typeof value === 'object' && !Array.isArray(value)));

/**
 * Calls fn for each attribute of an attributes item that the state learns or forgets: forget for
 * an operation that adds (sent again it applies again), an object merged into what the profile
 * holds (`_merge_objects`: the profile then holds more than was sent), and every value but a null
 * of an item the service may skip; the identifier and the control fields are not attributes.
 */
export function forEachLearnedValue(
  item: Record<string, unknown>,
  identifiedBy: string,
  fn: (name: string, forget: boolean, h1: number, h2: number) => void,
): void {
  const forgetAll = mayBeSkipped(item, identifiedBy);
  const merging = item._merge_objects === true;
  for (const key in item) {
    if (key === identifiedBy || isControlField(key)) continue;
    const value = item[key];
    if (isForgotten(value, forgetAll, merging)) fn(key, true, 0, 0);
    else {
      valueHashInto(value);
      fn(key, false, HASH[0], HASH[1]);
    }
  }
}

/**
 * The learn record of a request: for each item, in the order attributes, events, purchases, what
 * the state records when the server accepts it. What a request sends of a user the state may know
 * is forgotten before it is posted (a stop between the post and the answer must not leave an old
 * value the server may no longer hold), and learned once it is accepted; what it leaves out as
 * unchanged stays as the state holds it. The names of attributes are written once.
 */
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

/** digest + part mod 2^52 (both below 2^52: their sum is exact, and below 2^53). */
export const addDigest = (digest: number, part: number): number => {
  const sum = digest + part;
  return sum >= TWO_52 ? sum - TWO_52 : sum;
};

/** Where keyHashInto() leaves a user's key's hash: three 32-bit lanes, signed (see HASH). */
export const KEY_HASH = new Int32Array(3);

/**
 * A 96-bit hash of a user's key, left in KEY_HASH: the first lane is what the state's index finds
 * the user by (user-index.ts), the first two tell users apart in a run (delta.ts), and the last 52
 * bits are the user's part of their row's digest (userPart), so that two users whose attributes are
 * the same have different digests: a row found under another user's lane (a collision of the
 * index) never passes for this user's.
 */
export function keyHashInto(userKey: string): void {
  keyPartsHashInto('', userKey);
}

/**
 * keyHashInto(`${head}${rest}`), without making that text: an item's key is its identifier's kind
 * and its value (stateUserKey), and most rows are named by an external id.
 */
function keyPartsHashInto(head: string, rest: string): void {
  let h1 = 0x2b6d6a5f;
  let h2 = 0x5bd1e995;
  let h3 = 0x7feb352d;
  for (let i = 0; i < head.length; i += 1) {
    const c = head.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
    h3 = Math.imul(h3 ^ c, 0x846ca68b);
  }
  for (let i = 0; i < rest.length; i += 1) {
    const c = rest.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
    h3 = Math.imul(h3 ^ c, 0x846ca68b);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h3 ^ (h3 >>> 13), 3266489909);
  h3 = Math.imul(h3 ^ (h3 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  KEY_HASH[0] = h1;
  KEY_HASH[1] = h2;
  KEY_HASH[2] = h3;
}

/**
 * keyHashInto(stateUserKey(identity)), without making the key's text when the identity is an
 * external id; false (KEY_HASH untouched) for an identity the state keeps no user of.
 */
export function identityKeyHashInto(identity: Identity): boolean {
  if (identity.by === 'external_id') {
    keyPartsHashInto('e:', identity.value);
    return true;
  }
  const userKey = stateUserKey(identity);
  if (userKey === undefined) return false;
  keyPartsHashInto('', userKey);
  return true;
}

/** The user's part of their row's digest, from the last 52 bits of KEY_HASH (see keyHashInto). */
export const userPart = (): number => (KEY_HASH[1] & 0xfffff) * 2 ** 32 + (KEY_HASH[2] >>> 0);
