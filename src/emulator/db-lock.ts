// One emulator per database file: a lock file beside it, `<db>.lock`, naming the process that holds
// it. A lock whose process is gone (kill -9, a crash) is taken over. `track inspect` and
// `track cleanup` take no lock: SQLite lets them read and write a file a running emulator has open.
import { randomBytes } from 'node:crypto';
import { linkSync, openSync, readFileSync, realpathSync, unlinkSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** Who holds a database, as its lock file says. */
export interface LockOwner {
  pid: number;
  host: string;
  /** When that emulator started, ISO 8601. */
  since: string;
}

/** The database file is open in another emulator. A usage error: the CLI exits 2. */
export class DatabaseInUseError extends UsageError {
  override name = 'DatabaseInUseError';
  constructor(
    readonly file: string,
    readonly lockFile: string,
    readonly owner: LockOwner,
  ) {
    const here = owner.host === hostname();
    const who =
      owner.pid === process.pid && here ? `this process (pid ${owner.pid})` : `pid ${owner.pid}${here ? '' : ` on host ${owner.host}`}`;
    super(
      `the database ${file} is already open in another emulator: ${who}, started ${owner.since}. ` +
        (here
          ? 'Stop that one, or use another database file.'
          : `Stop that one, or use another database file; if it is no longer running, delete ${lockFile}.`),
    );
  }
}

/** Lock files this process holds: a second emulator in the same process is refused too. */
const heldHere = new Set<string>();

/** The database's path with symbolic links resolved, so two names for one file share one lock. */
function canonical(db: string): string {
  const path = resolve(db);
  try {
    return realpathSync(path);
  } catch {
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return path;
    }
  }
}

function osMessage(error: NodeJS.ErrnoException): string {
  // node appends ", open '<path>'": the caller names the file itself
  return error.message.replace(/, \w+ '.*'$/s, '');
}

/** Creates the lock file holding text, whole, or returns false if it exists. */
function create(lockFile: string, text: string): boolean {
  // written beside it and linked into place, so no one ever reads a half-written lock
  const staged = `${lockFile}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(staged, text, { flag: 'wx' });
  try {
    linkSync(staged, lockFile);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
    // a file system without hard links: create it exclusively in place
    let fd: number;
    try {
      fd = openSync(lockFile, 'wx');
    } catch (inPlace) {
      if ((inPlace as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw inPlace;
    }
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    return true;
  } finally {
    try {
      unlinkSync(staged);
    } catch {
      // already gone
    }
  }
}

/** The lock file's text, or undefined if there is none. */
function readLock(lockFile: string): string | undefined {
  try {
    return readFileSync(lockFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    if (Number.isSafeInteger(value.pid) && (value.pid as number) > 0 && typeof value.host === 'string') {
      return { pid: value.pid as number, host: value.host, since: typeof value.since === 'string' ? value.since : 'at an unknown time' };
    }
  } catch {
    // not a lock this program wrote: nothing holds it
  }
  return undefined;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // a process killed but not yet reaped by its parent still answers; on Linux, /proc says it is dead
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true;
  }
}

/** Whether the owner named in a lock file may still have the database open. */
function holds(owner: LockOwner, lockFile: string): boolean {
  // another machine's process cannot be looked at
  if (owner.host !== hostname()) return true;
  // our own pid, in a lock this process did not take: an earlier process that had the same pid (a
  // restarted container)
  if (owner.pid === process.pid) return heldHere.has(lockFile);
  return isRunning(owner.pid);
}

/**
 * Takes the lock of database file db, or throws DatabaseInUseError naming the process that has it.
 * Returns the function that gives it back. An in-memory database needs none.
 */
export function lockDatabase(db: string): () => void {
  if (db === ':memory:' || db === '') return () => {};
  const file = canonical(db);
  const lockFile = `${file}.lock`;
  const text = `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() })}\n`;
  for (let attempt = 0; ; attempt += 1) {
    let created: boolean;
    try {
      created = create(lockFile, text);
    } catch (error) {
      throw new Error(`cannot create ${lockFile}, the lock that keeps a second emulator off ${file}: ${osMessage(error as NodeJS.ErrnoException)}`);
    }
    if (created) break;
    const found = readLock(lockFile);
    if (found === undefined) continue; // given back meanwhile: try again
    const owner = parseOwner(found);
    if (owner !== undefined && holds(owner, lockFile)) throw new DatabaseInUseError(file, lockFile, owner);
    // stale; another process starting at the same moment may be taking it over too, so only the
    // lock as read is removed
    if (attempt >= 3) throw new Error(`cannot take ${lockFile}, the lock on ${file}: other processes keep replacing it`);
    if (readLock(lockFile) === found) {
      try {
        unlinkSync(lockFile);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
          throw new Error(`cannot remove ${lockFile}, a stale lock on ${file}: ${osMessage(error as NodeJS.ErrnoException)}`);
        }
      }
    }
  }
  heldHere.add(lockFile);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    heldHere.delete(lockFile);
    try {
      // only our own lock: never one that another emulator has taken over meanwhile
      if (readLock(lockFile) === text) unlinkSync(lockFile);
    } catch {
      // a lock left behind is stale once this process ends, and taken over then
    }
  };
}
