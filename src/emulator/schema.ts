// The emulator's SQLite schema and the queries shaped by it (schema-upgrade.ts: files of earlier builds).
//
// Events and purchases have no index: a new row goes at the end of its table, so a request of 50
// events writes a page or two, however many profiles it names. Each row holds the id of its
// profile's previous row (prev): a profile's rows are a chain from its newest row back, read one row
// per step, at a cost that grows with that profile's rows and not with the table (chainQuery()). The
// newest row of each profile, where its chain starts, is in <table>_heads for the rows up to the
// table's mark (activity_marks); activity-heads.ts keeps the heads of the rows after it.

/** The tables whose rows are recorded activity: many rows per profile, added and never changed. */
export const ACTIVITY_TABLES = ['events', 'purchases'] as const;
export type ActivityTable = (typeof ACTIVITY_TABLES)[number];

/** Each activity table's columns and their types, in table order. */
export const ACTIVITY_COLUMNS: Record<ActivityTable, readonly (readonly [string, string])[]> = {
  events: [
    ['id', 'INTEGER PRIMARY KEY'],
    ['profile_id', 'INTEGER NOT NULL'],
    ['name', 'TEXT NOT NULL'],
    ['time', 'TEXT NOT NULL'],
    ['app_id', 'TEXT'],
    ['properties', 'TEXT'],
    ['prev', 'INTEGER'],
  ],
  purchases: [
    ['id', 'INTEGER PRIMARY KEY'],
    ['profile_id', 'INTEGER NOT NULL'],
    ['product_id', 'TEXT NOT NULL'],
    ['currency', 'TEXT NOT NULL'],
    ['price', 'REAL NOT NULL'],
    ['quantity', 'INTEGER NOT NULL'],
    ['time', 'TEXT NOT NULL'],
    ['app_id', 'TEXT'],
    ['properties', 'TEXT'],
    ['prev', 'INTEGER'],
  ],
};

/** The columns an activity table's rows hold, in table order. */
export const columnNames = (table: ActivityTable): string[] => ACTIVITY_COLUMNS[table].map(([name]) => name);

// Activity rows name their profile without a foreign key: a key would make every deleted profile a
// search of the whole table, which has no index on profile_id. deleteProfiles() removes them.
export const activityTable = (table: ActivityTable, name: string = table): string =>
  `CREATE TABLE IF NOT EXISTS ${name} (\n${ACTIVITY_COLUMNS[table].map(([column, type]) => `  ${column} ${type}`).join(',\n')}\n);`;

/** Where each profile's chain of rows starts: its newest row among those up to the table's mark. */
export const headsTable = (table: ActivityTable): string => `CREATE TABLE IF NOT EXISTS ${table}_heads (
  profile_id INTEGER PRIMARY KEY,
  last_id INTEGER NOT NULL
);`;

/** Each activity table's mark: every row up to it has its profile's head in the heads table; and how many rows those are. */
export const MARKS_TABLE = `CREATE TABLE IF NOT EXISTS activity_marks (
  name TEXT PRIMARY KEY,
  through INTEGER NOT NULL,
  rows INTEGER NOT NULL DEFAULT 0
);`;

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS profiles (
  id INTEGER PRIMARY KEY,
  service_id TEXT NOT NULL UNIQUE,
  external_id TEXT UNIQUE,
  email TEXT,
  phone TEXT,
  fields TEXT NOT NULL DEFAULT '{}',
  custom TEXT NOT NULL DEFAULT '{}',
  push_import INTEGER NOT NULL DEFAULT 0,
  language_from_api INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS profiles_email ON profiles(email) WHERE email IS NOT NULL;
CREATE INDEX IF NOT EXISTS profiles_phone ON profiles(phone) WHERE phone IS NOT NULL;
CREATE TABLE IF NOT EXISTS aliases (
  alias_label TEXT NOT NULL,
  alias_name TEXT NOT NULL,
  profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  PRIMARY KEY (alias_label, alias_name)
);
CREATE INDEX IF NOT EXISTS aliases_profile ON aliases(profile_id);
${ACTIVITY_TABLES.map((t) => `${activityTable(t)}\n${headsTable(t)}`).join('\n')}
${MARKS_TABLE}
CREATE TABLE IF NOT EXISTS push_tokens (
  app_id TEXT NOT NULL,
  token TEXT NOT NULL,
  device_id TEXT,
  profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  PRIMARY KEY (app_id, token)
);
CREATE INDEX IF NOT EXISTS push_tokens_profile ON push_tokens(profile_id);
CREATE TABLE IF NOT EXISTS subscriptions (
  profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  group_id TEXT NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (profile_id, group_id)
);
`;

/**
 * The rows of one profile in an activity table as `chain`, from its newest row (@head) back along
 * prev while the rows are that profile's (@profile), newest first (at most @limit when `limited`).
 * `columns` are carried along (id and prev always). A link to a row of another profile, or to a later
 * row, ends the chain: only a deleted row can leave one.
 */
export function chainCte(table: ActivityTable, columns: readonly string[], limited = false): string {
  const carried = ['id', 'prev', ...columns.filter((c) => c !== 'id' && c !== 'prev')].map((c) => `a.${c}`).join(', ');
  return `WITH RECURSIVE chain AS (
  SELECT ${carried} FROM ${table} a WHERE a.id = @head AND a.profile_id = @profile
  UNION ALL
  SELECT ${carried} FROM chain JOIN ${table} a ON a.id = chain.prev WHERE a.profile_id = @profile AND a.id < chain.id${limited ? '\n  LIMIT @limit' : ''}
)`;
}

/** A query over one profile's rows (chainCte()): `select` and `tail` around `FROM chain`. */
export function chainQuery(table: ActivityTable, columns: readonly string[], select: string, tail = '', limited = false): string {
  return `${chainCte(table, columns, limited)}\nSELECT ${select} FROM chain ${tail}`;
}
