// One process at a time on a file: a lock file beside it, `<file>.lock`, naming the process that
// holds it (pid, host, start time). A lock whose process is gone (kill -9, a crash) is taken over,
// also when its pid now names a process started after the lock was taken.
// The emulator locks its database with it (emulator/db-lock.ts), and a delivery with --delta or
// --dedupe-events its state file (records/state-file.ts); each names the file and what to do.
// A file of more than one name (hard links) is refused: a lock beside one name keeps no process off
// another, and SQLite keeps a log of its own beside each name (a name the program gives the file
// itself, the journal kept aside by a restart, is not another).
import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, openSync, readFileSync, realpathSync, statSync, unlinkSync, writeFileSync, writeSync, type Stats } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from './errors.js';
import { linkTarget } from './file-folder.js';

/** Who holds a file, as its lock file says. */
export interface LockOwner {
  pid: number;
  host: string;
  /** When that process took the lock, ISO 8601. */
  since: string;
}

/**
 * A file another process holds (a usage error: the CLI exits 2). `says(who, here)` words it: `who`
 * names the holder (`pid 123`, `this process (pid 123)`, `pid 123 on host h`), `here` is false when
 * it is on another host, whose processes cannot be looked at.
 */
export class FileInUseError extends UsageError {
  constructor(
    readonly file: string,
    readonly lockFile: string,
    readonly owner: LockOwner,
    says: (who: string, here: boolean) => string,
  ) {
    const here = owner.host === hostname();
    const who = owner.pid === process.pid && here ? `this process (pid ${owner.pid})` : `pid ${owner.pid}${here ? '' : ` on host ${owner.host}`}`;
    super(says(who, here));
  }
}

/** Lock files this process holds: a second lock in the same process is refused too. */
const heldHere = new Set<string>();

/** The path with symbolic links resolved, so two names for one file share one lock. */
export function canonicalPath(file: string): string {
  try {
    // (the system's own: node's resolves `..` as text before it follows the links, where `link/..` is the link's target's parent)
    return realpathSync.native(file);
  } catch {
    // a file not made yet: where it will be (through a link there, the file the link names)
    const target = linkTarget(file);
    try {
      return join(realpathSync.native(dirname(target)), basename(target));
    } catch {
      return resolve(target);
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

/** Seconds since boot, from a line of /proc (Linux); undefined elsewhere. */
function procSeconds(read: () => number): number | undefined {
  try {
    const value = read();
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

const TICKS_PER_SECOND = 100;

/** When a process started, in clock ticks since boot (Linux: /proc/<pid>/stat, field 22). */
const startTicks = (pid: number | 'self'): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
};

/**
 * Whether the process now named pid started after `since` (ISO 8601), a few seconds' margin aside:
 * then it cannot be the one that took the lock at that time, and the pid was reused (after a
 * reboot, a restarted container). False whenever that cannot be told (not Linux, a machine just
 * booted, clock ticks not of the usual length).
 */
function startedAfter(pid: number, since: string): boolean {
  const taken = Date.parse(since);
  const uptime = procSeconds(() => Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]));
  const mine = procSeconds(() => startTicks('self'));
  const theirs = procSeconds(() => startTicks(pid));
  if (Number.isNaN(taken) || uptime === undefined || mine === undefined || theirs === undefined) return false;
  // the kernel's clock ticks per second as this process's start shows them: 100 (USER_HZ) on
  // Linux; anything else, or too short a time to tell, decides nothing
  const mineAt = uptime - process.uptime();
  if (mineAt < 60 || Math.abs(mine / mineAt / TICKS_PER_SECOND - 1) > 0.02) return false;
  const bootedAt = Date.now() / 1000 - uptime;
  return bootedAt + theirs / TICKS_PER_SECOND > taken / 1000 + 5;
}

/** Whether the owner named in a lock file may still be using the file. */
function holds(owner: LockOwner, lockFile: string): boolean {
  // another machine's process cannot be looked at
  if (owner.host !== hostname()) return true;
  // our own pid, in a lock this process did not take: an earlier process that had the same pid (a
  // restarted container)
  if (owner.pid === process.pid) return heldHere.has(lockFile);
  // a process started after the lock was taken has the pid of the one that took it, now gone
  return isRunning(owner.pid) && !startedAfter(owner.pid, owner.since);
}

export interface LockOptions {
  /** What the lock is for, in the errors of the lock file itself: `the lock that keeps a second emulator off`. */
  purpose: string;
  /** The error to throw when a live process holds the file (the file with links resolved, its lock file, the holder). */
  inUse: (file: string, lockFile: string, owner: LockOwner) => Error;
  /** Names the program itself gives the file (with links resolved) beside it, which are not others: the journal kept aside by a restart. */
  ownNames?: (file: string) => string[];
}

/** How many names (hard links) the file has, and how many of them are others than those of `own`; 0 when there is none yet. */
function namesOf(file: string, own: readonly string[]): { names: number; others: number } {
  let found: Stats;
  try {
    found = statSync(file);
  } catch {
    return { names: 0, others: 0 };
  }
  let others = found.nlink;
  for (const name of own) {
    try {
      const other = statSync(name);
      if (other.ino === found.ino && other.dev === found.dev) others -= 1;
    } catch {
      // none
    }
  }
  return { names: found.nlink, others };
}

/**
 * Takes the lock of `file` (`<file>.lock` beside it), or throws options.inUse() naming the process
 * that has it, or a usage error for a file of more than one name. Returns the function that gives it
 * back.
 */
export function lockFile(path: string, options: LockOptions): () => void {
  const file = canonicalPath(path);
  const lockPath = `${file}.lock`;
  const { names, others } = namesOf(file, options.ownNames?.(file) ?? []);
  if (others > 1) {
    throw new UsageError(
      `${file} has ${names} names (hard links), and ${options.purpose} is kept beside one of them only: a run through another name would not be kept off it. ` +
        `Use it under one name: once no run uses it, copy it to a file of its own (cp ${file} NEW) and use NEW, or remove its other names`,
    );
  }
  const text = `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() })}\n`;
  for (let attempt = 0; ; attempt += 1) {
    let created: boolean;
    try {
      created = create(lockPath, text);
    } catch (error) {
      throw new Error(`cannot create ${lockPath}, ${options.purpose} ${file}: ${osMessage(error as NodeJS.ErrnoException)}`);
    }
    if (created) break;
    const found = readLock(lockPath);
    if (found === undefined) continue; // given back meanwhile: try again
    const owner = parseOwner(found);
    if (owner !== undefined && holds(owner, lockPath)) throw options.inUse(file, lockPath, owner);
    // stale; another process starting at the same moment may be taking it over too, so only the
    // lock as read is removed
    if (attempt >= 3) throw new Error(`cannot take ${lockPath}, the lock on ${file}: other processes keep replacing it`);
    if (readLock(lockPath) === found) {
      try {
        unlinkSync(lockPath);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
          throw new Error(`cannot remove ${lockPath}, a stale lock on ${file}: ${osMessage(error as NodeJS.ErrnoException)}`);
        }
      }
    }
  }
  heldHere.add(lockPath);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    heldHere.delete(lockPath);
    try {
      // only our own lock: never one that another process has taken over meanwhile
      if (readLock(lockPath) === text) unlinkSync(lockPath);
    } catch {
      // a lock left behind is stale once this process ends, and taken over then
    }
  };
}
