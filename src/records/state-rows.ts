// A user's row in the state file and the target's index of them (user-index.ts): the row's bytes
// and digest, the packs that hold the rows, finding a row by its user's key, and the index as the
// file keeps it.
import type Database from '../sqlite.js';
import { endianness } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { addDigest, digestPart, KEY_HASH, keyHashInto, userPart } from './state-record.js';
import type { PartedEntries } from './parted-entries.js';
import { ReadIndex, type UserLookup } from './read-index.js';
import { type IndexEntries, type PersistedIndex, persistedLengths, UserIndex } from './user-index.js';

/** Bytes of one attribute in a user's row: its name's id, then the two halves of its value's hash. */
export const ENTRY = 12;

/**
 * Users' rows a pack holds at most. A pack is one row of the file (one insert for PACK new users,
 * where each would cost one); a user is found by their slot: their pack's id times PACK, plus their
 * place in it. Its bytes: per user, the byte length of their key (UTF-8) and the attributes of their
 * row (each a varint: 7 bits a byte, low bits first, 0x80 on every byte but the last), then the key
 * and the row.
 */
export const PACK = 16;
/** Bytes a pack of new users is closed at (when the next one might not fit): four packs then fill a 4 KiB page of the file (sixteen or more the 16 KiB page of a new one), where three packs of 16 longer ones would leave a quarter of it unused. */
export const PACK_BYTES = 1000;

/** A user's key and row, as a pack holds them. */
export interface PackedUser {
  key: string;
  attrs: Buffer;
}

/** Bytes of the varint of `value`. */
export const varintBytes = (value: number): number => (value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5);

/** Writes `value` as a varint of `size` bytes (longer than it needs when the size was set aside before the value was known); where it ends. */
export function writeVarint(bytes: Buffer, at: number, value: number, size = varintBytes(value)): number {
  for (let i = 0; i < size - 1; i += 1) {
    bytes[at + i] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  bytes[at + size - 1] = value;
  return at + size;
}

/**
 * Walks a pack's users: calls fn with where each one's key starts and ends and their row ends, until
 * it returns true. A pack whose lengths run past its end (its bytes damaged) is refused as a damaged
 * file is (SQLITE_CORRUPT: state-file.ts names the file), where it would be read on without end.
 */
function walkPack(bytes: Buffer, fn: (keyStart: number, keyEnd: number, end: number) => boolean): void {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let scale = 1; at < bytes.length && scale <= 0x80 ** 4; scale *= 0x80) {
      const byte = bytes[at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
    throw damagedPack();
  };
  while (at < bytes.length) {
    const keyLength = varint();
    const rowLength = varint() * ENTRY;
    const keyStart = at;
    at += keyLength + rowLength;
    if (at > bytes.length) throw damagedPack();
    if (fn(keyStart, keyStart + keyLength, at)) return;
  }
}

const damagedPack = (): Error => Object.assign(new Error('a pack of users in it is malformed'), { code: 'SQLITE_CORRUPT' });

/** The users a pack holds, by place. */
export function unpack(bytes: Buffer): PackedUser[] {
  const users: PackedUser[] = [];
  walkPack(bytes, (keyStart, keyEnd, end) => {
    users.push({ key: bytes.toString('utf8', keyStart, keyEnd), attrs: bytes.subarray(keyEnd, end) });
    return false;
  });
  return users;
}

/** Where the user at `place` in a pack is (their row from `keyEnd` to `end`; they begin at `start`), when it holds this user (by key) there. */
export function userInPack(bytes: Buffer, place: number, userKey: string): { start: number; keyEnd: number; end: number } | undefined {
  const at = packPlace(bytes, place);
  return at !== undefined && bytes.toString('utf8', at.keyStart, at.keyEnd) === userKey ? at : undefined;
}

/** Where the user at `place` in a pack is (their key and their row, from `start` to `end`), when it holds one there. */
function packPlace(bytes: Buffer, place: number): { start: number; keyStart: number; keyEnd: number; end: number } | undefined {
  let found: { start: number; keyStart: number; keyEnd: number; end: number } | undefined;
  let i = 0;
  let start = 0;
  walkPack(bytes, (keyStart, keyEnd, end) => {
    if (i++ === place) found = { start, keyStart, keyEnd, end };
    start = end;
    return found !== undefined;
  });
  return found;
}

/** A pack's bytes with the user from `start` to `end` given a new row (the others as they are). */
export function packWith(bytes: Buffer, start: number, end: number, user: PackedUser): Buffer {
  return Buffer.concat([bytes.subarray(0, start), packBytes([user]), bytes.subarray(end)]);
}

/** A pack's bytes. */
export function packBytes(users: readonly PackedUser[]): Buffer {
  const keys = users.map((user) => Buffer.from(user.key, 'utf8'));
  const size = (user: PackedUser, i: number): number => varintBytes(keys[i].length) + varintBytes(user.attrs.length / ENTRY) + keys[i].length + user.attrs.length;
  const bytes = Buffer.allocUnsafe(users.reduce((sum, user, i) => sum + size(user, i), 0));
  let at = 0;
  users.forEach((user, i) => {
    at = writeVarint(bytes, writeVarint(bytes, at, keys[i].length), user.attrs.length / ENTRY);
    at += keys[i].copy(bytes, at);
    at += user.attrs.copy(bytes, at);
  });
  return bytes;
}

/** Users of a target whose rows hold an attribute, and the attributes their rows hold. */
export function userTotals(db: Database.Database, target: number): { users: number; attributes: number } {
  let users = 0;
  let bytes = 0;
  for (const pack of db.prepare('SELECT users FROM packs WHERE target = ?').pluck().iterate(target) as Iterable<Buffer>) {
    for (const user of unpack(pack)) {
      if (user.attrs.length > 0) users += 1;
      bytes += user.attrs.length;
    }
  }
  return { users, attributes: bytes / ENTRY };
}

/** A row's attributes by name id. */
export type RowValues = Map<number, readonly [number, number]>;

/** The attributes of a row's bytes, by name id. */
export function rowValues(attrs: Uint8Array): Map<number, readonly [number, number]> {
  const view = new DataView(attrs.buffer, attrs.byteOffset, attrs.byteLength);
  const map = new Map<number, readonly [number, number]>();
  for (let at = 0; at + ENTRY <= attrs.byteLength; at += ENTRY) map.set(view.getUint32(at, true), [view.getInt32(at + 4, true), view.getInt32(at + 8, true)]);
  return map;
}

/** A row's bytes. */
export function rowBytes(values: RowValues): Buffer {
  const bytes = Buffer.allocUnsafe(values.size * ENTRY);
  let at = 0;
  for (const [id, [h1, h2]] of values) {
    bytes.writeUInt32LE(id, at);
    bytes.writeInt32LE(h1, at + 4);
    bytes.writeInt32LE(h2, at + 8);
    at += ENTRY;
  }
  return bytes;
}

/** The digest of a user's row: their part (keyHashInto) and their attributes' parts (state-record.ts). */
export function rowDigest(ofUser: number, attrs: Uint8Array): number {
  const view = new DataView(attrs.buffer, attrs.byteOffset, attrs.byteLength);
  let digest = ofUser;
  for (let at = 0; at + ENTRY <= attrs.byteLength; at += ENTRY) {
    digest = addDigest(digest, digestPart(view.getUint32(at, true), view.getInt32(at + 4, true), view.getInt32(at + 8, true)));
  }
  return digest;
}

const BIG_ENDIAN = endianness() === 'BE';

/**
 * The index as the file holds it (its shape, directory, depths, counts, then its slabs: little-endian),
 * or undefined when it must be made from the rows (a run stopped before saving it, or one holding a
 * row twice: UserIndex.holdsARowTwice). One not as
 * saveIndex wrote it (a part missing, or of another length) is refused as a damaged file is.
 * `asTheRunBegan`: read though marked out of date, by the writer of the run that marked it, which
 * knows it matched the rows when the run began (and brings it up to date with what the run wrote).
 */
export function loadIndex(db: Database.Database, target: number, asTheRunBegan = false): UserIndex | undefined {
  const parts = indexParts(db, target, asTheRunBegan);
  if (parts === undefined || parts === EMPTY) return parts === EMPTY ? new UserIndex() : undefined;
  return wholeIndex(parts);
}

/** The index of its parts, held whole; undefined when it holds a row twice. */
function wholeIndex(parts: SavedParts): UserIndex | undefined {
  // the slabs are the buffers SQLite's copies came in (no second copy of the index while it loads)
  const index = new UserIndex({ ...parts, slabs: [...parts.slabs] });
  // one an earlier track saved holding a user twice, one of the two at their earlier digest, is made again from the rows
  return index.holdsARowTwice() ? undefined : index;
}

/**
 * The index as a plan reads it (read-index.ts: 12 bytes a user, 8 past a million given `rowsTo`, the
 * folder its rows are then written to), packed from the file's a slab at a time; undefined when it
 * must be made from the rows (see loadIndex).
 */
export function loadReadIndex(db: Database.Database, target: number, rowsTo?: string): UserLookup | undefined {
  const parts = indexParts(db, target, false);
  if (parts === undefined || parts === EMPTY) return parts === EMPTY ? new UserIndex() : undefined;
  // (a packed index numbers its entries in 27 bits: one of more users is read as the writer reads it)
  if (parts.shape[2] > ReadIndex.MOST) return wholeIndex(parts);
  return ReadIndex.of(parts.shape, parts.directory, parts.slabs, rowsTo);
}

/**
 * Calls fn with each entry of the index the file holds (as the run began: see loadIndex), a slab at a
 * time, never the whole index held; false when it holds a row twice (UserIndex.holdsARowTwice: it
 * is to be made from the rows).
 */
export function forEachSavedEntry(db: Database.Database, target: number, fn: (key: number, row: number, digest: number) => void): boolean {
  const parts = indexParts(db, target, true);
  if (parts === undefined || parts === EMPTY) return true;
  for (const slab of parts.slabs) if (!UserIndex.forEachIn(slab, fn)) return false;
  return true;
}

const EMPTY = 'empty';

/** The parts of a saved index, its slabs read as they are asked for. */
type SavedParts = Omit<PersistedIndex, 'slabs'> & { slabs: Iterable<Uint32Array> };

/**
 * The parts of the index the file holds: its shape, directory, depths and counts, and its slabs as
 * they are read (one at a time, each checked); EMPTY for a target with no user, undefined for an
 * index marked out of date (see loadIndex). One not as saveIndex wrote it is a damaged file.
 */
function indexParts(db: Database.Database, target: number, asTheRunBegan: boolean): SavedParts | typeof EMPTY | undefined {
  const state = db.prepare('SELECT fresh, users FROM targets WHERE id = ?').get(target) as { fresh: number; users: number } | undefined;
  if (state === undefined) return EMPTY;
  if (state.fresh !== 1 && !asTheRunBegan) return undefined;
  const first = db.prepare('SELECT part, slots FROM user_index WHERE target = ? AND part < 4 ORDER BY part').raw().all(target) as Array<[number, Buffer]>;
  if (first.length === 0 && state.users === 0) return EMPTY;
  const head = indexHead(first[0]?.[1], first[1]?.[1]);
  if (head === undefined || first.length !== 4 || first.some(([part, bytes], i) => part !== i || bytes.length !== head.lengths[i])) throw damagedIndex();
  const slabs = db.prepare('SELECT part, slots FROM user_index WHERE target = ? AND part >= 4 ORDER BY part').raw();
  function* read(): Generator<Uint32Array> {
    let part = 4;
    for (const [at, bytes] of slabs.iterate(target) as Iterable<[number, Buffer]>) {
      if (at !== part || bytes.length !== head!.lengths[part]) throw damagedIndex();
      part += 1;
      yield wordsOf(bytes);
      // every 16 MiB of slabs read, those packed and let go of are freed (see collectYoung)
      if (part % 16 === 0) collectYoung();
    }
    if (part !== head!.lengths.length) throw damagedIndex();
  }
  return { shape: head.shape, directory: head.directory, depths: new Uint8Array(first[2][1]), counts: new Uint8Array(first[3][1]), slabs: read() };
}

const damagedIndex = (): Error => Object.assign(new Error('its index of users is malformed'), { code: 'SQLITE_CORRUPT' });

/** The shape and directory of an index as read, and the byte length of each of its parts; undefined when they are not as saved (a directory naming a bucket it has not). */
function indexHead(shapeBytes: Buffer | undefined, directoryBytes: Buffer | undefined): { shape: Uint32Array; directory: Uint32Array; lengths: number[] } | undefined {
  if (shapeBytes?.length !== 12 || directoryBytes === undefined) return undefined;
  const shape = wordsOf(shapeBytes);
  const lengths = persistedLengths(shape);
  if (lengths === undefined || directoryBytes.length !== lengths[1]) return undefined;
  const directory = wordsOf(directoryBytes);
  return directory.every((bucket) => bucket < shape[1]) ? { shape, directory, lengths } : undefined;
}

/**
 * A part of the index as read (its little-endian words), seen where it lies: better-sqlite3 gives
 * each blob in a buffer of its own, which this then owns (copied only when it is not 4-byte aligned).
 */
export function wordsOf(bytes: Buffer): Uint32Array {
  if (BIG_ENDIAN) bytes.swap32();
  return bytes.byteOffset % 4 === 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) : new Uint32Array(new Uint8Array(bytes).buffer);
}

/**
 * Writes the index over the one the file holds, and marks it as matching the rows (in the caller's
 * transaction). Given entries, it writes the index they make, laid out a slab at a time (one slab
 * of it held, never the whole index), and the entries hold none after (their memory let go of once
 * the last part is laid out).
 */
export function saveIndex(db: Database.Database, target: number, index: UserIndex | PartedEntries): void {
  db.prepare('DELETE FROM user_index WHERE target = ?').run(target);
  const insert = db.prepare('INSERT INTO user_index (target, part, slots) VALUES (?, ?, ?)');
  const write = (part: number, array: Uint32Array | Uint8Array): void => {
    const view = Buffer.from(array.buffer, array.byteOffset, array.byteLength);
    insert.run(target, part, BIG_ENDIAN && array instanceof Uint32Array ? Buffer.from(view).swap32() : view);
  };
  let head: Omit<PersistedIndex, 'slabs'>;
  if (index instanceof UserIndex) {
    const { slabs, ...rest } = index.persist();
    slabs.forEach((slab, i) => write(i + 4, slab));
    head = rest;
  } else head = UserIndex.lay(index, (i, words) => write(i + 4, words), true);
  const { shape, directory, depths, counts } = head;
  [shape, directory, depths, counts].forEach((part, i) => write(i, part));
  db.prepare('UPDATE targets SET users = ?, fresh = 1 WHERE id = ?').run(shape[2], target);
}

/**
 * Sets the digests of rows the index in the file holds (a run that changed known users and added
 * none), reading and writing only the slabs they are in; marks it as matching the rows. False when
 * it cannot (the index in the file does not hold one of them, or is not as saved): the caller then saves it whole.
 */
export function patchIndex(db: Database.Database, target: number, changes: IndexEntries): boolean {
  const part = db.prepare('SELECT slots FROM user_index WHERE target = ? AND part = ?').pluck();
  const head = indexHead(part.get(target, 0) as Buffer | undefined, part.get(target, 1) as Buffer | undefined);
  if (head === undefined) return false;
  const update = db.prepare('UPDATE user_index SET slots = ? WHERE target = ? AND part = ?');
  const patched = UserIndex.patch(
    head.shape,
    head.directory,
    changes,
    (index) => {
      // the slabs read before, done with, are freed first: at most two are held, not the whole index
      collectYoung();
      const bytes = part.get(target, index + 4) as Buffer | undefined;
      return bytes?.length === head.lengths[index + 4] ? wordsOf(bytes) : undefined;
    },
    (index, slab) => {
      const bytes = Buffer.from(slab.buffer, slab.byteOffset, slab.byteLength);
      update.run(BIG_ENDIAN ? Buffer.from(bytes).swap32() : bytes, target, index + 4);
    },
  );
  if (patched) db.prepare('UPDATE targets SET fresh = 1 WHERE id = ?').run(target);
  return patched;
}

/**
 * Collects the young objects of this thread's heap. A blob read comes in a buffer of its own (1 MiB
 * for a slab of the index), outside the heap: the collector, which runs by what the heap holds, would
 * keep every slab a patch read and let go of until the end of the run (24 of them a million users).
 * Where the runtime gives no collector to call, the slabs wait for it as before.
 */
function collectYoung(): void {
  if (collector === undefined) collector = youngCollector();
  collector?.();
}
let collector: (() => void) | null | undefined;

/**
 * The runtime's collector of young objects, taken from a context of its own, or null. The flag that
 * gives one (process-wide: every thread's) is set only while that context is made, then cleared
 * again, unless the process was started with it: a context or a worker the process makes later,
 * a library user's included, gets no `gc` it would not have had.
 */
function youngCollector(): (() => void) | null {
  const take = (): unknown => runInNewContext('typeof gc === "function" ? gc : null');
  let gc = take();
  if (gc === null) {
    setFlagsFromString('--expose-gc');
    try {
      gc = take();
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  return typeof gc === 'function' ? () => gc({ type: 'minor' }) : null;
}

/** The index made from a target's rows (after a run stopped before it saved its own; seconds a million users). */
export function indexFromRows(db: Database.Database, target: number): UserIndex {
  const index = new UserIndex();
  for (const [id, pack] of db.prepare('SELECT id, users FROM packs WHERE target = ?').raw().iterate(target) as Iterable<[number, Buffer]>) {
    unpack(pack).forEach((user, place) => {
      keyHashInto(user.key);
      index.add(KEY_HASH[0], id * PACK + place, rowDigest(userPart(), user.attrs));
    });
  }
  return index;
}

/** Reads rows by slot (see PACK), for the users whose key hash leads to them: the one whose key is this user's. */
export function rowFinder(db: Database.Database, index: UserLookup) {
  const byId = db.prepare('SELECT users FROM packs WHERE id = ?').pluck();
  return (userKey: string, keyHash: number): { id: number; attrs: Buffer } | undefined => {
    let found: { id: number; attrs: Buffer } | undefined;
    index.find(keyHash, (slot) => {
      const pack = byId.get(Math.floor(slot / PACK)) as Buffer | undefined;
      const at = pack && userInPack(pack, slot % PACK, userKey);
      if (pack !== undefined && at !== undefined) found = { id: slot, attrs: pack.subarray(at.keyEnd, at.end) };
      return found !== undefined;
    });
    return found;
  };
}

