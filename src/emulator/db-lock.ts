// One emulator per database file: a lock file beside it, `<db>.lock` (src/lock-file.ts), naming the
// process that holds it. A lock whose process is gone (kill -9, a crash) is taken over. `track
// inspect` and `track cleanup` take no lock: SQLite lets them read and write a file a running
// emulator has open.
import { UsageError } from '../errors.js';
import { folderProblem, notAFileProblem } from '../file-folder.js';
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
  const problem = notAFileProblem(db) ?? folderProblem(db);
  if (problem !== undefined) throw new UsageError(`--db ${db}: ${problem}`);
}
