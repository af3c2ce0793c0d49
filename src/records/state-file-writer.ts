// (Over 350 lines: the one class that writes a run into the state file, forgetting and learning, new users and known ones.)
// What a delivery writes to the delta state (in a thread of its own: state-writer.ts): before a
// request is posted, what it sends of users the state may know is held in doubt; once the server
// accepted its items, what they set is learned. New users' rows are added at the end of the file,
// PACK of them a row (no search, whatever the order of the ids); a known one's is found through the
// target's index in memory, and their pack written again. The index in the file is marked out of
// date by the first write of a run and saved at its end, so a run stopped in between, kill -9
// included, leaves it to be made again from the rows.
import { dirname } from 'node:path';
import type Database from '../sqlite.js';
import { OutputError } from '../errors.js';
import { namesKnownUsers, readLearnRecord, type LearnedAttributes } from './learn-record.js';
import { addDigest, digestPart, IN_DOUBT } from './state-record.js';
import { openStateFile, stateFailure, targetId } from './state-file.js';
import { admitKey, recordKey } from './state-keys.js';
import { ENTRY, forEachSavedEntry, indexFromRows, loadIndex, PACK, PACK_BYTES, packWith, patchIndex, rowBytes, rowDigest, rowValues, saveIndex, userInPack, varintBytes, writeVarint } from './state-rows.js';
import { PartedEntries } from './parted-entries.js';
import { IndexEntries, UserIndex } from './user-index.js';

export interface StateFileWriterOptions {
  /** The fingerprint of the run's API key (keyFingerprint): a target the state learned through other keys only is refused (state-keys.ts). */
  key?: string;
  /** Called in the transaction that saves the index, before it is committed (a test stops the process there). */
  whileSaving?: () => void;
  /** Slabs of index entries held in memory before the earlier ones spill beside the file (PartedEntries; tests spill sooner). */
  spillAfter?: number;
}

/** Entries of #pending searched, per entry it holds, before an index of them is made (see #searching). */
const SEARCHES = 8;

/** The key in meta saying the indexes of the file were made again from their rows once (see the constructor). */
const INDEX_REMADE = 'index-remade';

/** A request the server accepted. */
export interface Accepted {
  learn: Uint8Array;
  rejected: (index: number) => boolean;
}

/**
 * Opens (creating it when needed, converting an earlier format, making the index again after a run
 * that was stopped) the state file for a delivery to `target`. The caller holds its lock.
 */
export function openStateFileWriter(path: string, target: string, options: StateFileWriterOptions = {}): StateFileWriter {
  const { db } = openStateFile(path, false);
  try {
    return new StateFileWriter(path, db, target, options);
  } catch (error) {
    db.close();
    // what it writes as it opens (the index made again, the mark that it was) names the file when it fails, a disk full
    throw /^SQLITE_/.test(String((error as { code?: unknown }).code)) ? writeFailure(path, error) : error;
  }
}

export class StateFileWriter {
  readonly #db: Database.Database;
  readonly #target: number;
  readonly #nameIds = new Map<string, number>();
  /**
   * The rows this run added, by key hash (in a first run, the whole index): in #pending, whose part
   * of the key is searched for a user, until such searches have cost about what an index of them
   * would (#searching); then in an index made of them at once (#additions: see #added), which takes
   * the rows added after it.
   */
  #pending: PartedEntries;
  #additions: UserIndex | undefined;
  /** Entries the searches of #pending looked at. */
  #searched = 0;
  /** The digests of rows the file held before the run that it changed (in the order they were set). */
  readonly #changes = new IndexEntries();
  /** The target held no user when the run began: this run's rows are the whole index. */
  #startedEmpty: boolean;
  #index: UserIndex | undefined;
  /** New users waiting for their pack to be added: how many, and per user their row's digest and their key hash; the pack's bytes are #rowBytes up to #rowsEnd. */
  #newCount = 0;
  readonly #newRows = new Float64Array(PACK * 2);
  #rowBytes: Buffer = Buffer.allocUnsafe(64 * 1024);
  #rowsEnd = 0;
  /** #rowBytes as a view (made again when it grows). */
  #view = new DataView(this.#rowBytes.buffer, this.#rowBytes.byteOffset, this.#rowBytes.byteLength);
  /** The run has written the target's users: the index in the file is out of date until saved. */
  #writing = false;
  /** What a write failed with: every later call throws it. */
  #failure: Error | undefined;
  /** The run's key, recorded for the target with the first thing the run learns (admitKey). */
  #keyToRecord: string | undefined;
  /** The target had learned before the state kept keys, and is now tied to the run's key (admitKey). */
  readonly adopted: boolean = false;
  readonly #statements;

  constructor(
    private readonly path: string,
    db: Database.Database,
    url: string,
    private readonly options: StateFileWriterOptions,
  ) {
    this.#db = db;
    this.#pending = new PartedEntries(dirname(path), options.spillAfter);
    // a target the state learned through other keys only is refused before anything is written
    const admitted = options.key === undefined ? 'known' : admitKey(db, path, url, options.key);
    if (admitted === 'later') this.#keyToRecord = options.key;
    this.adopted = admitted === 'adopted';
    db.prepare('INSERT OR IGNORE INTO targets (url) VALUES (?)').run(url);
    this.#target = targetId(db, url)!;
    for (const [id, name] of db.prepare('SELECT id, name FROM names').raw().iterate() as Iterable<[number, string]>) this.#nameIds.set(name, id);
    this.#statements = {
      addName: db.prepare('INSERT OR IGNORE INTO names (name) VALUES (?)'),
      idOfName: db.prepare('SELECT id FROM names WHERE name = ?').pluck(),
      addPack: db.prepare('INSERT INTO packs (target, users) VALUES (?, ?)'),
      setPack: db.prepare('UPDATE packs SET users = ? WHERE id = ?'),
      packById: db.prepare('SELECT users FROM packs WHERE id = ?').pluck(),
      addActivity: db.prepare('INSERT OR IGNORE INTO activities (target, hash) VALUES (?, ?)'),
      outOfDate: db.prepare('UPDATE targets SET fresh = 0 WHERE id = ?'),
      touched: db.prepare('UPDATE targets SET updated = ? WHERE id = ?'),
    };
    // an index an earlier track saved may hold a user twice (UserIndex.holdsARowTwice): the first run of
    // this one on the file has each target's made again from the rows, this one's now, the others' at
    // their next run (a target of no users has none to make: a first run makes its own at its end)
    if (db.prepare('SELECT 1 FROM meta WHERE key = ?').get(INDEX_REMADE) === undefined) {
      db.transaction(() => {
        db.prepare('UPDATE targets SET fresh = 0 WHERE users > 0').run();
        db.prepare("INSERT INTO meta (key, value) VALUES (?, '1')").run(INDEX_REMADE);
      })();
    }
    // a run stopped before it saved the index: it is made again from the rows now, before a plan reads it
    const { fresh, users } = db.prepare('SELECT fresh, users FROM targets WHERE id = ?').get(this.#target) as { fresh: number; users: number };
    if (fresh !== 1) db.transaction(() => saveIndex(db, this.#target, (this.#index = indexFromRows(db, this.#target))))();
    this.#startedEmpty = (this.#index?.size ?? users) === 0;
  }

  /**
   * The target's whole index (with this run's rows and changes), read (or made from the rows) only
   * when it must be: a user the plan did not find the row of, or the end of a run that added users to
   * a target that had some. A plan in this process may hold a copy of it already.
   */
  #indexOf(): UserIndex {
    if (this.#index === undefined) {
      // the index saved as the run began (made to match the rows when it opened the file), though the
      // run marks it out of date before its first write (#willWrite), with what the run wrote since
      const saved = loadIndex(this.#db, this.#target, true);
      // none when it holds a row twice, as an earlier track may have left it: made from the rows, which hold what the run wrote
      if (saved === undefined) this.#index = indexFromRows(this.#db, this.#target);
      else {
        this.#replayWrites(
          (key, row, digest) => saved.add(key, row, digest),
          (key, row, digest) => saved.set(key, row, digest),
        );
        this.#index = saved;
      }
    }
    return this.#index;
  }

  /** The row of the user of a learned item, whose key is `userKey` (its slot, and where it is in its pack): by the slot the plan found, among this run's rows, or through the whole index. */
  #locate(item: LearnedAttributes, userKey: string): Found | undefined {
    const at = (slot: number, added: boolean): Found | undefined => {
      const pack = this.#statements.packById.get(Math.floor(slot / PACK)) as Buffer | undefined;
      if (pack === undefined) return undefined;
      const place = userInPack(pack, slot % PACK, userKey);
      if (place === undefined) return undefined;
      return { slot, pack, start: place.start, end: place.end, attrs: pack.subarray(place.keyEnd, place.end), added };
    };
    let found: Found | undefined;
    const fn = (added: boolean) => (slot: number): boolean => {
      found = at(slot, added);
      return found !== undefined;
    };
    const known = item.row > 0 ? at(item.row, false) : undefined;
    if (known !== undefined) return known;
    if (this.#searching) this.#searched += this.#pending.find(item.keyHash, fn(true));
    else this.#added().find(item.keyHash, fn(true));
    // a user the plan did not find the row of (a later row of one it found, sent whole; a false match of its filter)
    if (found === undefined && !this.#startedEmpty) this.#indexOf().find(item.keyHash, fn(false));
    return found;
  }

  /**
   * Whether this run's rows are still searched for in #pending: until the searches have looked at
   * SEARCHES times the entries it holds (an entry searched costs about an eighth of one laid out in
   * an index, which then takes 23 bytes a user more).
   */
  get #searching(): boolean {
    return this.#additions === undefined && this.#searched <= SEARCHES * this.#pending.count;
  }

  /** The index of the rows this run added: made of #pending when first asked for, the rows added after it going into it. */
  #added(): UserIndex {
    // made of the entries, it leaves #pending empty (and lets go of its memory)
    this.#additions ??= UserIndex.of(this.#pending);
    return this.#additions;
  }

  /** Whether the rows this run added are held in an index (searches of them came to cost more than one), no longer as entries searched. */
  get indexesAdded(): boolean {
    return this.#additions !== undefined;
  }

  /** Whether the writer holds the target's whole index (read, or made from the rows: see #indexOf), not only what the run wrote. */
  get holdsWholeIndex(): boolean {
    return this.#index !== undefined;
  }

  /** Notes a row's new digest (a row of this run's, or one the file held before it). */
  #noteDigest(keyHash: number, id: number, digest: number, added: boolean): void {
    if (!added) this.#changes.push(keyHash, id, digest);
    else if (this.#searching) this.#searched += this.#pending.set(keyHash, id, digest);
    else this.#added().set(keyHash, id, digest);
    this.#index?.set(keyHash, id, digest);
  }

  #nameId(name: string): number {
    let id = this.#nameIds.get(name);
    if (id === undefined) {
      this.#statements.addName.run(name);
      id = this.#statements.idOfName.get(name) as number;
      this.#nameIds.set(name, id);
    }
    return id;
  }

  /** Marks the index in the file out of date, in the first transaction of the run that writes users. */
  #willWrite(): void {
    if (this.#writing) return;
    this.#statements.outOfDate.run(this.#target);
    this.#writing = true;
  }

  /** A user the plan did not know: their row is added at the end, from what the request set, in the pack waiting. */
  #addNew(item: LearnedAttributes, ids: readonly number[]): void {
    // written where the waiting pack is: the lengths, the key (its UTF-8 bytes as the record holds them), the row
    const keyLength = item.keyEnd - item.keyStart;
    const size = varintBytes(keyLength) + varintBytes(item.count) + keyLength + item.count * ENTRY;
    if (this.#newCount > 0 && this.#rowsEnd + size > PACK_BYTES) this.#addWaitingRows();
    if (this.#rowBytes.length < this.#rowsEnd + size) {
      this.#rowBytes = growBuffer(this.#rowBytes, this.#rowsEnd + size);
      this.#view = new DataView(this.#rowBytes.buffer, this.#rowBytes.byteOffset, this.#rowBytes.byteLength);
    }
    const bytes = this.#rowBytes;
    const record = item.record;
    let at = writeVarint(bytes, writeVarint(bytes, this.#rowsEnd, keyLength), item.count);
    for (let from = item.keyStart; from < item.keyEnd; from += 1) bytes[at++] = record[from];
    const view = this.#view;
    let digest = item.userPart;
    for (let i = 0; i < item.count; i += 1) {
      const nameId = ids[item.name(i)];
      // a value not learned (an operation that adds, a merge, an item the service may skip) is held in doubt
      const doubt = item.forget(i);
      const h1 = doubt ? IN_DOUBT[0] : item.h1(i);
      const h2 = doubt ? IN_DOUBT[1] : item.h2(i);
      view.setUint32(at, nameId, true);
      view.setInt32(at + 4, h1, true);
      view.setInt32(at + 8, h2, true);
      digest = addDigest(digest, digestPart(nameId, h1, h2));
      at += ENTRY;
    }
    this.#rowsEnd = at;
    this.#newRows[this.#newCount * 2] = digest;
    this.#newRows[this.#newCount * 2 + 1] = item.keyHash;
    if (++this.#newCount === PACK) this.#addWaitingRows();
  }

  /** Adds the pack of the new users waiting, and enters them in the index. */
  #addWaitingRows(): void {
    const count = this.#newCount;
    if (count === 0) return;
    this.#willWrite();
    const pack = Number(this.#statements.addPack.run(this.#target, this.#rowBytes.subarray(0, this.#rowsEnd)).lastInsertRowid);
    this.#newCount = 0;
    this.#rowsEnd = 0;
    const rows = this.#newRows;
    for (let place = 0; place < count; place += 1) {
      if (this.#additions === undefined) this.#pending.push(rows[place * 2 + 1], pack * PACK + place, rows[place * 2]);
      else this.#additions.add(rows[place * 2 + 1], pack * PACK + place, rows[place * 2]);
      this.#index?.add(rows[place * 2 + 1], pack * PACK + place, rows[place * 2]);
    }
  }

  /**
   * A user the state may know: before the request is posted, what it sends is held in doubt
   * (IN_DOUBT); once it is accepted, what it set is learned (and what it does not learn, an
   * operation that adds, stays in doubt: the server holds a value of it).
   */
  #change(item: LearnedAttributes, ids: readonly number[], posting: boolean): void {
    // new users waiting come first when one of them may be this user, earlier in the request (else they wait for others to fill their pack)
    if (this.#isWaiting(item.keyHash)) this.#addWaitingRows();
    // decoded from the record once (each read of item.userKey decodes it)
    const userKey = item.userKey;
    const found = this.#locate(item, userKey);
    if (found === undefined && posting) return;
    // a user the plan took for one the state may know (its index matched another's key), added as a new one is, in a pack with others
    if (found === undefined) return this.#addNew(item, ids);
    const values = rowValues(found.attrs);
    for (let i = 0; i < item.count; i += 1) {
      const nameId = ids[item.name(i)];
      if (posting || item.forget(i)) values.set(nameId, IN_DOUBT);
      else values.set(nameId, [item.h1(i), item.h2(i)]);
    }
    // an item that set nothing of a user the row holds changes nothing
    if (item.count === 0) return;
    const bytes = rowBytes(values);
    this.#willWrite();
    const slot = found.slot;
    this.#statements.setPack.run(packWith(found.pack, found.start, found.end, { key: userKey, attrs: bytes }), Math.floor(slot / PACK));
    this.#noteDigest(item.keyHash, slot, rowDigest(item.userPart, bytes), found.added);
  }

  /** Whether a new user waiting for their pack has this key hash. */
  #isWaiting(keyHash: number): boolean {
    for (let i = 0; i < this.#newCount; i += 1) if (this.#newRows[i * 2 + 1] === keyHash) return true;
    return false;
  }

  /** Learns what a request's accepted items set. */
  #learn({ learn, rejected }: Accepted): void {
    const record = readLearnRecord(learn);
    const ids = record.names.map((name) => this.#nameId(name));
    record.forEach((index, item) => {
      if (item === undefined || rejected(index)) return;
      if (item instanceof Uint8Array) this.#statements.addActivity.run(this.#target, item);
      else if (item.known) this.#change(item, ids, false);
      else this.#addNew(item, ids);
    });
  }

  /** Runs fn in a transaction; its failure names the file, and stops every later call. */
  #write(fn: () => void): void {
    if (this.#failure !== undefined) throw this.#failure;
    try {
      this.#db.transaction(fn).immediate();
    } catch (error) {
      this.#newCount = 0;
      this.#rowsEnd = 0;
      throw (this.#failure = writeFailure(this.path, error));
    }
  }

  /** Checks the whole file (SQLite's quick_check: every page read and its structure checked); a damaged one is an input error naming it. */
  check(): void {
    let problem: string | undefined;
    try {
      // every page is read once: a cache would only hold what is done with
      this.#db.pragma('cache_size = -256');
      const result = this.#db.pragma('quick_check(1)', { simple: true }) as string;
      if (result !== 'ok') problem = result;
      this.#db.pragma('cache_size = -2000');
    } catch (error) {
      throw stateFailure(this.path, error);
    }
    if (problem !== undefined) throw stateFailure(this.path, Object.assign(new Error(problem), { code: 'SQLITE_CORRUPT' }));
  }

  /** Forgets what a request is about to send of users the state may know (written before it returns). */
  sending(learn: Uint8Array): void {
    // most requests of a first run name no user the state may know: nothing to write for them
    if (!namesKnownUsers(learn)) return;
    const record = readLearnRecord(learn);
    this.#write(() => {
      const ids = record.names.map((name) => this.#nameId(name));
      record.forEach((_, item) => {
        if (item !== undefined && !(item instanceof Uint8Array) && item.known) this.#change(item, ids, true);
      });
    });
  }

  /**
   * Learns what requests' accepted items set, in one transaction: `next()` gives each request's
   * record in turn (undefined after the last), read before the next is asked for, with
   * `rejected(i)` for the items (in body order) the server refused.
   */
  accepted(next: () => Accepted | undefined): void {
    this.#write(() => {
      for (let request = next(); request !== undefined; request = next()) this.#learn(request);
      this.#addWaitingRows();
      this.#statements.touched.run(new Date().toISOString(), this.#target);
      if (this.#keyToRecord !== undefined) recordKey(this.#db, this.#target, this.#keyToRecord);
      this.#keyToRecord = undefined;
    });
  }

  /** Gives what the run wrote of the index: the rows it added to `add`, then the digests it changed to `set`, in the order they were set. */
  #replayWrites(add: (key: number, row: number, digest: number) => void, set: (key: number, row: number, digest: number) => void): void {
    this.#additions?.forEach(add);
    this.#pending.forEach(add);
    this.#changes.forEach(set);
  }

  /**
   * Saves the index: the whole index when the writer holds it already; this run's rows when they are
   * the whole of it; the digests it changed, slab by slab, when it added none; else laid out from
   * the saved one's entries and the run's (#layIndex), or, when the saved one holds a row twice,
   * made from the rows.
   */
  #saveIndex(): void {
    if (this.#index !== undefined) return saveIndex(this.#db, this.#target, this.#index);
    if (this.#startedEmpty) return saveIndex(this.#db, this.#target, this.#additions ?? this.#pending);
    const added = (this.#additions?.size ?? 0) + this.#pending.count;
    if (added === 0 && patchIndex(this.#db, this.#target, this.#changes)) return;
    if (this.#layIndex()) return;
    saveIndex(this.#db, this.#target, this.#indexOf());
  }

  /**
   * Saves the index the file held as the run began with the rows the run added and the digests it
   * changed, laid out from their entries a part at a time, never the whole index held (most of the
   * entries spilled beside the file: PartedEntries); false, saving nothing, when the file's is to be
   * made from the rows (it holds a row twice).
   */
  #layIndex(): boolean {
    const entries = new PartedEntries(dirname(this.path), this.options.spillAfter);
    const push = (key: number, row: number, digest: number): void => entries.push(key, row, digest);
    try {
      if (!forEachSavedEntry(this.#db, this.#target, push)) return false;
      // a row's changed digest, pushed after its entry, is the one laid out
      this.#replayWrites(push, push);
      saveIndex(this.#db, this.#target, entries);
      return true;
    } finally {
      entries.discard();
    }
  }

  /** Writes what is waiting, saves the index, and closes the file. */
  close(): void {
    try {
      if (this.#writing) {
        this.#write(() => {
          this.#saveIndex();
          this.options.whileSaving?.();
        });
      }
    } finally {
      this.#pending.discard();
      this.#db.close();
    }
  }
}

/** A user's row found in the file: their slot, their pack and where they are in it (from `start` to `end`), their row, and whether this run added it. */
interface Found {
  slot: number;
  pack: Buffer;
  start: number;
  end: number;
  attrs: Buffer;
  added: boolean;
}

/** A bigger buffer holding what this one holds. */
function growBuffer(bytes: Buffer, size: number): Buffer {
  const bigger = Buffer.allocUnsafe(Math.max(size, bytes.length * 2));
  bytes.copy(bigger);
  return bigger;
}

/** An error of the state file while a run writes it, naming the file (damaged, a disk full). */
function writeFailure(path: string, error: unknown): Error {
  const damaged = stateFailure(path, error);
  if (damaged !== error) return damaged;
  return new OutputError(`--state ${path} could not be written: ${(error as Error).message}`, path);
}
