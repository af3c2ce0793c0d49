// A user's row in the state file and the target's index of them (user-index.ts): the row's bytes
// and digest, finding a row by its user's key, and the index as the file keeps it.
import type Database from 'better-sqlite3';
import { endianness } from 'node:os';
import { addDigest, digestPart, KEY_HASH, keyHashInto, userPart } from './state-record.js';
import { UserIndex } from './user-index.js';

/** Bytes of one attribute in a user's row: its name's id, then the two halves of its value's hash. */
export const ENTRY = 12;

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

/** The index as the file holds it (its shape, directory, depths, counts, then its slabs: little-endian), or undefined when it must be made from the rows (a run stopped before saving it). */
export function loadIndex(db: Database.Database, target: number): UserIndex | undefined {
  const fresh = db.prepare('SELECT fresh FROM targets WHERE id = ?').pluck().get(target) as number | undefined;
  if (fresh === undefined) return new UserIndex();
  if (fresh !== 1) return undefined;
  const parts = db.prepare('SELECT slots FROM user_index WHERE target = ? ORDER BY part').pluck().all(target) as Buffer[];
  if (parts.length < 4) return new UserIndex();
  const words = (bytes: Buffer): Uint32Array => {
    const copy = new Uint32Array(bytes.byteLength / 4);
    new Uint8Array(copy.buffer).set(bytes);
    if (BIG_ENDIAN) Buffer.from(copy.buffer).swap32();
    return copy;
  };
  const [shape, directory, depths, counts, ...slabs] = parts;
  return new UserIndex({ shape: words(shape), directory: words(directory), depths: new Uint8Array(depths), counts: new Uint8Array(counts), slabs: slabs.map(words) });
}

/** Writes the index over the one the file holds, and marks it as matching the rows (in the caller's transaction). */
export function saveIndex(db: Database.Database, target: number, index: UserIndex): void {
  const { shape, directory, depths, counts, slabs } = index.persist();
  db.prepare('DELETE FROM user_index WHERE target = ?').run(target);
  const insert = db.prepare('INSERT INTO user_index (target, part, slots) VALUES (?, ?, ?)');
  const bytes = (array: Uint32Array | Uint8Array): Buffer => {
    const view = Buffer.from(array.buffer, array.byteOffset, array.byteLength);
    return BIG_ENDIAN && array instanceof Uint32Array ? Buffer.from(view).swap32() : view;
  };
  [shape, directory, depths, counts, ...slabs].forEach((part, i) => insert.run(target, i, bytes(part)));
  db.prepare('UPDATE targets SET users = ?, fresh = 1 WHERE id = ?').run(index.size, target);
}

/**
 * Sets the digests of rows the index in the file holds (a run that changed known users and added
 * none), reading and writing only the slabs they are in; marks it as matching the rows. False when
 * it cannot (the index in the file does not hold one of them): the caller then saves it whole.
 */
export function patchIndex(db: Database.Database, target: number, changes: ReadonlyArray<readonly [number, number, number]>): boolean {
  const part = db.prepare('SELECT slots FROM user_index WHERE target = ? AND part = ?').pluck();
  // the bytes as read, seen as words where they lie (SQLite's copy of a blob starts a buffer of its own)
  const words = (bytes: Buffer | undefined): Uint32Array | undefined => {
    if (bytes === undefined) return undefined;
    if (BIG_ENDIAN) bytes.swap32();
    return bytes.byteOffset % 4 === 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) : new Uint32Array(new Uint8Array(bytes).buffer);
  };
  const shape = words(part.get(target, 0) as Buffer | undefined);
  const directory = words(part.get(target, 1) as Buffer | undefined);
  if (shape === undefined || directory === undefined) return false;
  const update = db.prepare('UPDATE user_index SET slots = ? WHERE target = ? AND part = ?');
  const patched = UserIndex.patch(
    shape,
    directory,
    changes,
    (index) => words(part.get(target, index + 4) as Buffer | undefined) ?? new Uint32Array(0),
    (index, slab) => {
      const bytes = Buffer.from(slab.buffer, slab.byteOffset, slab.byteLength);
      update.run(BIG_ENDIAN ? Buffer.from(bytes).swap32() : bytes, target, index + 4);
    },
  );
  if (patched) db.prepare('UPDATE targets SET fresh = 1 WHERE id = ?').run(target);
  return patched;
}

/** The index made from a target's rows (after a run stopped before it saved its own; seconds a million users). */
export function indexFromRows(db: Database.Database, target: number): UserIndex {
  const index = new UserIndex();
  for (const [id, user, attrs] of db.prepare('SELECT id, user, attrs FROM users WHERE target = ?').raw().iterate(target) as Iterable<[number, string, Buffer]>) {
    keyHashInto(user);
    index.add(KEY_HASH[0], id, rowDigest(userPart(), attrs));
  }
  return index;
}

/** Reads rows by id, for the users whose key hash leads to them: the one whose key is this user's. */
export function rowFinder(db: Database.Database, index: UserIndex) {
  const byId = db.prepare('SELECT user, attrs FROM users WHERE id = ?').raw();
  return (userKey: string, keyHash: number): { id: number; attrs: Buffer } | undefined => {
    let found: { id: number; attrs: Buffer } | undefined;
    index.find(keyHash, (id) => {
      const row = byId.get(id) as [string, Buffer] | undefined;
      if (row !== undefined && row[0] === userKey) found = { id, attrs: row[1] };
      return found !== undefined;
    });
    return found;
  };
}

