// Opens the emulator's database file, refusing one that is not the emulator's: an SQLite file of
// something else (the uploader's track-state.sqlite, say) would have had the emulator's tables
// written into it, and its journal mode changed, by `track emulate` or `track inspect` at a wrong --db.
import Database from '../sqlite.js';
import { UsageError } from '../errors.js';

/** The tables every build of the emulator has made in its file, and a column of the first none else has. */
const OWN_TABLE = 'profiles';
const OWN_COLUMN = 'service_id';

/** The names of the file's tables, or a message for a file SQLite cannot read as a database, or finds damaged. */
function tablesOf(db: Database.Database, path: string): string[] {
  try {
    return db.prepare<[], string>("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all();
  } catch (error) {
    const { code } = error as { code?: string };
    if (code === 'SQLITE_NOTADB') throw new UsageError(`--db ${path}: is not an SQLite database; give the emulator's database file, or a new path for one`);
    if (code?.startsWith('SQLITE_CORRUPT') === true) {
      throw new UsageError(`--db ${path}: is damaged (SQLite: ${(error as Error).message}), cut short or written over; restore it from a copy, or give a new path`);
    }
    throw error;
  }
}

/** The database at `path` (made when it is not there), once it holds the emulator's tables or none. */
export function openEmulatorFile(path: string): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(path);
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if (code === 'SQLITE_CANTOPEN') throw new UsageError(`--db ${path}: cannot be opened as a database file (${message}); is it a folder, or in one that does not exist?`);
    throw error;
  }
  try {
    const tables = tablesOf(db, path);
    const own = tables.includes(OWN_TABLE) && db.prepare<[string], string>('SELECT name FROM pragma_table_info(?)').pluck().all(OWN_TABLE).includes(OWN_COLUMN);
    if (tables.length > 0 && !own) {
      const shown = tables.length > 5 ? `${tables.slice(0, 5).join(', ')}...` : tables.join(', ');
      throw new UsageError(`--db ${path}: is an SQLite database of something else (its tables: ${shown}), not the emulator's; it was left as it was: give the emulator a file of its own`);
    }
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
