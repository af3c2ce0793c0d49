// A profile's row in the store: read into a Profile (its JSON columns parsed only when used), written
// back, and found by its identifiers. The store hands it its connection; nothing else uses it.
import type Database from '../sqlite.js';
import { randomBytes } from 'node:crypto';
import type { UserAlias } from '../model/index.js';
import { nowIso } from '../model/time.js';

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
    public id: number,
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

/**
 * A profile not in the database yet, as an item that creates one starts from: saveProfile() inserts
 * it whole (one row written, its indexes each given one entry) and gives it its id.
 */
class NewProfile extends LoadedProfile {
  inserted = false;

  constructor(
    externalId: string | null,
    email: string | null,
    phone: string | null,
    readonly pushImport: boolean,
  ) {
    super(0, externalId, email, phone, '{}', '{}', false);
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

/** id, external_id, email, phone, fields, custom, language_from_api: what an update reads. */
type EditableRow = [number, string | null, string | null, string | null, string, string, number];

function loadedProfile(row: EditableRow): LoadedProfile {
  return new LoadedProfile(row[0], row[1], row[2], row[3], row[4], row[5], row[6] === 1);
}

/** A profile from its row. */
function toProfile(row: ProfileDbRow): Profile {
  return new StoredProfile(row);
}

/** This process's part of every service_id it makes, and the counter after it (both start random). */
const ID_PROCESS = randomBytes(8);
let idCounter = ID_PROCESS.readUIntBE(5, 3);

/**
 * A new service_id: 24 hex characters laid out as the service's own identifiers are (seconds since
 * 1970, 5 random bytes of this process, a 3-byte counter). Made in rising order, each goes at the end
 * of the service_id index; random ones would each dirty a page of it, written to the log at commit.
 */
export function newServiceId(): string {
  const id = Buffer.allocUnsafe(12);
  id.writeUInt32BE(Math.floor(Date.now() / 1000) >>> 0, 0);
  ID_PROCESS.copy(id, 4, 0, 5);
  idCounter = (idCounter + 1) & 0xffffff;
  id.writeUIntBE(idCounter, 9, 3);
  return id.toString('hex');
}

/** Most external IDs the id cache holds; past this it starts over (a miss only costs a query). */
const ID_CACHE_LIMIT = 200_000;

/** The profiles table, as the store reads and writes it. */
export class ProfileRows {
  /** The last updated_seq given; read (a scan of the table) only when the first profile is written, not by a reader such as `track inspect`. */
  private seq: number | undefined;
  private readonly stmt;
  /**
   * external_id -> profile id, for profiles this store found or created. An external ID, once on a
   * profile, stays on it, and only the store's deleteProfiles() removes profiles, so an entry goes stale
   * only when the write that made it is undone: the store empties the cache (forgetIds) when any
   * transaction fails (and so rolls back, whole or to its savepoint), and after deleteProfiles().
   */
  private readonly idCache = new Map<string, number>();

  constructor(db: Database.Database) {
    this.stmt = {
      byId: db.prepare<[number], ProfileDbRow>('SELECT * FROM profiles WHERE id = ?'),
      byExternalId: db.prepare<[string], ProfileDbRow>('SELECT * FROM profiles WHERE external_id = ?'),
      idByExternalId: db.prepare<[string], number>('SELECT id FROM profiles WHERE external_id = ?').pluck(),
      editableById: db
        .prepare<[number], EditableRow>('SELECT id, external_id, email, phone, fields, custom, language_from_api FROM profiles WHERE id = ?')
        .raw(),
      editableByExternalId: db
        .prepare<[string], EditableRow>(
          'SELECT id, external_id, email, phone, fields, custom, language_from_api FROM profiles WHERE external_id = ?',
        )
        .raw(),
      idByServiceId: db.prepare<[string], number>('SELECT id FROM profiles WHERE service_id = ?').pluck(),
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
      after: db.prepare<[number, number], ProfileDbRow>('SELECT * FROM profiles WHERE id > ? ORDER BY id LIMIT ?'),
      insert: db.prepare(
        `INSERT INTO profiles (service_id, external_id, email, phone, fields, custom, push_import, language_from_api, created_at, updated_at, updated_seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      update: db.prepare(
        `UPDATE profiles SET external_id = ?, email = ?, phone = ?, fields = ?, custom = ?,
         language_from_api = ?, updated_at = ?, updated_seq = ? WHERE id = ?`,
      ),
      // the same when external_id, email and phone are as read: their indexes need no upkeep
      updateUnindexed: db.prepare('UPDATE profiles SET fields = ?, custom = ?, language_from_api = ?, updated_at = ?, updated_seq = ? WHERE id = ?'),
      maxSeq: db.prepare<[], { seq: number | null }>('SELECT MAX(updated_seq) AS seq FROM profiles'),
    };
  }

  /** Empties the id cache: a write that put an entry there may have been undone, or its profile deleted. */
  forgetIds(): void {
    this.idCache.clear();
  }

  private remember(externalId: string, id: number): void {
    if (this.idCache.size >= ID_CACHE_LIMIT) this.idCache.clear();
    this.idCache.set(externalId, id);
  }

  private nextSeq(): number {
    this.seq = (this.seq ?? this.stmt.maxSeq.get()?.seq ?? 0) + 1;
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
    const cached = this.idCache.get(externalId);
    if (cached === undefined) {
      const row = this.stmt.editableByExternalId.get(externalId);
      if (row === undefined) return undefined;
      this.remember(externalId, row[0]);
      return loadedProfile(row);
    }
    const row = this.stmt.editableById.get(cached);
    if (row === undefined) {
      // gone behind this store's back (another connection deleted it): look it up afresh
      this.idCache.delete(externalId);
      return this.editableByExternalId(externalId);
    }
    return loadedProfile(row);
  }

  idByServiceId(serviceId: string): number | undefined {
    return this.stmt.idByServiceId.get(serviceId);
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

  /** At most `limit` profiles created after the one of id `afterId`, in the order they were created. */
  profilesAfter(afterId: number, limit: number): Profile[] {
    return this.stmt.after.all(afterId, limit).map(toProfile);
  }

  createProfile(init: { externalId?: string; email?: string; emailAsSent?: string; phone?: string; pushImport?: boolean }): Profile {
    const now = nowIso();
    const row = {
      service_id: newServiceId(),
      external_id: init.externalId ?? null,
      email: init.email ?? null,
      phone: init.phone ?? null,
      // the address as the item spelt it, as an attributes item that creates the profile keeps it (email is its lookup key)
      fields: init.email !== undefined && init.emailAsSent !== undefined ? JSON.stringify({ email: init.emailAsSent }) : '{}',
      custom: '{}',
      push_import: init.pushImport ? 1 : 0,
      language_from_api: 0,
      created_at: now,
      updated_at: now,
      updated_seq: this.nextSeq(),
    };
    const info = this.stmt.insert.run(row.service_id, row.external_id, row.email, row.phone, row.fields, '{}', row.push_import, 0, now, now, row.updated_seq);
    const id = Number(info.lastInsertRowid);
    if (row.external_id !== null) this.remember(row.external_id, id);
    return toProfile({ id, ...row });
  }

  /**
   * A profile to be created, inserted by its first saveProfile() with all an item set on it: its id
   * is 0 until then, so nothing may be recorded on it before.
   */
  newProfile(init: { externalId?: string; email?: string; phone?: string; pushImport?: boolean }): EditableProfile {
    return new NewProfile(init.externalId ?? null, init.email ?? null, init.phone ?? null, init.pushImport === true);
  }

  private insertNew(profile: NewProfile): void {
    const now = nowIso();
    const info = this.stmt.insert.run(
      newServiceId(),
      profile.externalId,
      profile.email,
      profile.phone,
      profile.fieldsJson(),
      profile.customJson(),
      profile.pushImport ? 1 : 0,
      profile.languageFromApi ? 1 : 0,
      now,
      now,
      this.nextSeq(),
    );
    profile.id = Number(info.lastInsertRowid);
    profile.inserted = true;
    profile.storedExternalId = profile.externalId;
    profile.storedEmail = profile.email;
    profile.storedPhone = profile.phone;
    if (profile.externalId !== null) this.remember(profile.externalId, profile.id);
  }

  /** Writes back the editable part of a profile (inserts a new one). */
  saveProfile(profile: EditableProfile): void {
    if (profile instanceof NewProfile && !profile.inserted) {
      this.insertNew(profile);
      return;
    }
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
}
