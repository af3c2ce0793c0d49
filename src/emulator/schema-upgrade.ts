// Brings a database file an earlier build made to the current schema; the store runs it on open.
import type Database from 'better-sqlite3';
import { ACTIVITY_COLUMNS, ACTIVITY_TABLES, activityTable, type ActivityTable } from './schema.js';

/**
 * Whether a table as `CREATE TABLE` text from sqlite_schema is an activity table as an earlier
 * build made it: with a foreign key to profiles (and an index on profile_id alone).
 */
function isLegacyActivityTable(sql: string | undefined): boolean {
  return sql !== undefined && sql.includes('REFERENCES');
}

/** The index on profile_id alone that earlier builds made, and make again when they open a file. */
const legacyIndex = (table: ActivityTable): string => `${table}_profile`;

/**
 * Rebuilds an activity table made by an earlier build in the current shape, keeping every row and
 * its id. Run in one transaction with foreign keys off; SCHEMA then adds the new index.
 */
function rebuildActivityTable(table: ActivityTable): string {
  const columns = ACTIVITY_COLUMNS[table].map(([name]) => name).join(', ');
  return `${activityTable(table, `${table}_rebuilt`)}
INSERT INTO ${table}_rebuilt (${columns}) SELECT ${columns} FROM ${table};
DROP TABLE ${table};
ALTER TABLE ${table}_rebuilt RENAME TO ${table};`;
}

/**
 * Undoes what an earlier build leaves in a file already rebuilt when it opens it again: its index on
 * profile_id (kept up on every insert for nothing) and the rows of the profiles it deleted, which it
 * expects the foreign key to remove (a new profile may be given a deleted one's id).
 */
function repairActivityTable(table: ActivityTable): string {
  return `DROP INDEX IF EXISTS ${legacyIndex(table)};
DELETE FROM ${table} WHERE profile_id NOT IN (SELECT id FROM profiles);`;
}

/**
 * Brings the activity tables of a file an earlier build made (or opened since) to the current
 * shape, keeping every row and its id: a one-off rebuild of about a second per million rows. Run
 * before SCHEMA, which then adds what is missing, and before foreign keys are turned on.
 */
export function upgradeActivityTables(db: Database.Database): void {
  const schemaSql = db.prepare<[string, string], string>('SELECT sql FROM sqlite_schema WHERE type = ? AND name = ?').pluck();
  const work = (): string[] =>
    ACTIVITY_TABLES.flatMap((table) => {
      if (isLegacyActivityTable(schemaSql.get('table', table))) return [rebuildActivityTable(table)];
      return schemaSql.get('index', legacyIndex(table)) === undefined ? [] : [repairActivityTable(table)];
    });
  if (work().length === 0) return;
  db.pragma('foreign_keys = OFF');
  // looked at again inside the write lock: another process may have done it meanwhile
  db.transaction(() => {
    for (const sql of work()) db.exec(sql);
  }).immediate();
}
