// The delta state file (--state, SQLite): for each target, what the server acknowledged of each user
// (a 64-bit hash of each attribute's last value) and the content hash of each event and purchase.
// The plan reads it to leave out what has not changed; the sender writes it only from the server's
// acknowledgements, and forgets a known user's values before posting new ones, so that no stop, a
// kill included, leaves the state claiming a value the server may no longer hold. This is a store
// with a lifetime, as the emulator's is: the one other module that opens SQLite.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { learnedItems, LearnTag, type LearnedValue } from './state-record.js';

/** Bytes of one attribute in a user's row: its name's id, then the two halves of its value's hash. */
const ENTRY = 12;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS targets (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, updated TEXT);
CREATE TABLE IF NOT EXISTS names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS users (target INTEGER NOT NULL, user TEXT NOT NULL, attrs BLOB NOT NULL, PRIMARY KEY (target, user)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS activities (target INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (target, hash)) WITHOUT ROWID;
`;
const FORMAT = '1';

/** What the state holds of one target. */
export interface TargetState {
  url: string;
  users: number;
  attributes: number;
  /** Events and purchases it holds the content of (--dedupe-events). */
  activities: number;
  /** When the server last acknowledged something to it (ISO 8601), if ever. */
  updated?: string;
}

/** What a plan reads of a target's state. */
export interface StateReader {
  /** True when the state holds nothing of this target: there is nothing to compare with. */
  readonly empty: boolean;
  /** The user's attributes as the server acknowledged them, or undefined for a user the state does not know. */
  user(userKey: string): UserState | undefined;
  /** True when the server acknowledged an event or purchase of this content. */
  hasActivity(hash: Uint8Array): boolean;
  close(): void;
}

/** One user's acknowledged attributes. */
export interface UserState {
  /** True when the attribute's last acknowledged value has this hash. */
  holds(name: string, hash: readonly [number, number]): boolean;
}

/** What a delivery writes: before a request is posted, and once the server accepted its items. */
export interface StateWriter {
  /** Forgets the values a request is about to change of users the state knows. */
  sending(learn: Uint8Array): void;
  /** Records the request's accepted items: `rejected(i)` for the items (in body order) the server refused. */
  accepted(learn: Uint8Array, rejected: (index: number) => boolean): void;
  close(): void;
}

function open(path: string, readonly: boolean): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: readonly });
  } catch (error) {
    throw new UsageError(`--state ${path} cannot be opened: ${(error as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 5000');
    if (readonly) {
      const format = (db.prepare("SELECT value FROM meta WHERE key = 'format'").pluck().get() as string | undefined) ?? FORMAT;
      if (format !== FORMAT) throw new Error(`it was written by another version of track (format ${format})`);
      return db;
    }
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)").run(FORMAT);
    const format = db.prepare("SELECT value FROM meta WHERE key = 'format'").pluck().get() as string;
    if (format !== FORMAT) throw new Error(`it was written by another version of track (format ${format})`);
    return db;
  } catch (error) {
    db.close();
    const message = (error as Error).message;
    throw new UsageError(`--state ${path} ${/not a database|malformed/i.test(message) ? 'is not a state file' : `cannot be used: ${message}`}`);
  }
}

/** The entries of a user's row, by name id. */
function entries(attrs: Uint8Array): Map<number, [number, number]> {
  const view = new DataView(attrs.buffer, attrs.byteOffset, attrs.byteLength);
  const map = new Map<number, [number, number]>();
  for (let at = 0; at + ENTRY <= attrs.byteLength; at += ENTRY) map.set(view.getUint32(at, true), [view.getUint32(at + 4, true), view.getUint32(at + 8, true)]);
  return map;
}

function row(map: Map<number, readonly [number, number]>): Buffer {
  const bytes = Buffer.allocUnsafe(map.size * ENTRY);
  let at = 0;
  for (const [id, [h1, h2]] of map) {
    bytes.writeUInt32LE(id, at);
    bytes.writeUInt32LE(h1, at + 4);
    bytes.writeUInt32LE(h2, at + 8);
    at += ENTRY;
  }
  return bytes;
}

/**
 * Reads a target's state for a plan; a state file that does not exist yet is an empty state (a dry
 * run creates nothing).
 */
export function openStateReader(path: string, target: string): StateReader {
  if (!existsSync(path)) return { empty: true, user: () => undefined, hasActivity: () => false, close: () => undefined };
  const db = open(path, true);
  const id = db.prepare('SELECT id FROM targets WHERE url = ?').pluck().get(target) as number | undefined;
  const names = new Map<string, number>();
  for (const [nameId, name] of db.prepare('SELECT id, name FROM names').raw().iterate() as Iterable<[number, string]>) names.set(name, nameId);
  const userRow = db.prepare('SELECT attrs FROM users WHERE target = ? AND user = ?').pluck();
  const activity = db.prepare('SELECT 1 FROM activities WHERE target = ? AND hash = ?').pluck();
  const empty = id === undefined || (db.prepare('SELECT 1 FROM users WHERE target = ? UNION ALL SELECT 1 FROM activities WHERE target = ? LIMIT 1').get(id, id) === undefined);
  return {
    empty,
    user(userKey) {
      if (empty) return undefined;
      const attrs = userRow.get(id, userKey) as Buffer | undefined;
      if (attrs === undefined) return undefined;
      return {
        holds(name, [h1, h2]) {
          const nameId = names.get(name);
          if (nameId === undefined) return false;
          for (let at = 0; at + ENTRY <= attrs.length; at += ENTRY) {
            if (attrs.readUInt32LE(at) === nameId) return attrs.readUInt32LE(at + 4) === h1 && attrs.readUInt32LE(at + 8) === h2;
          }
          return false;
        },
      };
    },
    hasActivity: (hash) => !empty && activity.get(id, hash) !== undefined,
    close: () => db.close(),
  };
}

/** Opens (creating it when needed) the state file for a delivery to `target`. */
export function openStateWriter(path: string, target: string): StateWriter {
  const db = open(path, false);
  db.prepare('INSERT OR IGNORE INTO targets (url) VALUES (?)').run(target);
  const id = db.prepare('SELECT id FROM targets WHERE url = ?').pluck().get(target) as number;
  const names = new Map<string, number>();
  for (const [nameId, name] of db.prepare('SELECT id, name FROM names').raw().iterate() as Iterable<[number, string]>) names.set(name, nameId);
  const addName = db.prepare('INSERT INTO names (name) VALUES (?)');
  const nameId = (name: string): number => {
    let known = names.get(name);
    if (known === undefined) {
      known = Number(addName.run(name).lastInsertRowid);
      names.set(name, known);
    }
    return known;
  };
  const readRow = db.prepare('SELECT attrs FROM users WHERE target = ? AND user = ?').pluck();
  const writeRow = db.prepare('INSERT INTO users (target, user, attrs) VALUES (?, ?, ?) ON CONFLICT (target, user) DO UPDATE SET attrs = excluded.attrs');
  const insertRow = db.prepare('INSERT OR IGNORE INTO users (target, user, attrs) VALUES (?, ?, ?)');
  const addActivity = db.prepare('INSERT OR IGNORE INTO activities (target, hash) VALUES (?, ?)');
  const touched = db.prepare('UPDATE targets SET updated = ? WHERE id = ?');

  /** Sets and forgets values of a user's row; `known`: the row may exist (else it is new, and written at once). */
  const change = (userKey: string, values: readonly LearnedValue[], known: boolean, forgetOnly: boolean): void => {
    if (!known) {
      if (forgetOnly) return;
      const map = new Map<number, [number, number]>();
      for (const value of values) if (!('forget' in value)) map.set(nameId(value.name), value.hash);
      // a user the plan did not know may have been written since (by another run): then merged
      if (insertRow.run(id, userKey, row(map)).changes === 1) return;
    }
    const attrs = readRow.get(id, userKey) as Buffer | undefined;
    if (attrs === undefined && forgetOnly) return;
    const map = attrs === undefined ? new Map<number, [number, number]>() : entries(attrs);
    for (const value of values) {
      if (forgetOnly || 'forget' in value) map.delete(nameId(value.name));
      else map.set(nameId(value.name), value.hash);
    }
    writeRow.run(id, userKey, row(map));
  };

  const sending = db.transaction((learn: Uint8Array) => {
    for (const item of learnedItems(learn)) {
      if (item.tag === LearnTag.Attributes && item.forgetFirst) change(item.userKey, item.values, true, true);
    }
  });
  const accepted = db.transaction((learn: Uint8Array, rejected: (index: number) => boolean) => {
    let index = 0;
    for (const item of learnedItems(learn)) {
      if (!rejected(index)) {
        if (item.tag === LearnTag.Attributes) change(item.userKey, item.values, item.forgetFirst, false);
        else if (item.tag === LearnTag.Activity) addActivity.run(id, item.hash);
      }
      index += 1;
    }
    touched.run(new Date().toISOString(), id);
  });
  return {
    sending: (learn) => {
      // most requests of a first run name no user the state knows: no transaction for them
      for (const item of learnedItems(learn)) if (item.tag === LearnTag.Attributes && item.forgetFirst) return sending(learn);
    },
    accepted: (learn, rejected) => accepted(learn, rejected),
    close: () => db.close(),
  };
}

/** What a state file holds, per target. */
export function listState(path: string): TargetState[] {
  if (!existsSync(path)) throw new UsageError(`--state ${path}: no such file`);
  const db = open(path, true);
  try {
    const rows = db
      .prepare(
        `SELECT url, updated,
           (SELECT count(*) FROM users WHERE target = t.id) AS users,
           (SELECT coalesce(sum(length(attrs)), 0) FROM users WHERE target = t.id) AS bytes,
           (SELECT count(*) FROM activities WHERE target = t.id) AS activities
         FROM targets t ORDER BY url`,
      )
      .all() as Array<{ url: string; updated: string | null; users: number; bytes: number; activities: number }>;
    return rows.map((r) => ({ url: r.url, users: r.users, attributes: r.bytes / ENTRY, activities: r.activities, updated: r.updated ?? undefined }));
  } finally {
    db.close();
  }
}

/** Forgets everything the state holds of a target; false when it held nothing of it. */
export function forgetTarget(path: string, target: string): boolean {
  if (!existsSync(path)) throw new UsageError(`--state ${path}: no such file`);
  const db = open(path, false);
  try {
    const id = db.prepare('SELECT id FROM targets WHERE url = ?').pluck().get(target) as number | undefined;
    if (id === undefined) return false;
    db.transaction(() => {
      db.prepare('DELETE FROM users WHERE target = ?').run(id);
      db.prepare('DELETE FROM activities WHERE target = ?').run(id);
      db.prepare('DELETE FROM targets WHERE id = ?').run(id);
    })();
    db.exec('VACUUM');
    return true;
  } finally {
    db.close();
  }
}
