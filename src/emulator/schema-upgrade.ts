// Brings a database file an earlier build made (or opened since) to the current schema; the store runs it on open.
import type Database from '../sqlite.js';
import { ACTIVITY_TABLES, MARKS_TABLE, activityTable, columnNames, headsTable, type ActivityTable } from './schema.js';

/**
 * Whether an activity table needs rebuilding: its rows have no prev (an earlier build made it), or
 * it has an index. Every earlier build indexes the table when it opens a file (on profile_id, or on
 * (id >> 12, profile_id)), and its rows added or profiles deleted since are not in the chains.
 */
function needsRebuild(db: Database.Database, table: ActivityTable): boolean {
  const columns = db.prepare<[string], string>('SELECT name FROM pragma_table_info(?)').pluck().all(table);
  if (columns.length === 0) return false; // a new file: SCHEMA makes the table
  const indexes = db.prepare<[string], number>("SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?").pluck().get(table);
  return !columns.includes('prev') || indexes !== 0;
}

/**
 * Rebuilds an activity table in the current shape, keeping every row of a profile that exists under
 * its id (an earlier build may have left the rows of profiles it deleted, trusting a foreign key),
 * each linked to its profile's row before it, and writes its heads. An index on (profile_id, id),
 * made for the rebuild and dropped with the old table, finds each row's prev.
 */
function rebuildActivityTable(table: ActivityTable): string {
  const kept = columnNames(table).filter((c) => c !== 'prev');
  const columns = kept.join(', ');
  const old = kept.map((c) => `a.${c}`).join(', ');
  return `CREATE INDEX ${table}_upgrade ON ${table}(profile_id, id);
${activityTable(table, `${table}_rebuilt`)}
INSERT INTO ${table}_rebuilt (${columns}, prev)
  SELECT ${old}, (SELECT MAX(b.id) FROM ${table} b WHERE b.profile_id = a.profile_id AND b.id < a.id)
  FROM ${table} a WHERE a.profile_id IN (SELECT id FROM profiles) ORDER BY a.id;
${headsTable(table)}
DELETE FROM ${table}_heads;
INSERT INTO ${table}_heads (profile_id, last_id) SELECT profile_id, MAX(id) FROM ${table} WHERE profile_id IN (SELECT id FROM profiles) GROUP BY profile_id;
${MARKS_TABLE}
INSERT INTO activity_marks (name, through, rows) SELECT '${table}', COALESCE(MAX(id), 0), COUNT(*) FROM ${table}_rebuilt WHERE true
  ON CONFLICT (name) DO UPDATE SET through = excluded.through, rows = excluded.rows;
DROP TABLE ${table};
ALTER TABLE ${table}_rebuilt RENAME TO ${table};`;
}

const rowsOf = (db: Database.Database, table: string): number => db.prepare<[], number>(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number;
const counted = (n: number): string => `${n.toLocaleString('en-US')} row${n === 1 ? '' : 's'}`;

/**
 * Brings the activity tables of a file an earlier build made (or opened since) to the current
 * shape, keeping every row of every profile under its id: a one-off rebuild of a few seconds per
 * million rows, said to `note` as it begins and as it ends (with the rows of profiles no longer in
 * the file, which it leaves out). Run before SCHEMA, which then adds what is missing, and before
 * foreign keys are turned on.
 */
export function upgradeActivityTables(db: Database.Database, note?: (line: string) => void): void {
  const work = (): ActivityTable[] => ACTIVITY_TABLES.filter((table) => needsRebuild(db, table));
  if (work().length === 0) return;
  db.pragma('foreign_keys = OFF');
  // the sort that builds the index goes to a temporary file, not to memory
  const tempStore = db.pragma('temp_store', { simple: true });
  db.pragma('temp_store = FILE');
  const started = performance.now();
  try {
    // looked at again inside the write lock: another process may have done it meanwhile
    db.transaction(() => {
      const tables = work().map((table) => ({ table, before: rowsOf(db, table) }));
      if (tables.length === 0) return;
      note?.(
        `${db.name} was written by an earlier version of track: rebuilding its ${tables.map((t) => `${t.table} (${counted(t.before)})`).join(' and ')} ` +
          'once, for this version (a few seconds a million rows)',
      );
      for (const { table } of tables) db.exec(rebuildActivityTable(table));
      const left = tables.reduce((n, t) => n + t.before - rowsOf(db, t.table), 0);
      const leftOut = left === 0 ? '' : `; ${counted(left)} of profiles no longer in the file left out`;
      note?.(`${db.name}: rebuilt in ${((performance.now() - started) / 1000).toFixed(1)} s${leftOut}`);
    }).immediate();
  } finally {
    db.pragma(`temp_store = ${Number(tempStore)}`);
  }
}
