// The emulator's SQLite store: the only module that talks to the database driver. Every query is a
// prepared statement; callers group writes with transaction() so a request commits as one.
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { startCheckpointThread, type CheckpointThread } from './checkpoint-thread.js';
import type { UserAlias } from '../model/index.js';
import { nowIso } from '../model/time.js';
import { ACTIVITY_TABLES, INSERT_COLUMNS, SCHEMA, activityQuery, type ActivityTable } from './schema.js';
import { upgradeActivityTables } from './schema-upgrade.js';

/** The part of a profile an attributes item reads and changes, and saveProfile() writes back. */
export interface EditableProfile {
  id: number;
  externalId: string | null;
  email: string | null;
  phone: string | null;
  /** Standard profile fields other than email and phone. */
  fields: Record<string, unknown>;
  custom: Record<string, unknown>;
  /** True once `language` was set through the API: device locale no longer overrides it. */
  languageFromApi: boolean;
}

export interface Profile extends EditableProfile {
  serviceId: string;
  /** A temporary anonymous profile created by push_token_import (spec 2.5 rule 3). */
  pushImport: boolean;
  createdAt: string;
  updatedAt: string;
  /** Orders profiles by their last update ("most recently updated", spec 4.4). */
  updatedSeq: number;
}

export interface StoredEvent {
  id: number;
  profileId: number;
  name: string;
  time: string;
  appId: string | null;
  properties: Record<string, unknown> | null;
}

export interface StoredPurchase {
  id: number;
  profileId: number;
  productId: string;
  currency: string;
  price: number;
  quantity: number;
  time: string;
  appId: string | null;
  properties: Record<string, unknown> | null;
}

export type NewEvent = Omit<StoredEvent, 'id'>;
export type NewPurchase = Omit<StoredPurchase, 'id'>;

export interface PushTokenRow {
  appId: string;
  token: string;
  deviceId: string | null;
  profileId: number;
}

export interface ActivitySummary {
  name: string;
  first: string;
  last: string;
  count: number;
}


interface ProfileDbRow {
  id: number;
  service_id: string;
  external_id: string | null;
  email: string | null;
  phone: string | null;
  fields: string;
  custom: string;
  push_import: number;
  language_from_api: number;
  created_at: string;
  updated_at: string;
  updated_seq: number;
}

/**
 * A profile read from the database. The JSON columns are parsed only when read (events need just the
 * id); saveProfile() writes a column never read back as it was, and leaves the external_id, email and
 * phone indexes alone when those columns are as read.
 */
class LoadedProfile implements EditableProfile {
  private parsedFields: Record<string, unknown> | undefined = undefined;
  private parsedCustom: Record<string, unknown> | undefined = undefined;
  /** external_id, email and phone as the database holds them. */
  storedExternalId: string | null;
  storedEmail: string | null;
  storedPhone: string | null;

  constructor(
    readonly id: number,
    public externalId: string | null,
    public email: string | null,
    public phone: string | null,
    private readonly fieldsText: string,
    private readonly customText: string,
    public languageFromApi: boolean,
  ) {
    this.storedExternalId = externalId;
    this.storedEmail = email;
    this.storedPhone = phone;
  }

  get fields(): Record<string, unknown> {
    return (this.parsedFields ??= JSON.parse(this.fieldsText) as Record<string, unknown>);
  }

  set fields(value: Record<string, unknown>) {
    this.parsedFields = value;
  }

  get custom(): Record<string, unknown> {
    return (this.parsedCustom ??= JSON.parse(this.customText) as Record<string, unknown>);
  }

  set custom(value: Record<string, unknown>) {
    this.parsedCustom = value;
  }

  fieldsJson(): string {
    return this.parsedFields === undefined ? this.fieldsText : JSON.stringify(this.parsedFields);
  }

  customJson(): string {
    return this.parsedCustom === undefined ? this.customText : JSON.stringify(this.parsedCustom);
  }
}

class StoredProfile extends LoadedProfile implements Profile {
  serviceId: string;
  pushImport: boolean;
  createdAt: string;
  updatedAt: string;
  updatedSeq: number;

  constructor(row: ProfileDbRow) {
    super(row.id, row.external_id, row.email, row.phone, row.fields, row.custom, row.language_from_api === 1);
    this.serviceId = row.service_id;
    this.pushImport = row.push_import === 1;
    this.createdAt = row.created_at;
    this.updatedAt = row.updated_at;
    this.updatedSeq = row.updated_seq;
  }
}

/** A profile from its row. */
function toProfile(row: ProfileDbRow): Profile {
  return new StoredProfile(row);
}

function parseJson(text: string | null): Record<string, unknown> | null {
  return text === null ? null : (JSON.parse(text) as Record<string, unknown>);
}

function propertiesJson(properties: Record<string, unknown> | null): string | null {
  return properties === null ? null : JSON.stringify(properties);
}

/** Rows per INSERT statement (50 items is a request under the default limits). */
const ROWS_PER_INSERT = 50;

let idPool = Buffer.alloc(0);
let idOffset = 0;

/** A new service_id: 24 hex characters, as the service's own identifiers look. */
export function newServiceId(): string {
  if (idOffset + 12 > idPool.length) {
    idPool = randomBytes(12 * 1024);
    idOffset = 0;
  }
  idOffset += 12;
  return idPool.toString('hex', idOffset - 12, idOffset);
}

/** Most external IDs the id cache holds; past this it starts over (a miss only costs a query). */
const ID_CACHE_LIMIT = 200_000;

/** The checkpointer thread's own connection: PASSIVE checkpoints, which neither wait nor are waited for. */
export function openCheckpointConnection(path: string): { checkpoint: () => void; close: () => void } {
  const db = new Database(path, { fileMustExist: true });
  db.pragma('busy_timeout = 0');
  // the writer keeps its own automatic checkpoints as a bound on the log; this one needs none
  db.pragma('wal_autocheckpoint = 0');
  return { checkpoint: () => void db.pragma('wal_checkpoint(PASSIVE)'), close: () => db.close() };
}

export class Store {
  private readonly db: Database.Database;
  private seq: number;
  private readonly stmt;
  private readonly inTransaction: (fn: () => unknown) => unknown;
  /**
   * external_id -> profile id, for profiles this store found or created. An external ID, once on a
   * profile, stays on it, and only deleteProfiles() removes profiles, so an entry goes stale only when
   * the write that made it is undone: any transaction that fails (and so rolls back, whole or to its
   * savepoint) empties the cache, as does deleteProfiles().
   */
  private readonly idCache = new Map<string, number>();
  private readonly checkpointThread: CheckpointThread | undefined;
  /** Multi-row INSERT statements, by table and row count, prepared when first needed. */
  private readonly inserts = new Map<string, Database.Statement>();

  /**
   * `checkpointThread`: checkpoint the log from a worker thread rather than on commit (the server
   * does; a short-lived command has nothing to gain from starting a thread).
   */
  constructor(
    readonly path: string,
    options: { checkpointThread?: boolean } = {},
  ) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // WAL with synchronous=NORMAL: a committed transaction survives the process being killed.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    // a larger page cache and memory-mapped reads keep lookups off the read() path
    this.db.pragma('cache_size = -65536');
    this.db.pragma('mmap_size = 268435456');
    upgradeActivityTables(this.db);
    this.db.pragma('foreign_keys = ON');
    this.db.exec(SCHEMA);
    const db = this.db;
    this.stmt = {
      byId: db.prepare<[number], ProfileDbRow>('SELECT * FROM profiles WHERE id = ?'),
      byExternalId: db.prepare<[string], ProfileDbRow>('SELECT * FROM profiles WHERE external_id = ?'),
      idByExternalId: db.prepare<[string], number>('SELECT id FROM profiles WHERE external_id = ?').pluck(),
      editableById: db
        .prepare<[number], [string | null, string | null, string | null, string, string, number]>(
          'SELECT external_id, email, phone, fields, custom, language_from_api FROM profiles WHERE id = ?',
        )
        .raw(),
      idByServiceId: db.prepare<[string], number>('SELECT id FROM profiles WHERE service_id = ?').pluck(),
      idByAlias: db.prepare<[string, string], number>('SELECT profile_id FROM aliases WHERE alias_label = ? AND alias_name = ?').pluck(),
      sharingEmail: db.prepare<[string], { id: number; external_id: string | null }>(
        'SELECT id, external_id FROM profiles WHERE email = ? ORDER BY updated_seq DESC',
      ),
      sharingPhone: db.prepare<[string], { id: number; external_id: string | null }>(
        'SELECT id, external_id FROM profiles WHERE phone = ? ORDER BY updated_seq DESC',
      ),
      byServiceId: db.prepare<[string], ProfileDbRow>('SELECT * FROM profiles WHERE service_id = ?'),
      // the custom attributes as bytes: no text decoded and encoded again, and no large string on the heap
      forExport: db.prepare<[number], ProfileDbRow & { custom_bytes: Buffer }>(
        `SELECT id, service_id, external_id, email, phone, fields, '{}' AS custom, push_import, language_from_api, created_at,
         updated_at, updated_seq, CAST(custom AS BLOB) AS custom_bytes FROM profiles WHERE id = ?`,
      ),
      byAlias: db.prepare<[string, string], ProfileDbRow>(
        'SELECT p.* FROM aliases a JOIN profiles p ON p.id = a.profile_id WHERE a.alias_label = ? AND a.alias_name = ?',
      ),
      idsByEmail: db.prepare<[string], { id: number }>('SELECT id FROM profiles WHERE email = ?'),
      all: db.prepare<[], ProfileDbRow>('SELECT * FROM profiles ORDER BY id'),
      insert: db.prepare(
        `INSERT INTO profiles (service_id, external_id, email, phone, fields, custom, push_import, created_at, updated_at, updated_seq)
         VALUES (?, ?, ?, ?, '{}', '{}', ?, ?, ?, ?)`,
      ),
      update: db.prepare(
        `UPDATE profiles SET external_id = ?, email = ?, phone = ?, fields = ?, custom = ?,
         language_from_api = ?, updated_at = ?, updated_seq = ? WHERE id = ?`,
      ),
      // the same when external_id, email and phone are as read: their indexes need no upkeep
      updateUnindexed: db.prepare('UPDATE profiles SET fields = ?, custom = ?, language_from_api = ?, updated_at = ?, updated_seq = ? WHERE id = ?'),
      // one pass over each activity table for the whole list, however many profiles it names
      deleteEventsOf: db.prepare<[string]>('DELETE FROM events WHERE profile_id IN (SELECT value FROM json_each(?))'),
      deletePurchasesOf: db.prepare<[string]>('DELETE FROM purchases WHERE profile_id IN (SELECT value FROM json_each(?))'),
      deleteProfiles: db.prepare<[string]>('DELETE FROM profiles WHERE id IN (SELECT value FROM json_each(?))'),
      maxSeq: db.prepare<[], { seq: number | null }>('SELECT MAX(updated_seq) AS seq FROM profiles'),
      insertAlias: db.prepare('INSERT OR IGNORE INTO aliases (alias_label, alias_name, profile_id) VALUES (?, ?, ?)'),
      aliasesOf: db.prepare<[number], { alias_name: string; alias_label: string }>(
        'SELECT alias_name, alias_label FROM aliases WHERE profile_id = ? ORDER BY rowid',
      ),
      eventsOf: db.prepare<[number], { id: number; profile_id: number; name: string; time: string; app_id: string | null; properties: string | null }>(
        activityQuery('events', 'a.*', 'ORDER BY a.id'),
      ),
      purchasesOf: db.prepare<[number], {
        id: number; profile_id: number; product_id: string; currency: string; price: number; quantity: number;
        time: string; app_id: string | null; properties: string | null;
      }>(activityQuery('purchases', 'a.*', 'ORDER BY a.id')),
      eventSummary: db.prepare<[number], ActivitySummary>(
        activityQuery('events', 'a.name AS name, MIN(a.time) AS first, MAX(a.time) AS last, COUNT(*) AS count', 'GROUP BY a.name ORDER BY a.name'),
      ),
      purchaseSummary: db.prepare<[number], ActivitySummary>(
        activityQuery(
          'purchases',
          // decisions.md: a purchase of quantity X counts as X purchases
          'a.product_id AS name, MIN(a.time) AS first, MAX(a.time) AS last, SUM(a.quantity) AS count',
          'GROUP BY a.product_id ORDER BY a.product_id',
        ),
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
      counts: db.prepare<[], { profiles: number; events: number; purchases: number }>(
        'SELECT (SELECT COUNT(*) FROM profiles) AS profiles, (SELECT COUNT(*) FROM events) AS events, (SELECT COUNT(*) FROM purchases) AS purchases',
      ),
    };
    this.seq = this.stmt.maxSeq.get()?.seq ?? 0;
    // one transaction function for every call: inside another transaction it runs in a savepoint
    this.inTransaction = db.transaction((fn: () => unknown) => fn());
    if (options.checkpointThread === true && !db.memory) {
      this.checkpointThread = startCheckpointThread(db.name, (pages) => {
        if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${pages}`);
      });
    }
  }

  /** Runs fn in one transaction: all of its writes commit together, or none do. */
  transaction<T>(fn: () => T): T {
    try {
      return this.inTransaction(fn) as T;
    } catch (error) {
      this.idCache.clear();
      throw error;
    }
  }

  /** False once SQLite has rolled back a transaction itself (after SQLITE_FULL, for one). */
  get transactionOpen(): boolean {
    return this.db.inTransaction;
  }

  private remember(externalId: string, id: number): void {
    if (this.idCache.size >= ID_CACHE_LIMIT) this.idCache.clear();
    this.idCache.set(externalId, id);
  }

  private nextSeq(): number {
    this.seq += 1;
    return this.seq;
  }

  profileById(id: number): Profile | undefined {
    const row = this.stmt.byId.get(id);
    return row === undefined ? undefined : toProfile(row);
  }

  idByExternalId(externalId: string): number | undefined {
    const cached = this.idCache.get(externalId);
    if (cached !== undefined) return cached;
    const id = this.stmt.idByExternalId.get(externalId);
    if (id !== undefined) this.remember(externalId, id);
    return id;
  }

  /** The editable part of the profile with this external ID (what an attributes item changes). */
  editableByExternalId(externalId: string): EditableProfile | undefined {
    const id = this.idByExternalId(externalId);
    if (id === undefined) return undefined;
    const row = this.stmt.editableById.get(id);
    if (row === undefined) {
      // gone behind this store's back (another connection deleted it): look it up afresh
      this.idCache.delete(externalId);
      const current = this.stmt.idByExternalId.get(externalId);
      return current === undefined || current === id ? undefined : this.editableByExternalId(externalId);
    }
    return new LoadedProfile(id, row[0], row[1], row[2], row[3], row[4], row[5] === 1);
  }

  idByServiceId(serviceId: string): number | undefined {
    return this.stmt.idByServiceId.get(serviceId);
  }

  idByAlias(alias: UserAlias): number | undefined {
    return this.stmt.idByAlias.get(alias.alias_label, alias.alias_name);
  }

  /** Profiles holding this email (or E.164 phone), most recently updated first. */
  profilesSharing(field: 'email' | 'phone', value: string): { id: number; externalId: string | null }[] {
    const stmt = field === 'email' ? this.stmt.sharingEmail : this.stmt.sharingPhone;
    return stmt.all(value).map((r) => ({ id: r.id, externalId: r.external_id }));
  }

  profileByExternalId(externalId: string): Profile | undefined {
    const row = this.stmt.byExternalId.get(externalId);
    if (row === undefined) return undefined;
    this.remember(externalId, row.id);
    return toProfile(row);
  }

  /** A profile to export, with its custom attributes as stored (UTF-8 JSON) rather than in `custom`. */
  profileForExport(id: number): { profile: Profile; customJson: Buffer } | undefined {
    const row = this.stmt.forExport.get(id);
    return row === undefined ? undefined : { profile: toProfile(row), customJson: row.custom_bytes };
  }

  profileByServiceId(serviceId: string): Profile | undefined {
    const row = this.stmt.byServiceId.get(serviceId);
    return row === undefined ? undefined : toProfile(row);
  }

  profileByAlias(alias: UserAlias): Profile | undefined {
    const row = this.stmt.byAlias.get(alias.alias_label, alias.alias_name);
    return row === undefined ? undefined : toProfile(row);
  }

  /** Every profile id with this email, temporary ones included (subscription fan-out, spec 2.3). */
  profileIdsWithEmail(email: string): number[] {
    return this.stmt.idsByEmail.all(email).map((r) => r.id);
  }

  allProfiles(): Profile[] {
    return this.stmt.all.all().map(toProfile);
  }

  createProfile(init: { externalId?: string; email?: string; phone?: string; pushImport?: boolean }): Profile {
    const now = nowIso();
    const row = {
      service_id: newServiceId(),
      external_id: init.externalId ?? null,
      email: init.email ?? null,
      phone: init.phone ?? null,
      fields: '{}',
      custom: '{}',
      push_import: init.pushImport ? 1 : 0,
      language_from_api: 0,
      created_at: now,
      updated_at: now,
      updated_seq: this.nextSeq(),
    };
    const info = this.stmt.insert.run(row.service_id, row.external_id, row.email, row.phone, row.push_import, now, now, row.updated_seq);
    const id = Number(info.lastInsertRowid);
    if (row.external_id !== null) this.remember(row.external_id, id);
    return toProfile({ id, ...row });
  }

  /** Writes back the editable part of a profile. */
  saveProfile(profile: EditableProfile): void {
    const read = profile instanceof LoadedProfile ? profile : undefined;
    const fields = read === undefined ? JSON.stringify(profile.fields) : read.fieldsJson();
    const custom = read === undefined ? JSON.stringify(profile.custom) : read.customJson();
    const languageFromApi = profile.languageFromApi ? 1 : 0;
    const now = nowIso();
    const seq = this.nextSeq();
    if (read !== undefined && read.externalId === read.storedExternalId && read.email === read.storedEmail && read.phone === read.storedPhone) {
      this.stmt.updateUnindexed.run(fields, custom, languageFromApi, now, seq, profile.id);
      return;
    }
    this.stmt.update.run(profile.externalId, profile.email, profile.phone, fields, custom, languageFromApi, now, seq, profile.id);
    // no caller moves an external ID, but should one, the cache must not keep the old one
    if (read === undefined || read.externalId !== read.storedExternalId) this.idCache.clear();
    if (read !== undefined) {
      read.storedExternalId = read.externalId;
      read.storedEmail = read.email;
      read.storedPhone = read.phone;
    }
  }

  /** Deletes these profiles with everything recorded on them. */
  deleteProfiles(ids: readonly number[]): void {
    if (ids.length === 0) return;
    const list = JSON.stringify(ids);
    this.transaction(() => {
      this.stmt.deleteEventsOf.run(list);
      this.stmt.deletePurchasesOf.run(list);
      this.stmt.deleteProfiles.run(list);
    });
    this.idCache.clear();
  }

  addAlias(profileId: number, alias: UserAlias): void {
    this.stmt.insertAlias.run(alias.alias_label, alias.alias_name, profileId);
  }

  aliasesOf(profileId: number): UserAlias[] {
    return this.stmt.aliasesOf.all(profileId);
  }

  /** Adds events in the order given; returns the id of the last. */
  insertEvents(events: readonly NewEvent[]): number {
    const values: unknown[] = [];
    for (const e of events) values.push(e.profileId, e.name, e.time, e.appId, propertiesJson(e.properties));
    return this.insertRows('events', values);
  }

  /** Adds purchases in the order given; returns the id of the last. */
  insertPurchases(purchases: readonly NewPurchase[]): number {
    const values: unknown[] = [];
    for (const p of purchases) values.push(p.profileId, p.productId, p.currency, p.price, p.quantity, p.time, p.appId, propertiesJson(p.properties));
    return this.insertRows('purchases', values);
  }

  /**
   * Inserts rows given as one list of column values, up to ROWS_PER_INSERT rows per statement: a
   * statement per row costs more in calls into SQLite than the row itself. Rows get ids in order.
   */
  private insertRows(table: ActivityTable, values: readonly unknown[]): number {
    const width = INSERT_COLUMNS[table].length;
    let last = 0;
    for (let start = 0; start < values.length; start += width * ROWS_PER_INSERT) {
      const chunk = values.length <= width * ROWS_PER_INSERT ? values : values.slice(start, start + width * ROWS_PER_INSERT);
      last = Number(this.insertStatement(table, chunk.length / width).run(chunk).lastInsertRowid);
    }
    return last;
  }

  private insertStatement(table: ActivityTable, rows: number): Database.Statement {
    const key = `${table} ${rows}`;
    let statement = this.inserts.get(key);
    if (statement === undefined) {
      const columns = INSERT_COLUMNS[table];
      const row = `(${columns.map(() => '?').join(', ')})`;
      statement = this.db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array<string>(rows).fill(row).join(', ')}`);
      this.inserts.set(key, statement);
    }
    return statement;
  }

  eventsOf(profileId: number): StoredEvent[] {
    return this.stmt.eventsOf.all(profileId).map((r) => ({
      id: r.id, profileId: r.profile_id, name: r.name, time: r.time, appId: r.app_id, properties: parseJson(r.properties),
    }));
  }

  purchasesOf(profileId: number): StoredPurchase[] {
    return this.stmt.purchasesOf.all(profileId).map((r) => ({
      id: r.id, profileId: r.profile_id, productId: r.product_id, currency: r.currency, price: r.price,
      quantity: r.quantity, time: r.time, appId: r.app_id, properties: parseJson(r.properties),
    }));
  }

  eventSummary(profileId: number): ActivitySummary[] {
    return this.stmt.eventSummary.all(profileId);
  }

  purchaseSummary(profileId: number): ActivitySummary[] {
    return this.stmt.purchaseSummary.all(profileId);
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

  counts(): { profiles: number; events: number; purchases: number } {
    return this.stmt.counts.get() as { profiles: number; events: number; purchases: number };
  }

  /** 'ok' when SQLite finds the file sound and every row's references resolve. */
  integrityCheck(): string {
    const integrity = String(this.db.pragma('integrity_check', { simple: true }));
    const dangling = (this.db.pragma('foreign_key_check') as unknown[]).length + (this.stmt.orphanActivity.get() as number);
    return dangling === 0 ? integrity : `${integrity}; ${dangling} rows reference missing rows`;
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
    if (this.db.open) this.db.close();
  }
}
