// The emulator's SQLite store: the only module that opens the database, handing its connection to its
// parts (profile-rows.ts, activity-rows.ts, schema-upgrade.ts). Every query is a prepared statement;
// callers group writes with transaction() so a request commits as one. Past 350 lines because it is
// the one face of its parts: most of its methods are a line handing a call on to one of them.
import Database from '../sqlite.js';
import type { UserAlias } from '../model/index.js';
import type { SweepSizes } from './activity-heads.js';
import { ActivityRows, type ActivitySummary, type NewEvent, type NewPurchase, type RecentActivity, type StoredEvent, type StoredPurchase } from './activity-rows.js';
import { startCheckpointThread, type CheckpointThread } from './checkpoint-thread.js';
import { openEmulatorFile } from './db-file.js';
import { ProfileRows, type EditableProfile, type Profile } from './profile-rows.js';
import { ACTIVITY_TABLES, SCHEMA } from './schema.js';
import { upgradeActivityTables } from './schema-upgrade.js';

/**
 * What went wrong with the database, in SQLite's words with the file named where the person must act:
 * `SQLITE_FULL: database or disk is full`, `the database x.sqlite is locked by another program
 * (SQLITE_BUSY: database is locked)`, `the database x.sqlite is damaged (SQLITE_CORRUPT: ...)`.
 */
export function storeFailure(error: unknown, path: string): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return text;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return `the database ${path} is locked by another program (${code}: ${text})`;
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') return `the database ${path} is damaged (${code}: ${text}); restore it from a copy, or start on a new file`;
  return `${code}: ${text}`;
}

export interface PushTokenRow {
  appId: string;
  token: string;
  deviceId: string | null;
  profileId: number;
}

/** The checkpointer thread's own connection: PASSIVE checkpoints, which neither wait nor are waited for. */
export function openCheckpointConnection(path: string): { checkpoint: () => void; close: () => void } {
  const db = new Database(path, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  // the writer keeps its own automatic checkpoints as a bound on the log; this one needs none
  db.pragma('wal_autocheckpoint = 0');
  return { checkpoint: () => void db.pragma('wal_checkpoint(PASSIVE)'), close: () => db.close() };
}

/** Every table that holds data, children first: what reset() empties. */
const DATA_TABLES = [...ACTIVITY_TABLES, ...ACTIVITY_TABLES.map((t) => `${t}_heads`), 'push_tokens', 'subscriptions', 'aliases', 'profiles'];

/** A profile whose external_id, email, phone or one of whose aliases matches @like (a LIKE pattern; `%%` matches all). */
const PROFILE_MATCH = `(@like = '%%' OR p.external_id LIKE @like ESCAPE '\\' OR p.email LIKE @like ESCAPE '\\' OR p.phone LIKE @like ESCAPE '\\'
  OR EXISTS (SELECT 1 FROM aliases a WHERE a.profile_id = p.id AND (a.alias_name LIKE @like ESCAPE '\\' OR a.alias_label LIKE @like ESCAPE '\\')))`;

export class Store {
  private readonly db: Database.Database;
  private readonly stmt;
  private readonly profiles: ProfileRows;
  private readonly activity: ActivityRows;
  private readonly inTransaction: Database.Transaction<(fn: () => unknown) => unknown>;
  private readonly checkpointThread: CheckpointThread | undefined;
  /** SQLite's count of other connections' commits, when last looked at. */
  private dataVersion: number;

  /**
   * `checkpointThread`: checkpoint the log from a worker thread rather than on commit (the server
   * does; a short-lived command has nothing to gain from starting a thread). `sweep`: when the heads
   * of activity rows are written (activity-heads.ts; tests make it small). `note`: told when a file
   * an earlier build made is rebuilt, as it begins and ends (schema-upgrade.ts).
   */
  constructor(
    readonly path: string,
    options: { checkpointThread?: boolean; sweep?: SweepSizes; note?: (line: string) => void } = {},
  ) {
    this.db = openEmulatorFile(path);
    this.db.pragma('journal_mode = WAL');
    // WAL with synchronous=NORMAL: a committed transaction survives the process being killed.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    // a larger page cache and memory-mapped reads keep lookups off the read() path
    this.db.pragma('cache_size = -65536');
    this.db.pragma('mmap_size = 268435456');
    upgradeActivityTables(this.db, options.note);
    // each request is a savepoint in the group's transaction: its undo pages (the statement journal)
    // kept in memory, not in a temporary file opened, written and deleted for every request
    this.db.pragma('temp_store = MEMORY');
    this.db.pragma('foreign_keys = ON');
    this.db.exec(SCHEMA);
    const db = this.db;
    this.profiles = new ProfileRows(db);
    this.activity = new ActivityRows(db, options.sweep);
    this.stmt = {
      idByAlias: db.prepare<[string, string], number>('SELECT profile_id FROM aliases WHERE alias_label = ? AND alias_name = ?').pluck(),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
      deleteProfiles: db.prepare<[string]>('DELETE FROM profiles WHERE id IN (SELECT value FROM json_each(?))'),
      insertAlias: db.prepare('INSERT OR IGNORE INTO aliases (alias_label, alias_name, profile_id) VALUES (?, ?, ?)'),
      aliasesOf: db.prepare<[number], { alias_name: string; alias_label: string }>(
        'SELECT alias_name, alias_label FROM aliases WHERE profile_id = ? ORDER BY rowid',
      ),
      token: db.prepare<[string, string], { app_id: string; token: string; device_id: string | null; profile_id: number }>(
        'SELECT * FROM push_tokens WHERE app_id = ? AND token = ?',
      ),
      upsertToken: db.prepare(
        `INSERT INTO push_tokens (app_id, token, device_id, profile_id) VALUES (?, ?, ?, ?)
         ON CONFLICT (app_id, token) DO UPDATE SET device_id = excluded.device_id, profile_id = excluded.profile_id`,
      ),
      tokensOf: db.prepare<[number], { app_id: string; token: string; device_id: string | null; profile_id: number }>(
        'SELECT * FROM push_tokens WHERE profile_id = ? ORDER BY rowid',
      ),
      setSubscription: db.prepare(
        `INSERT INTO subscriptions (profile_id, group_id, state) VALUES (?, ?, ?)
         ON CONFLICT (profile_id, group_id) DO UPDATE SET state = excluded.state`,
      ),
      subscriptionsOf: db.prepare<[number], { group_id: string; state: string }>(
        'SELECT group_id, state FROM subscriptions WHERE profile_id = ? ORDER BY group_id',
      ),
      pushImportCount: db.prepare<[], number>('SELECT COUNT(*) FROM profiles WHERE push_import = 1').pluck(),
      orphanImports: db.prepare<[], { id: number }>(
        'SELECT p.id FROM profiles p WHERE p.push_import = 1 AND NOT EXISTS (SELECT 1 FROM push_tokens t WHERE t.profile_id = p.id)',
      ),
      orphanActivity: db
        .prepare<[], number>(
          `SELECT ${ACTIVITY_TABLES.map((t) => `(SELECT COUNT(*) FROM ${t} WHERE profile_id NOT IN (SELECT id FROM profiles))`).join(' + ')}`,
        )
        .pluck(),
      findProfileIds: db.prepare<{ like: string; limit: number; offset: number }, number>(`SELECT id FROM profiles p WHERE ${PROFILE_MATCH} ORDER BY id LIMIT @limit OFFSET @offset`).pluck(),
      countProfiles: db.prepare<{ like: string }, number>(`SELECT COUNT(*) FROM profiles p WHERE ${PROFILE_MATCH}`).pluck(),
      countProfilesAll: db.prepare<[], number>('SELECT COUNT(*) FROM profiles').pluck(),
    };
    this.dataVersion = this.stmt.dataVersion.get() as number;
    // one transaction function for every call: inside another transaction it runs in a savepoint
    this.inTransaction = db.transaction((fn: () => unknown) => fn());
    if (options.checkpointThread === true && !db.memory) {
      this.checkpointThread = startCheckpointThread(db.name, (pages) => {
        if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${pages}`);
      });
    }
  }

  /**
   * Runs fn in one transaction: all of its writes commit together, or none do. What the store holds in
   * memory is read again from the file after a rollback, and before a transaction that follows
   * another connection's commit (`track cleanup` beside a running emulator). The outermost takes the
   * write lock as it begins, waiting (busy_timeout) for another program's write to end, where one that
   * read first and then wrote would fail at once with SQLITE_BUSY; `reads: true` takes it only if fn
   * writes, so reads go on beside another program's write.
   */
  transaction<T>(fn: () => T, options: { reads?: boolean } = {}): T {
    const outermost = !this.db.inTransaction;
    if (outermost) this.noticeOtherWriters();
    // the outermost transaction ends by writing what is due of the heads of activity rows
    const run = outermost ? (): T => this.activity.settledAfter(fn) : fn;
    try {
      return (outermost && options.reads !== true ? this.inTransaction.immediate(run) : this.inTransaction(run)) as T;
    } catch (error) {
      this.forgetCached();
      throw error;
    }
  }

  private forgetCached(): void {
    this.profiles.forgetIds();
    this.activity.forget();
  }

  private noticeOtherWriters(): void {
    const version = this.stmt.dataVersion.get() as number;
    if (version !== this.dataVersion) this.forgetCached();
    this.dataVersion = version;
  }

  /** False once SQLite has rolled back a transaction itself (after SQLITE_FULL, for one). */
  get transactionOpen(): boolean {
    return this.db.inTransaction;
  }

  // a profile's row: profile-rows.ts
  profileById(id: number): Profile | undefined {
    return this.profiles.profileById(id);
  }

  idByExternalId(externalId: string): number | undefined {
    return this.profiles.idByExternalId(externalId);
  }

  /** The editable part of the profile with this external ID (what an attributes item changes). */
  editableByExternalId(externalId: string): EditableProfile | undefined {
    return this.profiles.editableByExternalId(externalId);
  }

  idByServiceId(serviceId: string): number | undefined {
    return this.profiles.idByServiceId(serviceId);
  }

  /** Profiles holding this email (or E.164 phone), most recently updated first. */
  profilesSharing(field: 'email' | 'phone', value: string): { id: number; externalId: string | null }[] {
    return this.profiles.profilesSharing(field, value);
  }

  profileByExternalId(externalId: string): Profile | undefined {
    return this.profiles.profileByExternalId(externalId);
  }

  /** A profile to export, with its custom attributes as stored (UTF-8 JSON) rather than in `custom`. */
  profileForExport(id: number): { profile: Profile; customJson: Buffer } | undefined {
    return this.profiles.profileForExport(id);
  }

  profileByServiceId(serviceId: string): Profile | undefined {
    return this.profiles.profileByServiceId(serviceId);
  }

  profileByAlias(alias: UserAlias): Profile | undefined {
    return this.profiles.profileByAlias(alias);
  }

  /** Every profile id with this email, temporary ones included (subscription fan-out, spec 2.3). */
  profileIdsWithEmail(email: string): number[] {
    return this.profiles.profileIdsWithEmail(email);
  }

  /** Every profile, in the order they were created, as one array: for a small file. */
  allProfiles(): Profile[] {
    return [...this.eachProfile()];
  }

  /**
   * Every profile, in the order they were created, read a page at a time as the caller asks: a file of
   * millions of profiles is never in memory at once.
   */
  *eachProfile(): Generator<Profile> {
    for (let page = this.profiles.profilesAfter(0, 1000); page.length > 0; page = this.profiles.profilesAfter(page[page.length - 1].id, 1000)) yield* page;
  }

  createProfile(init: { externalId?: string; email?: string; emailAsSent?: string; phone?: string; pushImport?: boolean }): Profile {
    return this.profiles.createProfile(init);
  }

  /** A profile to be created, inserted by its first saveProfile() (its id is 0 until then). */
  newProfile(init: { externalId?: string; email?: string; phone?: string; pushImport?: boolean }): EditableProfile {
    return this.profiles.newProfile(init);
  }

  /** Writes back the editable part of a profile (inserts one from newProfile()). */
  saveProfile(profile: EditableProfile): void {
    this.profiles.saveProfile(profile);
  }

  /** Deletes these profiles with everything recorded on them. */
  deleteProfiles(ids: readonly number[]): void {
    if (ids.length === 0) return;
    const list = JSON.stringify(ids);
    this.transaction(() => {
      this.activity.deleteOf(ids);
      this.stmt.deleteProfiles.run(list);
    });
    this.profiles.forgetIds();
  }

  addAlias(profileId: number, alias: UserAlias): void {
    this.stmt.insertAlias.run(alias.alias_label, alias.alias_name, profileId);
  }

  aliasesOf(profileId: number): UserAlias[] {
    return this.stmt.aliasesOf.all(profileId);
  }

  idByAlias(alias: UserAlias): number | undefined {
    return this.stmt.idByAlias.get(alias.alias_label, alias.alias_name);
  }

  // events and purchases: activity-rows.ts
  /** Adds events in the order given; returns the id of the last. */
  insertEvents(events: readonly NewEvent[]): number {
    return this.activity.insertEvents(events);
  }

  /** Adds purchases in the order given; returns the id of the last. */
  insertPurchases(purchases: readonly NewPurchase[]): number {
    return this.activity.insertPurchases(purchases);
  }

  eventsOf(profileId: number): StoredEvent[] {
    return this.activity.eventsOf(profileId);
  }

  purchasesOf(profileId: number): StoredPurchase[] {
    return this.activity.purchasesOf(profileId);
  }

  /** The profile's newest events and purchases (newest first, at most `limit` of each), and how many it has of each. */
  recentActivity(profileId: number, limit: number): RecentActivity {
    return this.activity.recentOf(profileId, limit);
  }

  eventSummary(profileId: number): ActivitySummary[] {
    return this.activity.eventSummary(profileId);
  }

  purchaseSummary(profileId: number): ActivitySummary[] {
    return this.activity.purchaseSummary(profileId);
  }

  pushToken(appId: string, token: string): PushTokenRow | undefined {
    const row = this.stmt.token.get(appId, token);
    return row === undefined ? undefined : { appId: row.app_id, token: row.token, deviceId: row.device_id, profileId: row.profile_id };
  }

  /** Gives the token to a profile, taking it from whichever profile held it before. */
  setPushToken(profileId: number, appId: string, token: string, deviceId: string | null): void {
    this.stmt.upsertToken.run(appId, token, deviceId, profileId);
  }

  pushTokensOf(profileId: number): PushTokenRow[] {
    return this.stmt.tokensOf.all(profileId).map((r) => ({ appId: r.app_id, token: r.token, deviceId: r.device_id, profileId: r.profile_id }));
  }

  setSubscription(profileId: number, groupId: string, state: string): void {
    this.stmt.setSubscription.run(profileId, groupId, state);
  }

  subscriptionsOf(profileId: number): { groupId: string; state: string }[] {
    return this.stmt.subscriptionsOf.all(profileId).map((r) => ({ groupId: r.group_id, state: r.state }));
  }

  /** Push-import profiles that hold no token any more (spec 2.5 rule 5). */
  orphanPushImportIds(): number[] {
    return this.stmt.orphanImports.all().map((r) => r.id);
  }

  pushImportCount(): number {
    return this.stmt.pushImportCount.get() as number;
  }

  /**
   * How many profiles, events and purchases there are, a purchase of quantity X counting as X
   * (events and purchases as counted when added and deleted).
   */
  counts(): { profiles: number; events: number; purchases: number } {
    return { profiles: this.profileCount(), ...this.activity.counts() };
  }

  profileCount(): number {
    return this.stmt.countProfilesAll.get() as number;
  }

  /**
   * Profiles whose external_id, email, phone or an alias contains `text` (any case), in the order
   * they were created, at most `limit` after the first `offset`; and how many match in all. Empty
   * text matches every profile.
   */
  findProfiles(text: string, limit: number, offset = 0): { total: number; profiles: Profile[] } {
    const like = `%${text.replace(/[\\%_]/g, '\\$&')}%`;
    const ids = this.stmt.findProfileIds.all({ like, limit, offset });
    const total = text === '' ? this.profileCount() : (this.stmt.countProfiles.get({ like }) as number);
    return { total, profiles: ids.map((id) => this.profileById(id)).filter((p) => p !== undefined) };
  }

  /** Deletes every profile, event, purchase, alias, push token and subscription. */
  reset(): void {
    this.transaction(() => {
      for (const table of DATA_TABLES) this.db.prepare(`DELETE FROM ${table}`).run();
      this.db.prepare('UPDATE activity_marks SET rows = 0').run();
    });
    this.forgetCached();
  }

  /** 'ok' when SQLite finds the file sound, every row's references resolve and every activity row is on its profile's chain. */
  integrityCheck(): string {
    const dangling = (this.db.pragma('foreign_key_check') as unknown[]).length + (this.stmt.orphanActivity.get() as number);
    const offChain = this.activity.chainProblems();
    return [
      String(this.db.pragma('integrity_check', { simple: true })),
      ...(dangling === 0 ? [] : [`${dangling} rows reference missing rows`]),
      ...(offChain === 0 ? [] : [`${offChain} events or purchases off their profile's chain`]),
    ].join('; ');
  }

  /**
   * Stops the checkpoint thread and waits for its connection to close, so that close() then finds
   * itself the last connection and, as SQLite does for the last one, checkpoints and removes the log.
   */
  async stopCheckpointThread(): Promise<void> {
    await this.checkpointThread?.stop();
  }

  close(): void {
    this.checkpointThread?.end();
    if (!this.db.open) return;
    try {
      // the next to open the file finds every head written (and no rows past the mark to read)
      this.transaction(() => this.activity.writeHeads());
    } catch {
      // a file that cannot be written now (a full disk): the next store reads the heads from the rows
    }
    this.db.close();
  }
}
