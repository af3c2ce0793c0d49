// The emulator's SQLite schema and the queries shaped by it (schema-upgrade.ts: files of earlier builds).
//
// Events and purchases are looked up by profile through an index on (id >> 12, profile_id): rows
// in blocks of 4,096 by id, then by profile. A new row's index entry lands among the few pages of
// the newest block, so a request of 50 events rewrites a handful of index pages, where an index on
// profile_id alone spreads them over a page each (and each dirty page is written to the log at
// commit). The price is on reads: one profile's rows take one index search per block, so a read
// grows with the table, about 0.5 ms at 2 million events and 2 ms at 8 million (activityQuery()).

/** Rows per block of the activity indexes, as a shift: 2^12 = 4,096. */
const BLOCK_BITS = 12;

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
  ],
};

/** The columns a new row gives (all but its id), in table order. */
export const INSERT_COLUMNS: Record<ActivityTable, readonly string[]> = {
  events: ACTIVITY_COLUMNS.events.slice(1).map(([name]) => name),
  purchases: ACTIVITY_COLUMNS.purchases.slice(1).map(([name]) => name),
};

// Activity rows name their profile without a foreign key: a key would make every deleted profile a
// search of the whole table, as the index does not start with profile_id. deleteProfiles() removes them.
export const activityTable = (table: ActivityTable, name: string = table): string =>
  `CREATE TABLE IF NOT EXISTS ${name} (\n${ACTIVITY_COLUMNS[table].map(([column, type]) => `  ${column} ${type}`).join(',\n')}\n);`;

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
${ACTIVITY_TABLES.map((t) => `${activityTable(t)}\nCREATE INDEX IF NOT EXISTS ${t}_by_profile ON ${t}(id >> ${BLOCK_BITS}, profile_id);`).join('\n')}
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
 * A query over one profile's rows of an activity table, through its index one block at a time
 * (blocks 0 to the newest): `select` and `tail` are the query around `FROM <table> a WHERE ...`;
 * the profile id is its one parameter.
 */
export function activityQuery(table: ActivityTable, select: string, tail = ''): string {
  return `WITH RECURSIVE block(n) AS (
  SELECT 0 UNION ALL SELECT n + 1 FROM block WHERE n < (SELECT max(id) FROM ${table}) >> ${BLOCK_BITS}
)
SELECT ${select} FROM block CROSS JOIN ${table} a WHERE a.id >> ${BLOCK_BITS} = block.n AND a.profile_id = ? ${tail}`;
}
