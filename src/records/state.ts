// The delta state file (--state, SQLite): for each target, what the server acknowledged of each user
// (a 64-bit hash of each attribute's last value) and the content hash of each event and purchase.
// The plan reads it to leave out what has not changed; the sender writes it only from the server's
// acknowledgements, and forgets a known user's values before posting new ones, so that no stop, a
// kill included, leaves the state claiming a value the server may no longer hold. This is a store
// with a lifetime, as the emulator's is: the one other module that opens SQLite.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { OutputError, UsageError } from '../errors.js';
import { addDigest, digestPart, readLearnRecord, type LearnedAttributes } from './state-record.js';

/** Bytes of one attribute in a user's row: its name's id, then the two halves of its value's hash. */
const ENTRY = 12;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS targets (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, updated TEXT);
CREATE TABLE IF NOT EXISTS names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS users (target INTEGER NOT NULL, user TEXT NOT NULL, digest INTEGER NOT NULL, attrs BLOB NOT NULL, PRIMARY KEY (target, user)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS activities (target INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (target, hash)) WITHOUT ROWID;
`;
const FORMAT = '2';

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
  /** Looks these users up together, for the user() calls that follow (until the next prefetch). */
  prefetch(userKeys: readonly string[]): void;
  /** Reads these users' rows together, for the holds() calls that follow (until the next prefetch). */
  prefetchRows(userKeys: readonly string[]): void;
  /** The id the state gives an attribute's name, or undefined for a name it holds no value of. */
  nameId(name: string): number | undefined;
  /** True when the server acknowledged an event or purchase of this content. */
  hasActivity(hash: Uint8Array): boolean;
  close(): void;
}

/** One user's acknowledged attributes. */
export interface UserState {
  /** The digest of every attribute the state holds of the user (see digestPart): equal to an item's, the item changes nothing. */
  readonly digest: number;
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
    // another program's database is not taken over: only a new file or a state file is written
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    if (tables.length > 0 && !tables.includes('meta')) throw new Error('not a state file: it holds tables of another program');
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
    throw new UsageError(`--state ${path} ${/not a database|malformed|not a state file/i.test(message) ? 'is not a state file' : `cannot be used: ${message}`}`);
  }
}

/** An error of the state file while a run uses it, naming the file (another run holding it, a disk full). */
function stateError(path: string, error: unknown): Error {
  const message = (error as Error).message;
  if (/database is locked|busy/i.test(message)) return new OutputError(`--state ${path} is in use by another run (${message}); run one at a time on a state file`, path);
  return new OutputError(`--state ${path} could not be written: ${message}`, path);
}

/** The entries of a user's row, by name id. */
function entries(attrs: Uint8Array): Map<number, [number, number]> {
  const view = new DataView(attrs.buffer, attrs.byteOffset, attrs.byteLength);
  const map = new Map<number, [number, number]>();
  for (let at = 0; at + ENTRY <= attrs.byteLength; at += ENTRY) map.set(view.getUint32(at, true), [view.getUint32(at + 4, true), view.getUint32(at + 8, true)]);
  return map;
}

/** A user's row: its attributes as bytes, and their digest. */
function row(map: Map<number, readonly [number, number]>): [number, Buffer] {
  const bytes = Buffer.allocUnsafe(map.size * ENTRY);
  let at = 0;
  let digest = 0;
  for (const [id, [h1, h2]] of map) {
    bytes.writeUInt32LE(id, at);
    bytes.writeUInt32LE(h1, at + 4);
    bytes.writeUInt32LE(h2, at + 8);
    digest = addDigest(digest, digestPart(id, h1, h2));
    at += ENTRY;
  }
  return [digest, bytes];
}

/**
 * Reads a target's state for a plan; a state file that does not exist yet is an empty state (a dry
 * run creates nothing).
 */
export function openStateReader(path: string, target: string): StateReader {
  if (!existsSync(path)) {
    return { empty: true, user: () => undefined, prefetch: () => undefined, prefetchRows: () => undefined, nameId: () => undefined, hasActivity: () => false, close: () => undefined };
  }
  const db = open(path, true);
  const id = db.prepare('SELECT id FROM targets WHERE url = ?').pluck().get(target) as number | undefined;
  const names = new Map<string, number>();
  for (const [nameId, name] of db.prepare('SELECT id, name FROM names').raw().iterate() as Iterable<[number, string]>) names.set(name, nameId);
  const userRow = db.prepare('SELECT attrs FROM users WHERE target = ? AND user = ?').pluck();
  const userDigest = db.prepare('SELECT digest FROM users WHERE target = ? AND user = ?').pluck();
  const activity = db.prepare('SELECT 1 FROM activities WHERE target = ? AND hash = ?').pluck();
  // users looked up PREFETCHED at a time: one statement for many rows costs half as much a row
  const PREFETCHED = 100;
  // digests only: a row's attributes are read when its digest differs from the item's
  const userRows = db.prepare(`SELECT user, digest FROM users WHERE target = ? AND user IN (${Array(PREFETCHED).fill('?').join(', ')})`).raw();
  // a file in the order of its users' keys (many exports are) has a chunk's users side by side in
  // the state: one range read them all; a range that holds more is given up for a while
  const userRange = db.prepare('SELECT user, digest FROM users WHERE target = ? AND user BETWEEN ? AND ? LIMIT ?').raw();
  const rowsOfUsers = db.prepare(`SELECT user, attrs FROM users WHERE target = ? AND user IN (${Array(PREFETCHED).fill('?').join(', ')})`).raw();
  let rangesMissed = 0;
  let fetched = new Map<string, number | null>();
  let fetchedRows = new Map<string, Buffer>();
  /** Runs `statement` over the keys PREFETCHED at a time (a short last group repeats its last key, which IN takes as one). */
  const inGroups = (userKeys: readonly string[], statement: Database.Statement, fn: (row: [string, never]) => void): void => {
    for (let at = 0; at < userKeys.length; at += PREFETCHED) {
      const keys = userKeys.slice(at, at + PREFETCHED);
      while (keys.length < PREFETCHED) keys.push(keys[keys.length - 1]);
      for (const row of statement.all(id, ...keys) as Array<[string, never]>) fn(row);
    }
  };
  const fetchRange = (userKeys: readonly string[]): boolean => {
    // SQLite orders text by its UTF-8 bytes; JavaScript by UTF-16 units, which differ only where a
    // character beyond U+FFFF meets one from U+E000: such keys are compared as bytes
    const before = userKeys.some((key) => SURROGATE.test(key)) ? (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0 : (a: string, b: string) => a < b;
    let low = userKeys[0];
    let high = userKeys[0];
    for (const key of userKeys) {
      if (before(key, low)) low = key;
      else if (before(high, key)) high = key;
    }
    const limit = userKeys.length * 2 + 16;
    const rows = userRange.all(id, low, high, limit) as Array<[string, number]>;
    if (rows.length === limit) return false;
    for (const key of userKeys) fetched.set(key, null);
    for (const [key, digest] of rows) if (fetched.has(key)) fetched.set(key, digest);
    return true;
  };
  const empty = id === undefined || (db.prepare('SELECT 1 FROM users WHERE target = ? UNION ALL SELECT 1 FROM activities WHERE target = ? LIMIT 1').get(id, id) === undefined);
  return {
    empty,
    prefetch(userKeys) {
      fetched = new Map();
      if (empty || userKeys.length === 0) return;
      // after a range missed, ranges are tried again only now and then
      if (rangesMissed % 32 === 0) {
        if (fetchRange(userKeys)) {
          rangesMissed = 0;
          return;
        }
        fetched = new Map();
      }
      rangesMissed += 1;
      for (const key of userKeys) fetched.set(key, null);
      inGroups(userKeys, userRows, ([key, digest]) => fetched.set(key, digest as number));
    },
    prefetchRows(userKeys) {
      fetchedRows = new Map();
      if (empty || userKeys.length === 0) return;
      inGroups(userKeys, rowsOfUsers, ([key, attrs]) => fetchedRows.set(key, attrs as Buffer));
    },
    user(userKey) {
      if (empty) return undefined;
      const known = fetched.get(userKey);
      const digest = known === undefined ? (userDigest.get(id, userKey) as number | undefined) : (known ?? undefined);
      if (digest === undefined) return undefined;
      let attrs: Buffer | undefined;
      return {
        digest,
        holds(name, [h1, h2]) {
          const nameId = names.get(name);
          if (nameId === undefined) return false;
          attrs ??= fetchedRows.get(userKey) ?? (userRow.get(id, userKey) as Buffer | undefined) ?? Buffer.alloc(0);
          for (let at = 0; at + ENTRY <= attrs.length; at += ENTRY) {
            if (attrs.readUInt32LE(at) === nameId) return attrs.readUInt32LE(at + 4) === h1 && attrs.readUInt32LE(at + 8) === h2;
          }
          return false;
        },
      };
    },
    nameId: (name) => names.get(name),
    hasActivity: (hash) => !empty && activity.get(id, hash) !== undefined,
    close: () => db.close(),
  };
}

/** A character beyond U+FFFF, written as two UTF-16 units. */
const SURROGATE = /[\uD800-\uDFFF]/;

/** Acknowledged requests waiting to be written: learning late is safe (the state then knows less), so they are written together. */
const MAX_QUEUED = 64;
const QUEUE_MS = 100;

/** Opens (creating it when needed) the state file for a delivery to `target`. */
export function openStateWriter(path: string, target: string): StateWriter {
  const db = open(path, false);
  db.prepare('INSERT OR IGNORE INTO targets (url) VALUES (?)').run(target);
  const id = db.prepare('SELECT id FROM targets WHERE url = ?').pluck().get(target) as number;
  const nameIds = new Map<string, number>();
  for (const [nameId, name] of db.prepare('SELECT id, name FROM names').raw().iterate() as Iterable<[number, string]>) nameIds.set(name, nameId);
  // another run on this file may add the same name meanwhile: each takes the id the file holds
  const addName = db.prepare('INSERT OR IGNORE INTO names (name) VALUES (?)');
  const idOfName = db.prepare('SELECT id FROM names WHERE name = ?').pluck();
  const nameId = (name: string): number => {
    let known = nameIds.get(name);
    if (known === undefined) {
      addName.run(name);
      known = idOfName.get(name) as number;
      nameIds.set(name, known);
    }
    return known;
  };
  const readRow = db.prepare('SELECT attrs FROM users WHERE target = ? AND user = ?').pluck();
  const deleteRow = db.prepare('DELETE FROM users WHERE target = ? AND user = ?');
  const writeRow = db.prepare(
    'INSERT INTO users (target, user, digest, attrs) VALUES (?, ?, ?, ?) ON CONFLICT (target, user) DO UPDATE SET digest = excluded.digest, attrs = excluded.attrs',
  );
  const insertRow = db.prepare('INSERT OR IGNORE INTO users (target, user, digest, attrs) VALUES (?, ?, ?, ?)');
  const addActivity = db.prepare('INSERT OR IGNORE INTO activities (target, hash) VALUES (?, ?)');
  const touched = db.prepare('UPDATE targets SET updated = ? WHERE id = ?');

  /**
   * Sets and forgets in the row the state holds of a user (or a new one) what a request sent: the
   * values it left out as unchanged are not written (the row may have been written meanwhile).
   */
  const mergeSent = (item: LearnedAttributes, ids: readonly number[]): void => {
    // the new users waiting to be inserted come first: one of them may be this user, earlier in the request
    insertNewRows();
    const attrs = readRow.get(id, item.userKey) as Buffer | undefined;
    const map = attrs === undefined ? new Map<number, [number, number]>() : entries(attrs);
    for (let i = 0; i < item.count; i += 1) {
      if (item.unchanged(i)) continue;
      const nameId = ids[item.name(i)];
      if (item.forget(i)) map.delete(nameId);
      else map.set(nameId, [item.h1(i), item.h2(i)]);
    }
    if (attrs !== undefined || map.size > 0) writeRow.run(id, item.userKey, ...row(map));
  };

  /** Writes a row whole over what a user's row holds, value by value (a user written by another run meanwhile). */
  const mergeRow = (userKey: string, digest: number, bytes: Buffer): void => {
    const attrs = readRow.get(id, userKey) as Buffer | undefined;
    if (attrs === undefined) return void writeRow.run(id, userKey, digest, bytes);
    const map = entries(attrs);
    for (const [nameId, hash] of entries(bytes)) map.set(nameId, hash);
    writeRow.run(id, userKey, ...row(map));
  };

  // users the plan did not know are inserted ROWS_AT_ONCE to a statement, at no read (a first run's every user)
  const ROWS_AT_ONCE = 50;
  const insertMany = db.prepare(`INSERT OR IGNORE INTO users (target, user, digest, attrs) VALUES ${Array(ROWS_AT_ONCE).fill('(?, ?, ?, ?)').join(', ')}`);
  let newRows: Array<[string, number, Buffer]> = [];
  const insertNewRows = (): void => {
    if (newRows.length === ROWS_AT_ONCE) {
      const args: unknown[] = [];
      for (const [userKey, digest, bytes] of newRows) args.push(id, userKey, digest, bytes);
      // one of them written meanwhile: each is merged (a row just inserted merges into itself)
      if (insertMany.run(args).changes !== ROWS_AT_ONCE) for (const [userKey, digest, bytes] of newRows) mergeRow(userKey, digest, bytes);
    } else {
      for (const [userKey, digest, bytes] of newRows) if (insertRow.run(id, userKey, digest, bytes).changes === 0) mergeRow(userKey, digest, bytes);
    }
    newRows = [];
  };

  /**
   * A user the state may know, forgotten before the request was posted: the row is what the whole
   * item set, what was sent and what was left out as unchanged. A row there again was written
   * meanwhile by another run: only what this request sent is merged into it.
   */
  const replace = (item: LearnedAttributes, ids: readonly number[]): void => {
    // the new users waiting to be inserted come first: one of them may be this user, earlier in the request
    insertNewRows();
    const map = new Map<number, [number, number]>();
    for (let i = 0; i < item.count; i += 1) if (!item.forget(i)) map.set(ids[item.name(i)], [item.h1(i), item.h2(i)]);
    if (map.size > 0 && insertRow.run(id, item.userKey, ...row(map)).changes === 1) return;
    mergeSent(item, ids);
  };

  /** A user the plan did not know: its row is made whole from the record. */
  const insert = (item: LearnedAttributes, ids: readonly number[]): void => {
    let size = 0;
    for (let i = 0; i < item.count; i += 1) {
      // an operation that adds is forgotten: a row that may exist already is merged
      if (item.forget(i)) return mergeSent(item, ids);
      size += ENTRY;
    }
    const bytes = Buffer.allocUnsafe(size);
    let digest = 0;
    for (let i = 0, at = 0; i < item.count; i += 1, at += ENTRY) {
      const nameId = ids[item.name(i)];
      bytes.writeUInt32LE(nameId, at);
      bytes.writeUInt32LE(item.h1(i), at + 4);
      bytes.writeUInt32LE(item.h2(i), at + 8);
      digest = addDigest(digest, digestPart(nameId, item.h1(i), item.h2(i)));
    }
    newRows.push([item.userKey, digest, bytes]);
    if (newRows.length === ROWS_AT_ONCE) insertNewRows();
  };

  let queue: Array<{ learn: Uint8Array; rejected: (index: number) => boolean }> = [];
  let timer: NodeJS.Timeout | undefined;
  const write = db.transaction((records: typeof queue) => {
    for (const { learn, rejected } of records) {
      const record = readLearnRecord(learn);
      const ids = record.names.map(nameId);
      record.forEach((index, item) => {
        if (item === undefined || rejected(index)) return;
        if (item instanceof Uint8Array) addActivity.run(id, item);
        else if (item.known) replace(item, ids);
        else insert(item, ids);
      });
    }
    insertNewRows();
    touched.run(new Date().toISOString(), id);
  });
  /** What a write the timer started failed with: the next call (or close) throws it. */
  let failure: Error | undefined;
  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (failure !== undefined) throw failure;
    if (queue.length === 0) return;
    const records = queue;
    queue = [];
    try {
      write.immediate(records);
    } catch (error) {
      throw (failure = stateError(path, error));
    }
  };
  const forget = db.transaction((userKeys: readonly string[]) => {
    for (const userKey of userKeys) deleteRow.run(id, userKey);
  });
  return {
    sending(learn) {
      const known: string[] = [];
      readLearnRecord(learn).forEach((_, item) => {
        if (item !== undefined && !(item instanceof Uint8Array) && item.known) known.push(item.userKey);
      });
      // most requests of a first run name no user the state knows: nothing to write for them
      if (known.length === 0) return;
      // what was acknowledged before is written first, then forgotten
      flush();
      try {
        forget.immediate(known);
      } catch (error) {
        throw (failure = stateError(path, error));
      }
    },
    accepted(learn, rejected) {
      if (failure !== undefined) throw failure;
      queue.push({ learn, rejected });
      if (queue.length >= MAX_QUEUED) flush();
      else
        timer ??= setTimeout(() => {
          try {
            flush();
          } catch {
            // kept in `failure`: the next request, or the close, stops the run with it
          }
        }, QUEUE_MS);
    },
    close() {
      try {
        flush();
      } finally {
        db.close();
      }
    },
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
  } catch (error) {
    throw new UsageError(`--state ${path} cannot be read: ${(error as Error).message}`);
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
