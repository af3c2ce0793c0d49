// The delta state file on disk (--state, SQLite): its tables, its format and the conversion of an
// earlier one, the lock a delivery holds on it, and the errors that name it and say what to do. The
// reader and the writer (state.ts) open it here; this and the emulator's store are the modules that
// open SQLite.
import Database from '../sqlite.js';
import { existsSync, statSync } from 'node:fs';
import { InputError, UsageError } from '../errors.js';
import { fileStart } from '../file-start.js';
import { FileInUseError, lockFile, type LockOwner } from '../lock-file.js';
import { packBytes, PACK, type PackedUser } from './state-rows.js';

/**
 * Format 4 keeps users in the order they were first learned, up to PACK of them a row of the file
 * (a pack: state-rows.ts), each found by their slot through the index of each target (user-index.ts,
 * persisted in user_index and rebuilt from the packs when a run was stopped before it saved it:
 * targets.fresh = 0). Format 5 adds the fingerprints of the API keys each target was learned
 * through (target_keys: state-keys.ts); its number changed so that an earlier track, which would
 * learn into a target under any key, refuses the file. Format 3 kept one user a row, in the same
 * order; format 2 kept them in the order of their keys.
 */
export const FORMAT = '5';
const EARLIER_FORMATS = ['2', '3', '4'];
/** Whether a file of this format keeps its users in packs, as this one does: a reader reads it as it is (format 4 knows no key). */
export const isPacked = (format: string): boolean => format === FORMAT || format === '4';
/** The size of a new file's pages. */
const PAGE_BYTES = 16 * 1024;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS targets (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, updated TEXT, users INTEGER NOT NULL DEFAULT 0, fresh INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS packs (id INTEGER PRIMARY KEY, target INTEGER NOT NULL, users BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS user_index (target INTEGER NOT NULL, part INTEGER NOT NULL, slots BLOB NOT NULL, PRIMARY KEY (target, part)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS activities (target INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (target, hash)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS target_keys (target INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (target, key)) WITHOUT ROWID;
`;

/** What to do about a state file that cannot be used. */
const START_ANEW = 'delete it to start a new state (the next --delta run then sends every attribute, and --dedupe-events every event)';
/** The other way: a copy made before the file's last runs holds values they changed on the server, which --full sends again. */
const PUT_BACK = 'or put back a copy of it (a copy older than its last run: run the next upload with --delta --full, as later runs may have changed what it holds)';

/** A delivery with --delta or --dedupe-events is using the state file. A usage error: the CLI exits 2. */
export class StateInUseError extends FileInUseError {
  override name = 'StateInUseError';
  /** `upload`: the run refused may go with a state of its own (not so `track state`, which is about this file). */
  constructor(file: string, lockFile: string, owner: LockOwner, upload = true) {
    super(
      file,
      lockFile,
      owner,
      (who, here) =>
        `--state ${file} is in use by another run: ${who}, started ${owner.since}. One run at a time on a state file: ` +
        (here ? `wait for that one to end${upload ? ', or give this run another --state' : ''}.` : `wait for that one to end; if it is no longer running, delete ${lockFile}.`),
    );
  }
}

/** SQLite's message on one line: its integrity check names the database on a line of its own ("*** in database main ***"). */
const sqliteMessage = (error: unknown): string => (error as Error).message.replace(/\s*\n\s*/g, ' ');

/** A SQLite error that says the file is not a database, or a damaged one. */
const isDamage = (error: unknown): boolean =>
  /^SQLITE_(CORRUPT|NOTADB)/.test(String((error as { code?: unknown }).code)) || /malformed|not a database/i.test((error as Error).message);

/**
 * The error for a state file found damaged while a run uses it (an input error, so the run stops,
 * exit 2 when nothing was sent yet); any other error as it is.
 */
export function stateFailure(path: string, error: unknown): Error {
  if (!isDamage(error)) return error as Error;
  return new InputError(`--state ${path} is damaged (SQLite: ${sqliteMessage(error)}): ${START_ANEW}, ${PUT_BACK}`);
}

/** A reader's error (at its start, or of `track state`), naming the file: a damaged file, or a usage error. */
export function readFailure(path: string, error: unknown): Error {
  if (error instanceof UsageError) return error;
  const failure = stateFailure(path, error);
  return failure !== error ? failure : new UsageError(`--state ${path} cannot be read: ${(error as Error).message}`);
}

export interface OpenedState {
  db: Database.Database;
  /** The file's format: a reader may find an earlier one, which a writer converts first. */
  format: string;
}

/** The first bytes of every SQLite database. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** Whether the file begins as every SQLite database does (a state file, damaged or not, keeps its first bytes). */
function isSqliteFile(path: string): boolean {
  const header = fileStart(path, SQLITE_HEADER.length);
  return header === undefined || header.equals(SQLITE_HEADER);
}

/** Refuses a state file that cannot hold a state: empty (0 bytes). */
function checkNotEmpty(path: string): void {
  let size: number | undefined;
  try {
    size = statSync(path).size;
  } catch {
    return; // none yet: a writer makes it
  }
  if (size === 0) throw new UsageError(`--state ${path} is empty (0 bytes), not a state file: ${START_ANEW}, or give --state the file you meant`);
}

/**
 * Opens the state file: a reader's must exist; a writer's is made when it does not, or converted
 * from an earlier format. Every way it cannot be used is a usage error naming it.
 */
export function openStateFile(path: string, readonly: boolean): OpenedState {
  checkNotEmpty(path);
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: readonly });
  } catch (error) {
    throw new UsageError(`--state ${path} cannot be opened: ${(error as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 5000');
    // SQLite's own 2 MB of pages rather than the driver's 16: the state is read and written where the
    // rows fall, which a cache hardly helps, and a run holds two connections or more
    db.pragma('cache_size = -2000');
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    // another program's database is not taken over: only a new file or a state file is used
    if (tables.length > 0 && !tables.includes('meta')) throw new Error('not a state file: it holds tables of another program');
    if (readonly) {
      if (tables.length === 0) throw new Error('not a state file: it holds no table');
      return { db, format: readableFormat(db) };
    }
    // a file of a later format is refused before anything is written to it (not a table of this format added)
    const found = tables.length > 0 ? readableFormat(db) : undefined;
    // a new file's pages are 16 KiB, not 4: a first run writes each page to the log and then to the
    // file, a call each, and a pack of users is about 1 KB (an earlier file keeps its pages' size)
    if (tables.length === 0) db.pragma(`page_size = ${PAGE_BYTES}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    if (found !== undefined && found !== FORMAT) convertEarlierFormat(db);
    db.exec(SCHEMA);
    // a new file, or an earlier one that held no event, keeps only hashes this track makes (see hashesActivitiesAsBefore)
    if (found === undefined || (found !== FORMAT && db.prepare('SELECT 1 FROM activities LIMIT 1').get() === undefined)) {
      db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('activity_hashes', '2')").run();
    }
    db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)").run(FORMAT);
    const format = formatOf(db);
    if (format !== FORMAT) throw anotherVersion(format);
    return { db, format };
  } catch (error) {
    db.close();
    const message = (error as Error).message;
    // a file of other contents (an input, given as --state by mistake) is not one to delete
    if (isDamage(error) && !isSqliteFile(path)) throw new UsageError(`--state ${path} is not a state file: it is no SQLite database (SQLite: ${sqliteMessage(error)}); give --state the file you meant`);
    if (isDamage(error)) throw new UsageError(`--state ${path} is not a state file, or is damaged (SQLite: ${sqliteMessage(error)}): ${START_ANEW}, ${PUT_BACK}`);
    if (/not a state file/.test(message)) throw new UsageError(`--state ${path} is not a state file (${message.replace(/^not a state file: /, '')})`);
    throw new UsageError(`--state ${path} cannot be used: ${message}`);
  }
}

/** The file's format, when this track reads it (this one, or an earlier one it converts). */
function readableFormat(db: Database.Database): string {
  const format = formatOf(db);
  if (format !== FORMAT && !EARLIER_FORMATS.includes(format)) throw anotherVersion(format);
  return format;
}

/**
 * Whether the file may hold hashes of events and purchases made as track made them before
 * `"properties": {}` was hashed as no properties (activityHash's `asBefore`): one an earlier version
 * wrote events to. Only this version and later ones write to a file of this format.
 */
export const hashesActivitiesAsBefore = (db: Database.Database): boolean =>
  db.prepare("SELECT value FROM meta WHERE key = 'activity_hashes'").pluck().get() !== '2';

const anotherVersion = (format: string): Error => new Error(`it was written by another version of track (format ${format})`);

function formatOf(db: Database.Database): string {
  return (db.prepare("SELECT value FROM meta WHERE key = 'format'").pluck().get() as string | undefined) ?? FORMAT;
}

/**
 * Format 2 -> 3 -> 4 -> 5: the users in the order of their rows (their attributes kept), PACK of them
 * a row, every target's index to be made from its packs when it is next used, and the space of the
 * old tables given back; then the table of keys, empty (each target is adopted by the key of its next
 * delivery: state-keys.ts). Once, at the first --delta delivery of a newer track; a kill midway
 * leaves the file in the format it had, or in a later one on the way.
 */
function convertEarlierFormat(db: Database.Database): void {
  if (formatOf(db) !== '4') convertToPacks(db);
  db.transaction(() => {
    db.exec(SCHEMA);
    db.prepare("UPDATE meta SET value = ? WHERE key = 'format'").run(FORMAT);
  }).immediate();
}

/** Format 2 -> 3 -> 4 (see convertEarlierFormat). */
function convertToPacks(db: Database.Database): void {
  if (formatOf(db) === '2') {
    db.transaction(() => {
      db.exec('ALTER TABLE users RENAME TO users_format_2');
      db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY, target INTEGER NOT NULL, user TEXT NOT NULL, attrs BLOB NOT NULL)');
      db.exec('INSERT INTO users (target, user, attrs) SELECT target, user, attrs FROM users_format_2 ORDER BY target, user');
      db.exec('DROP TABLE users_format_2');
      db.exec('ALTER TABLE targets ADD COLUMN users INTEGER NOT NULL DEFAULT 0');
      db.exec('ALTER TABLE targets ADD COLUMN fresh INTEGER NOT NULL DEFAULT 1');
      db.prepare("UPDATE meta SET value = '3' WHERE key = 'format'").run();
    }).immediate();
  }
  db.transaction(() => {
    db.exec(SCHEMA);
    const add = db.prepare('INSERT INTO packs (target, users) VALUES (?, ?)');
    const page = db.prepare('SELECT id, target, user, attrs FROM users WHERE id > ? ORDER BY id LIMIT 4096').raw();
    // each target's users in the order of their rows, read a page at a time (a query is not written to while it is read)
    const packs = new Map<number, PackedUser[]>();
    for (let last = 0, rows = page.all(0) as Array<[number, number, string, Buffer]>; rows.length > 0; rows = page.all(last) as typeof rows) {
      for (const [id, target, key, attrs] of rows) {
        const pack = packs.get(target) ?? [];
        pack.push({ key, attrs });
        packs.set(target, pack);
        if (pack.length === PACK) add.run(target, packBytes(pack.splice(0)));
        last = id;
      }
    }
    for (const [target, pack] of packs) if (pack.length > 0) add.run(target, packBytes(pack));
    db.exec('DROP TABLE users');
    db.exec('DELETE FROM user_index');
    db.exec('UPDATE targets SET fresh = 0');
    db.prepare("UPDATE meta SET value = '4' WHERE key = 'format'").run();
  }).immediate();
  db.exec('VACUUM');
}

/** The message for a reader of a state file in an earlier format, which only a delivery converts. */
export function earlierFormatError(path: string): UsageError {
  return new UsageError(`--state ${path} was written by an earlier version of track: a --delta or --dedupe-events upload converts it first (a dry run changes nothing)`);
}

/** Takes the state file for a delivery: a second one on the same file is refused until this one ends. */
export function lockState(path: string, upload = true): () => void {
  return lockFile(path, {
    purpose: 'the lock that keeps a second run off the state file',
    inUse: (file, lock, owner) => new StateInUseError(file, lock, owner, upload),
  });
}

/** Whether a state file exists at path (a reader of none reads an empty state). */
export const stateExists = (path: string): boolean => existsSync(path);

/** Runs fn on the state file opened for writing, holding it meanwhile (`track state`); a file that does not exist is a usage error. */
export function withStateFile<T>(path: string, fn: (db: Database.Database) => T): T {
  if (!stateExists(path)) throw new UsageError(`--state ${path}: no such file`);
  const release = lockState(path, false);
  try {
    const { db } = openStateFile(path, false);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  } finally {
    release();
  }
}

/** The id the state file gives a target (its URL), or undefined when it holds nothing of it. */
export const targetId = (db: Database.Database, url: string): number | undefined => db.prepare('SELECT id FROM targets WHERE url = ?').pluck().get(url) as number | undefined;

/** Forgets everything the state holds of a target, the keys it learned it through included; false when it held nothing of it. */
export function forgetTarget(path: string, target: string): boolean {
  return withStateFile(path, (db) => {
    const id = targetId(db, target);
    if (id === undefined) return false;
    db.transaction(() => {
      for (const table of ['packs', 'user_index', 'activities', 'target_keys']) db.prepare(`DELETE FROM ${table} WHERE target = ?`).run(id);
      db.prepare('DELETE FROM targets WHERE id = ?').run(id);
    })();
    db.exec('VACUUM');
    return true;
  });
}
