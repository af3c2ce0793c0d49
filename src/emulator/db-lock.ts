// One emulator per database file: a lock file beside it, `<db>.lock` (src/lock-file.ts), naming the
// process that holds it. A lock whose process is gone (kill -9, a crash) is taken over. `track
// inspect` and `track cleanup` take no lock: SQLite lets them read and write a file a running
// emulator has open.
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { FileInUseError, lockFile, type LockOwner } from '../lock-file.js';

export type { LockOwner } from '../lock-file.js';

/** The database file is open in another emulator. A usage error: the CLI exits 2. */
export class DatabaseInUseError extends FileInUseError {
  override name = 'DatabaseInUseError';
  constructor(file: string, lockFile: string, owner: LockOwner) {
    super(
      file,
      lockFile,
      owner,
      (who, here) =>
        `the database ${file} is already open in another emulator: ${who}, started ${owner.since}. ` +
        (here ? 'Stop that one, or use another database file.' : `Stop that one, or use another database file; if it is no longer running, delete ${lockFile}.`),
    );
  }
}

/**
 * Takes the lock of database file db, or throws DatabaseInUseError naming the process that has it.
 * Returns the function that gives it back. An in-memory database needs none.
 */
export function lockDatabase(db: string): () => void {
  if (db === ':memory:' || db === '') return () => {};
  checkDatabaseFolder(db);
  return lockFile(db, {
    purpose: 'the lock that keeps a second emulator off',
    inUse: (file, lock, owner) => new DatabaseInUseError(file, lock, owner),
  });
}

/**
 * A path the emulator cannot make its file at is the person's to fix (exit 2), as a file SQLite
 * cannot open is: one that ends in `/` (a folder), one in a folder that is not there, not a folder,
 * or not the person's to write in.
 */
function checkDatabaseFolder(db: string): void {
  if (db.endsWith('/')) throw new UsageError(`--db ${db}: names a folder; give the path of a file (${db}track-emulator.sqlite)`);
  // named as the path names it: `x/..` is no folder when `x` is none
  const folder = dirname(db);
  const shown = folder === '.' ? resolve(folder) : folder;
  let isFolder: boolean;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`--db ${db}: the folder ${shown} does not exist; create it, or give a path in a folder that does`);
    if (code === 'ENOTDIR') throw new UsageError(`--db ${db}: ${shown} is not a folder`);
    throw new UsageError(`--db ${db}: cannot reach the folder ${shown} (${code ?? String(error)})`);
  }
  if (!isFolder) throw new UsageError(`--db ${db}: ${shown} is not a folder`);
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new UsageError(`--db ${db}: cannot write in the folder ${shown} (${(error as NodeJS.ErrnoException).code ?? String(error)}); give a path in a folder you can write in`);
  }
}
