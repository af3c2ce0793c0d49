// The delta state (--state): for each target, what the server acknowledged of each user (a 64-bit
// hash of each attribute's last value) and the content hash of each event and purchase. The plan
// reads it to leave out what has not changed (openStateReader); the sender writes it only from the
// server's acknowledgements, and forgets what a request may change before posting it
// (state-writer.ts), so that no stop, a kill included, leaves the state claiming a value the server
// may no longer hold. A user is found through the target's index (read-index.ts), in memory: one
// look, whatever the order of a file's ids.
import { dirname } from 'node:path';
import type Database from '../sqlite.js';
import { UsageError } from '../errors.js';
import { earlierFormatError, hashesActivitiesAsBefore, isPacked, openStateFile, readFailure, stateExists, stateFailure, targetId } from './state-file.js';
import { keysOf } from './state-keys.js';
import type { UserLookup } from './read-index.js';
import { ENTRY, indexFromRows, loadReadIndex, rowFinder, userTotals } from './state-rows.js';
import { HASH, valueHashInto } from './state-record.js';

/** The hash the state keeps of a null: an attribute cleared. */
const NULL_HASH = (() => {
  valueHashInto(null);
  return Int32Array.from(HASH);
})();

export { openStateWriter, type StateWriter } from './state-writer.js';
export { forgetTarget } from './state-file.js';
export { StateInUseError } from './state-file.js';
export { addTargetKey, keyFingerprint } from './state-keys.js';

/** What the state holds of one target. */
export interface TargetState {
  url: string;
  users: number;
  attributes: number;
  /** Events and purchases it holds the content of (--dedupe-events). */
  activities: number;
  /** When the server last acknowledged something to it (ISO 8601), if ever. */
  updated?: string;
  /** The fingerprints of the API keys it was learned through (keyFingerprint); none yet in a file of an earlier version. */
  keys: string[];
}

/** What a plan reads of a target's state. */
export interface StateReader {
  /** True when the state holds nothing of this target: there is nothing to compare with. */
  readonly empty: boolean;
  /** True when the state may know the user whose key has this hash (KEY_HASH[0] of keyHashInto). */
  mayKnow(keyHash: number): boolean;
  /** True when the state holds the user's row with this digest (rowDigest): an item of that digest changes nothing. */
  hasRow(keyHash: number, digest: number): boolean;
  /** The user's acknowledged attributes as the file holds them, or undefined for a user it does not know. */
  user(userKey: string, keyHash: number): UserState | undefined;
  /** The id the state gives an attribute's name, or undefined for a name it holds no value of. */
  nameId(name: string): number | undefined;
  /** True when the server acknowledged an event or purchase of this content. */
  hasActivity(hash: Uint8Array): boolean;
  /** The file may hold hashes of events made as earlier versions made them (hashesActivitiesAsBefore): look for those too. */
  readonly activitiesAsBefore: boolean;
  close(): void;
}

/** One user's acknowledged attributes. */
export interface UserState {
  /** The slot of their row in the state file (its pack and its place there: state-rows.ts). */
  readonly row: number;
  /** True when the attribute's last acknowledged value has this hash (its two halves). */
  holds(name: string, h1: number, h2: number): boolean;
  /** True when the state holds a value of the attribute other than null (a null sent for it would clear something). */
  holdsValue(name: string): boolean;
}

const NO_STATE: StateReader = {
  empty: true,
  mayKnow: () => false,
  hasRow: () => false,
  user: () => undefined,
  nameId: () => undefined,
  hasActivity: () => false,
  activitiesAsBefore: false,
  close: () => undefined,
};

/**
 * Reads a target's state for a plan; a state file that does not exist yet is an empty state (a dry
 * run creates nothing). Its index is loaded whole (12 bytes a user, 8 past a million users, whose
 * rows are then in a file beside the state's: read-index.ts).
 */
export function openStateReader(path: string, target: string): StateReader {
  if (!stateExists(path)) return NO_STATE;
  const { db, id } = openTarget(path, target);
  if (id === undefined) {
    db.close();
    return NO_STATE;
  }
  try {
    return stateReader(path, db, id);
  } catch (error) {
    db.close();
    throw readFailure(path, error);
  }
}

/** The state file opened to be read, and the id it gives the target (undefined: it holds nothing of it). */
function openTarget(path: string, target: string): { db: Database.Database; format: string; id: number | undefined } {
  const { db, format } = openStateFile(path, true);
  try {
    if (!isPacked(format)) throw earlierFormatError(path);
    return { db, format, id: targetId(db, target) };
  } catch (error) {
    db.close();
    throw readFailure(path, error);
  }
}

function stateReader(path: string, db: Database.Database, target: number): StateReader {
  const names = new Map<string, number>();
  for (const [nameId, name] of db.prepare('SELECT id, name FROM names').raw().iterate() as Iterable<[number, string]>) names.set(name, nameId);
  // read in one transaction: the index's parts as one save wrote them, though a writer saves it again meanwhile
  const index = db.transaction(() => loadReadIndex(db, target, dirname(path)) ?? indexFromRows(db, target)).deferred();
  try {
    return readerOf(path, db, target, names, index);
  } catch (error) {
    index.close();
    throw error;
  }
}

/** The reader of a target over its loaded index (which its close() lets go of, with the file). */
function readerOf(path: string, db: Database.Database, target: number, names: Map<string, number>, index: UserLookup): StateReader {
  const activity = db.prepare('SELECT 1 FROM activities WHERE target = ? AND hash = ?').pluck();
  const empty = index.size === 0 && db.prepare('SELECT 1 FROM activities WHERE target = ? LIMIT 1').get(target) === undefined;
  const rowOf = rowFinder(db, index);
  const failed = (error: unknown): never => {
    throw stateFailure(path, error);
  };
  return {
    empty,
    activitiesAsBefore: hashesActivitiesAsBefore(db),
    mayKnow: (keyHash) => index.has(keyHash),
    hasRow: (keyHash, digest) => index.has(keyHash, digest),
    user(userKey, keyHash) {
      let row: ReturnType<typeof rowOf>;
      try {
        row = rowOf(userKey, keyHash);
      } catch (error) {
        return failed(error);
      }
      if (row === undefined) return undefined;
      const attrs = row.attrs;
      /** Where the row holds the attribute's entry, or -1. */
      const entryOf = (name: string): number => {
        const nameId = names.get(name);
        if (nameId === undefined) return -1;
        for (let at = 0; at + ENTRY <= attrs.length; at += ENTRY) if (attrs.readUInt32LE(at) === nameId) return at;
        return -1;
      };
      const holds = (at: number, h1: number, h2: number): boolean => at !== -1 && attrs.readInt32LE(at + 4) === h1 && attrs.readInt32LE(at + 8) === h2;
      return {
        row: row.id,
        holds: (name, h1, h2) => holds(entryOf(name), h1, h2),
        holdsValue(name) {
          const at = entryOf(name);
          return at !== -1 && !holds(at, NULL_HASH[0], NULL_HASH[1]);
        },
      };
    },
    nameId: (name) => names.get(name),
    hasActivity(hash) {
      try {
        return !empty && activity.get(target, hash) !== undefined;
      } catch (error) {
        return failed(error);
      }
    },
    close() {
      index.close();
      db.close();
    },
  };
}

/** Whether the state holds anything of a target (a --delta run against it then mostly leaves rows out), read without its index. */
export function stateKnows(path: string, target: string): boolean {
  if (!stateExists(path)) return false;
  const { db, id } = openTarget(path, target);
  try {
    if (id === undefined) return false;
    return db.prepare('SELECT 1 FROM packs WHERE target = ? UNION ALL SELECT 1 FROM activities WHERE target = ? LIMIT 1').get(id, id) !== undefined;
  } catch (error) {
    throw readFailure(path, error);
  } finally {
    db.close();
  }
}

/**
 * The fingerprints of the keys the state learned a target through: undefined when it holds no key
 * of it (no file, no such target, a target no key was recorded for yet: the next delivery's key is).
 */
export function targetKeys(path: string, target: string): string[] | undefined {
  if (!stateExists(path)) return undefined;
  const { db, format, id } = openTarget(path, target);
  try {
    const keys = id === undefined ? [] : keysOf(db, format, id);
    return keys.length === 0 ? undefined : keys;
  } catch (error) {
    throw readFailure(path, error);
  } finally {
    db.close();
  }
}

/** What a state file holds, per target. */
export function listState(path: string): TargetState[] {
  if (!stateExists(path)) throw new UsageError(`--state ${path}: no such file`);
  const { db, format } = openStateFile(path, true);
  try {
    if (!isPacked(format)) return listEarlierFormat(db);
    const rows = db
      .prepare(
        `SELECT id, url, updated, (SELECT count(*) FROM activities WHERE target = t.id) AS activities
         FROM targets t ORDER BY url`,
      )
      .all() as Array<{ id: number; url: string; updated: string | null; activities: number }>;
    return rows.map((r) => ({ url: r.url, ...userTotals(db, r.id), activities: r.activities, updated: r.updated ?? undefined, keys: keysOf(db, format, r.id) }));
  } catch (error) {
    throw readFailure(path, error);
  } finally {
    db.close();
  }
}

/** What a state file of an earlier format holds (one user a row), until a delivery converts it. */
function listEarlierFormat(db: Database.Database): TargetState[] {
  const rows = db
    .prepare(
      `SELECT url, updated,
         (SELECT count(*) FROM users WHERE target = t.id AND length(attrs) > 0) AS users,
         (SELECT coalesce(sum(length(attrs)), 0) FROM users WHERE target = t.id) AS bytes,
         (SELECT count(*) FROM activities WHERE target = t.id) AS activities
       FROM targets t ORDER BY url`,
    )
    .all() as Array<{ url: string; updated: string | null; users: number; bytes: number; activities: number }>;
  return rows.map((r) => ({ url: r.url, users: r.users, attributes: r.bytes / ENTRY, activities: r.activities, updated: r.updated ?? undefined, keys: [] }));
}
