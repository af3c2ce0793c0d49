// The index of a target's users as the state file keeps it: a run that changes only known users
// patches it in place (the slabs it touches, one at a time), and the index read back then matches
// the rows; a run killed while it saves it leaves the rows it learned and the index made again; one
// that adds users holds each once; users of one key hash and targets of one file stay apart, and a
// user the plan's index matches by the end of their key only is not taken for another; an
// index not as saved is refused as a damaged file; a patch leaves the process's gc as it found it.
import { spawnSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { learnRecordWriter, userMark, type HeldValues } from '../../src/records/learn-record-writer.js';
import { KEY_HASH, keyHashInto, userPart, valueHash } from '../../src/records/state-record.js';
import { openStateFileWriter } from '../../src/records/state-file-writer.js';
import { indexFromRows, loadIndex, loadReadIndex, PACK, patchIndex, rowDigest, saveIndex, unpack, wordsOf } from '../../src/records/state-rows.js';
import { ReadIndex } from '../../src/records/read-index.js';
import { listState, openStateReader } from '../../src/records/state.js';
import { forgetTarget } from '../../src/records/state-file.js';
import { IndexEntries, type UserIndex } from '../../src/records/user-index.js';
import { ROOT, tempDir } from '../helpers/cli.js';
import { withRowsInFile } from '../helpers/rows-in-file.js';
import { isRoot, withSmallDisk } from '../helpers/small-disk.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const T = 'http://127.0.0.1:4000/users/track';

/** The files this process holds open. */
const openFiles = (): number => readdirSync('/proc/self/fd').length;

const USERS = 5000;

/** Has the writer learn these records, each a request the server accepted whole. */
function accept(writer: ReturnType<typeof openStateFileWriter>, records: Uint8Array[]): void {
  let next = 0;
  writer.accepted(() => (next < records.length ? { learn: records[next++], rejected: () => false } : undefined));
}

/** A state file (its path) a first run wrote: users u0 to u(USERS-1), plan "free" and their number, 500 a request. */
function firstRun(): string {
  const path = join(tmp.dir, 'state.sqlite');
  const records: Uint8Array[] = [];
  for (let from = 0; from < USERS; from += 500) {
    const record = learnRecordWriter();
    for (let i = from; i < from + 500; i += 1) record.add(userMark(false, -1), { external_id: `u${i}`, plan: 'free', n: i });
    records.push(record.finish());
  }
  const writer = openStateFileWriter(path, T);
  accept(writer, records);
  writer.close();
  return path;
}

/**
 * A record of known users' new plans, as a plan gives it: with the rows it found them at (the
 * writer then reads no index of its own, and patches the file's at its end).
 */
function knownRecord(users: Array<{ i: number; row: number; plan: string }>): Uint8Array {
  const held: HeldValues = {
    holds: () => true,
    keyHashOf(at, into, offset) {
      keyHashInto(`e:u${users[at].i}`);
      into.set(KEY_HASH, offset);
    },
    rowOf: (at) => users[at].row,
    count: () => 1,
    // each user's one value, VALUE words each
    words: Int32Array.from(users.flatMap((user) => [0, 0, ...valueHash(user.plan)])),
    valuesAt: (at) => at * 4,
    nameOf: () => 'plan',
  };
  const record = learnRecordWriter(held);
  users.forEach((user, at) => record.add(userMark(true, at), { external_id: `u${user.i}`, plan: user.plan }));
  return record.finish();
}

/** The rows of users u0 to u(USERS-1), as a plan finds them. */
function rowsOf(path: string): number[] {
  const reader = openStateReader(path, T);
  const rows = Array.from({ length: USERS }, (_, i) => {
    keyHashInto(`e:u${i}`);
    return reader.user(`e:u${i}`, KEY_HASH[0])!.row;
  });
  reader.close();
  return rows;
}

/** An index's entries, by row. */
function entriesOf(index: UserIndex): number[][] {
  const list: number[][] = [];
  index.forEach((key, row, digest) => list.push([key, row, digest]));
  return list.sort((a, b) => a[1] - b[1]);
}

/** The index the file holds (undefined: out of date) and the one made from its rows. */
function indexes(path: string, target = 1): { saved: number[][] | undefined; made: number[][] } {
  const db = new Database(path, { readonly: true });
  try {
    const saved = loadIndex(db, target);
    return { saved: saved && entriesOf(saved), made: entriesOf(indexFromRows(db, target)) };
  } finally {
    db.close();
  }
}

/** Whether u`i` holds this plan in the state. */
function holdsPlan(path: string, i: number, plan: string): boolean {
  const reader = openStateReader(path, T);
  keyHashInto(`e:u${i}`);
  const holds = reader.user(`e:u${i}`, KEY_HASH[0])?.holds('plan', ...valueHash(plan)) === true;
  reader.close();
  return holds;
}

describe('the index in the state file', () => {
  it('a run that changes known users patches it in place: read back, it matches the rows, and finds every user with their row', () => {
    const path = firstRun();
    const rows = rowsOf(path);
    // every 50th user changes; u7 changes twice in the run (its last digest is the one kept)
    const changed = Array.from({ length: USERS / 50 }, (_, n) => ({ i: n * 50, row: rows[n * 50], plan: 'pro' }));
    const writer = openStateFileWriter(path, T);
    writer.sending(knownRecord(changed));
    accept(writer, [knownRecord(changed), knownRecord([{ i: 7, row: rows[7], plan: 'gold' }]), knownRecord([{ i: 7, row: rows[7], plan: 'team' }])]);
    writer.close();
    const { saved, made } = indexes(path);
    expect(saved).toHaveLength(USERS);
    expect(saved).toEqual(made);
    expect(rowsOf(path)).toEqual(rows);
    expect(holdsPlan(path, 50, 'pro')).toBe(true);
    expect(holdsPlan(path, 51, 'free')).toBe(true);
    expect(holdsPlan(path, 7, 'team')).toBe(true);
    expect(holdsPlan(path, 7, 'gold')).toBe(false);
  });

  it('patched, a row set twice keeps its last digest; a row it does not hold leaves the patch undone (the caller saves it whole)', () => {
    const path = firstRun();
    const before = indexes(path).saved!;
    const db = new Database(path);
    const changes = new IndexEntries();
    for (const [key, row] of before.filter((_, n) => n % 100 === 0)) changes.push(key, row, 12345);
    changes.push(before[3][0], before[3][1], 1);
    changes.push(before[3][0], before[3][1], 2);
    expect(db.transaction(() => patchIndex(db, 1, changes))()).toBe(true);
    const patched = entriesOf(loadIndex(db, 1)!);
    expect(patched).toEqual(before.map(([key, row, digest], n) => [key, row, n % 100 === 0 ? 12345 : n === 3 ? 2 : digest]));
    const unknown = new IndexEntries();
    unknown.push(before[5][0], before[5][1] + 1, 7);
    expect(db.transaction(() => patchIndex(db, 1, unknown))()).toBe(false);
    db.close();
  });

  it('a writer killed (SIGKILL) once it patched the index, before the patch is committed, leaves the rows it learned, and the index made again from them', () => {
    const path = firstRun();
    const rows = rowsOf(path);
    const changed = Array.from({ length: USERS / 50 }, (_, n) => ({ i: n * 50 + 1, row: rows[n * 50 + 1], plan: 'pro' }));
    const learn = join(tmp.dir, 'learn.bin');
    writeFileSync(learn, knownRecord(changed));
    const script = join(tmp.dir, 'killed.mjs');
    writeFileSync(
      script,
      `import { readFileSync } from 'node:fs';
       import { openStateFileWriter } from '${ROOT}/dist/records/state-file-writer.js';
       const writer = openStateFileWriter(${JSON.stringify(path)}, ${JSON.stringify(T)}, { whileSaving: () => process.kill(process.pid, 'SIGKILL') });
       const learn = new Uint8Array(readFileSync(${JSON.stringify(learn)}));
       let given = false;
       writer.accepted(() => (given ? undefined : ((given = true), { learn, rejected: () => false })));
       writer.close();`,
    );
    const killed = spawnSync(process.execPath, [script], { encoding: 'utf8' });
    expect(killed.signal).toBe('SIGKILL');
    expect(readFileSync(learn).length).toBeGreaterThan(0);
    // the index in the file is out of date (the patch was not committed): it is made from the rows
    expect(indexes(path).saved).toBeUndefined();
    expect(holdsPlan(path, 51, 'pro')).toBe(true);
    expect(holdsPlan(path, 50, 'free')).toBe(true);
    // a writer makes it again and saves it
    openStateFileWriter(path, T).close();
    const { saved, made } = indexes(path);
    expect(saved).toHaveLength(USERS);
    expect(saved).toEqual(made);
  });
});

describe('a run that adds users to a target that had some', () => {
  it('saves an index that holds each of them once: changed later, their earlier digest is not found (the plan would skip them)', () => {
    const path = firstRun();
    const record = learnRecordWriter();
    record.add(userMark(false, -1), { external_id: 'u6000', plan: 'free', n: 6000 });
    const adding = openStateFileWriter(path, T);
    accept(adding, [record.finish()]);
    adding.close();
    expect(indexes(path).saved).toEqual(indexes(path).made);
    keyHashInto('e:u6000');
    const key = KEY_HASH[0];
    const reader = openStateReader(path, T);
    const row = reader.user('e:u6000', key)!.row;
    reader.close();
    const free = indexes(path).made.find((entry) => entry[1] === row)![2];
    // a run that changes them only (the index patched in place)
    const writer = openStateFileWriter(path, T);
    accept(writer, [knownRecord([{ i: 6000, row, plan: 'pro' }])]);
    writer.close();
    const after = openStateReader(path, T);
    expect(after.hasRow(key, free)).toBe(false);
    after.close();
    expect(indexes(path).saved).toEqual(indexes(path).made);
  });

  it('saves the index its rows make when it also changes users the target had, and when it reads the whole index mid-run', () => {
    const path = firstRun();
    const rows = rowsOf(path);
    /** A record of users `e:<prefix><i>` as sent (`known`: as a plan marks a user it did not find the row of). */
    const sent = (prefix: string, from: number, to: number, plan: string, known = false): Uint8Array => {
      const record = learnRecordWriter();
      for (let i = from; i < to; i += 1) record.add(userMark(known, -1), { external_id: `${prefix}${i}`, plan });
      return record.finish();
    };
    // users changed (the index not patched: the run adds some too)
    let writer = openStateFileWriter(path, T);
    accept(writer, [knownRecord([{ i: 7, row: rows[7], plan: 'pro' }, { i: 8, row: rows[8], plan: 'pro' }]), sent('n', 0, 100, 'free')]);
    writer.close();
    expect(indexes(path).saved).toEqual(indexes(path).made);
    expect(holdsPlan(path, 7, 'pro')).toBe(true);
    // users added, then sent again until an index of them is made; then one the target had, whose row the plan did not find
    writer = openStateFileWriter(path, T);
    accept(writer, [sent('w', 0, 200, 'free')]);
    for (let i = 0; i < 6; i += 1) accept(writer, [sent('w', 0, 200, `plan${i}`, true)]);
    expect(writer.indexesAdded).toBe(true);
    accept(writer, [sent('u', 9, 10, 'pro', true), sent('w', 200, 300, 'free'), sent('u', 10, 11, 'pro', true)]);
    writer.close();
    expect(indexes(path).saved).toEqual(indexes(path).made);
    expect(holdsPlan(path, 9, 'pro')).toBe(true);
    expect(listState(path)).toEqual([expect.objectContaining({ users: USERS + 400 })]);
  });

  it('lays the index out from the file\'s entries, the users it adds and the digests it changes (the last one set), never reading it whole', () => {
    const path = firstRun();
    const rows = rowsOf(path);
    const sent = (from: number, to: number, plan: string, known = false): Uint8Array => {
      const record = learnRecordWriter();
      for (let i = from; i < to; i += 1) record.add(userMark(known, -1), { external_id: `w${i}`, plan });
      return record.finish();
    };
    const writer = openStateFileWriter(path, T);
    accept(writer, [knownRecord([{ i: 7, row: rows[7], plan: 'pro' }]), sent(0, 200, 'free')]);
    // users added sent again until an index of them is made, then more added, and u7 changed again
    for (let i = 0; i < 6; i += 1) accept(writer, [sent(0, 200, `plan${i}`, true)]);
    expect(writer.indexesAdded).toBe(true);
    accept(writer, [sent(200, 300, 'free'), knownRecord([{ i: 7, row: rows[7], plan: 'gold' }])]);
    writer.close();
    expect(writer.holdsWholeIndex).toBe(false);
    expect(indexes(path).saved).toEqual(indexes(path).made);
    // the users it says it holds, read by a plan packed
    const db = new Database(path, { readonly: true });
    expect([loadIndex(db, 1)!.size, loadReadIndex(db, 1) instanceof ReadIndex]).toEqual([USERS + 300, true]);
    db.close();
    expect([holdsPlan(path, 7, 'gold'), holdsPlan(path, 7, 'pro')]).toEqual([true, false]);
    expect(listState(path)).toEqual([expect.objectContaining({ users: USERS + 300 })]);
  });

  it('spilling its entries beside the file (a first run of 40,000 users, then one adding as many), saves what the rows make and leaves no file there', () => {
    const path = join(tmp.dir, 'state.sqlite');
    /** Records of users `<prefix>0` to `<prefix>(n-1)`, 500 a request. */
    const records = (prefix: string, n: number, plan: string): Uint8Array[] =>
      Array.from({ length: n / 500 }, (_, r) => {
        const record = learnRecordWriter();
        for (let i = r * 500; i < (r + 1) * 500; i += 1) record.add(userMark(false, -1), { external_id: `${prefix}${i}`, plan });
        return record.finish();
      });
    const files = (): string[] => readdirSync(tmp.dir).filter((name) => !name.startsWith('state.sqlite'));
    const fds = openFiles();
    let writer = openStateFileWriter(path, T, { spillAfter: 1 });
    accept(writer, records('a', 40_000, 'free'));
    expect(files()).toEqual([]);
    writer.close();
    expect(indexes(path).saved).toEqual(indexes(path).made);
    writer = openStateFileWriter(path, T, { spillAfter: 1 });
    accept(writer, records('b', 40_000, 'free'));
    expect(files()).toEqual([]);
    writer.close();
    expect(writer.holdsWholeIndex).toBe(false);
    const { saved, made } = indexes(path);
    expect(saved).toHaveLength(80_000);
    expect(saved).toEqual(made);
    expect(files()).toEqual([]);
    expect(openFiles()).toBe(fds);
  });

  it('adds a user its plan took for one the target had (a packed index matches the end of a key) as it adds new ones, in packs of 16', () => {
    const path = firstRun();
    const packs = (): number => {
      const db = new Database(path, { readonly: true });
      const count = db.prepare('SELECT count(*) FROM packs').pluck().get() as number;
      db.close();
      return count;
    };
    const before = packs();
    const record = learnRecordWriter();
    for (let i = 0; i < 160; i += 1) record.add(userMark(true, -1), { external_id: `k${i}`, plan: 'free' });
    const learn = record.finish();
    const writer = openStateFileWriter(path, T);
    // forgotten before it is posted (none of them is there), then learned
    writer.sending(learn.slice());
    accept(writer, [learn]);
    writer.close();
    expect(packs() - before).toBe(10);
    expect(indexes(path).saved).toEqual(indexes(path).made);
    expect(listState(path)).toEqual([expect.objectContaining({ users: USERS + 160 })]);
  });

  it('after a first run stopped before it saved the index, makes it from the rows as it opens, and saves it with the users it adds', () => {
    const path = firstRun();
    // as a first run killed before its end leaves the file: its rows, the index marked out of date, none saved
    const db = new Database(path);
    db.prepare('UPDATE targets SET fresh = 0, users = 0').run();
    db.prepare('DELETE FROM user_index').run();
    db.close();
    const record = learnRecordWriter();
    for (let i = USERS; i < USERS + 100; i += 1) record.add(userMark(false, -1), { external_id: `u${i}`, plan: 'free', n: i });
    const writer = openStateFileWriter(path, T);
    accept(writer, [record.finish()]);
    writer.close();
    expect(indexes(path).saved).toEqual(indexes(path).made);
    expect(listState(path)).toEqual([expect.objectContaining({ users: USERS + 100 })]);
  });
});

describe('an index an earlier track saved holding a user twice', () => {
  /**
   * The file's index with a second entry of u`i`'s row at the digest of another plan, as an earlier
   * track left it; the file as one it wrote (no mark of its index made again), or, `sinceRemade`, as
   * this track marked it before an earlier one wrote the index so.
   */
  function holdTwice(path: string, i: number, earlier: number, sinceRemade = false): void {
    const db = new Database(path);
    const index = loadIndex(db, 1)!;
    keyHashInto(`e:u${i}`);
    const key = KEY_HASH[0];
    let row = 0;
    index.find(key, (slot) => ((row = slot), true));
    index.add(key, row, earlier);
    expect(index.holdsARowTwice()).toBe(true);
    db.transaction(() => saveIndex(db, 1, index))();
    if (!sinceRemade) db.prepare("DELETE FROM meta WHERE key = 'index-remade'").run();
    db.close();
  }

  /** u7 moved to "pro" (the index patched), and an entry of them at "free" left beside it, as an earlier track left it; the digest of "free". */
  function movedLeavingEarlier(path: string, sinceRemade = false): number {
    const rows = rowsOf(path);
    const free = indexes(path).made.find((entry) => entry[1] === rows[7])![2];
    const writer = openStateFileWriter(path, T);
    accept(writer, [knownRecord([{ i: 7, row: rows[7], plan: 'pro' }])]);
    writer.close();
    holdTwice(path, 7, free, sinceRemade);
    return free;
  }

  it('is not read as it is: the plan makes it from the rows, and the user\'s earlier digest is not found', () => {
    const path = firstRun();
    const free = movedLeavingEarlier(path);
    const reader = openStateReader(path, T);
    keyHashInto('e:u7');
    expect(reader.hasRow(KEY_HASH[0], free)).toBe(false);
    reader.close();
    expect(holdsPlan(path, 7, 'pro')).toBe(true);
  });

  it('is made again from the rows by the first run of this track on the file, and saved holding each user once', () => {
    const path = firstRun();
    const rows = rowsOf(path);
    holdTwice(path, 7, 12345);
    expect(indexes(path).saved).toBeUndefined();
    // a run that learns nothing of the target still remakes it as it opens the file
    openStateFileWriter(path, T).close();
    const { saved, made } = indexes(path);
    expect(saved).toEqual(made);
    expect(saved).toHaveLength(USERS);
    expect(rowsOf(path)).toEqual(rows);
    // once: the next run reads it as saved
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT value FROM meta WHERE key = 'index-remade'").pluck().get()).toBe('1');
    db.close();
  });

  it.skipIf(!isRoot)('on a full disk, stops the first run of this track as it remakes them, naming the file, and is remade by the next', async () => {
    const made = firstRun();
    holdTwice(made, 7, 12345);
    await withSmallDisk(tmp.dir, '4m', async (small) => {
      const path = join(small, 's.sqlite');
      copyFileSync(made, path);
      // the disk filled, but for room to open the file (its shared memory) and not to write to it
      let fillers = 0;
      try {
        for (;;) writeFileSync(join(small, `filler-${fillers++}`), Buffer.alloc(16 * 1024));
      } catch {
        fillers -= 1;
      }
      rmSync(join(small, `filler-${fillers - 1}`));
      rmSync(join(small, `filler-${fillers - 2}`));
      expect(() => openStateFileWriter(path, T).close()).toThrow(/^--state .*s\.sqlite could not be written: database or disk is full$/);
      for (let i = 0; i < fillers; i += 1) rmSync(join(small, `filler-${i}`), { force: true });
      openStateFileWriter(path, T).close();
      const { saved, made: fromRows } = indexes(path);
      expect(saved).toEqual(fromRows);
      expect(saved).toHaveLength(USERS);
    });
  });

  it('written by an earlier track after this one remade the file, is saved made again from the rows by a run that adds users (not laid out from its entries)', () => {
    const path = firstRun();
    const rows = rowsOf(path);
    // the user of the greatest key hash, in the index's last bucket: its entries are read (and spilled) before it
    const last = Array.from({ length: USERS }, (_, i) => i).reduce((a, b) => (keyHashInto(`e:u${b}`), KEY_HASH[0] >>> 0) > (keyHashInto(`e:u${a}`), KEY_HASH[0] >>> 0) ? b : a);
    holdTwice(path, last, 12345, true);
    const fds = openFiles();
    const record = learnRecordWriter();
    for (let i = 0; i < 50; i += 1) record.add(userMark(false, -1), { external_id: `n${i}`, plan: 'free' });
    const writer = openStateFileWriter(path, T, { spillAfter: 1 });
    accept(writer, [record.finish()]);
    writer.close();
    expect(writer.holdsWholeIndex).toBe(true);
    expect(openFiles()).toBe(fds);
    const { saved, made } = indexes(path);
    expect(saved).toEqual(made);
    expect(saved).toHaveLength(USERS + 50);
    expect(saved!.filter((entry) => entry[1] === rows[last])).toHaveLength(1);
  });

  it('is read by a plan with its rows in a file beside the state past a number of users: the same rows found, the file gone with the reader', () => {
    const path = firstRun();
    const inMemory = rowsOf(path);
    const fds = openFiles();
    const plain = openStateReader(path, T);
    /** The files a reader holds open, its rows in memory (the state's and its journal's), and the folder's then. */
    const ofReader = openFiles() - fds;
    const files = readdirSync(tmp.dir).sort();
    plain.close();
    withRowsInFile(() => {
      const reader = openStateReader(path, T);
      // one more: its rows' (removed from the folder)
      expect(openFiles()).toBe(fds + ofReader + 1);
      expect(readdirSync(tmp.dir).sort()).toEqual(files);
      reader.close();
      expect(openFiles()).toBe(fds);
      expect(rowsOf(path)).toEqual(inMemory);
    });
    expect(openFiles()).toBe(fds);
  });

  it('lets go of its rows file when the rest of the state cannot be read after it', () => {
    const path = firstRun();
    const db = new Database(path);
    db.exec('DROP TABLE activities');
    db.close();
    const fds = openFiles();
    withRowsInFile(() => expect(() => openStateReader(path, T)).toThrow(/activities/));
    expect(openFiles()).toBe(fds);
  });

  it('is not read as it is by a plan of a target of more users than a packed index holds either', () => {
    const path = firstRun();
    const free = movedLeavingEarlier(path, true);
    const most = ReadIndex.MOST;
    Object.defineProperty(ReadIndex, 'MOST', { value: 100 });
    try {
      const reader = openStateReader(path, T);
      keyHashInto('e:u7');
      expect(reader.hasRow(KEY_HASH[0], free)).toBe(false);
      reader.close();
    } finally {
      Object.defineProperty(ReadIndex, 'MOST', { value: most });
    }
    expect(ReadIndex.MOST).toBe(most);
  });

  it('written by an earlier track after this one remade the file, is saved made again from the rows by a run that changes a user it holds twice', () => {
    const path = firstRun();
    const rows = rowsOf(path);
    // the file as this track marked it: an earlier one wrote the index holding u7 twice since
    holdTwice(path, 7, 12345, true);
    // a run that changes u7 alone, with the row its plan found: a patch would set both entries and keep the second
    const writer = openStateFileWriter(path, T);
    accept(writer, [knownRecord([{ i: 7, row: rows[7], plan: 'pro' }])]);
    writer.close();
    const { saved, made } = indexes(path);
    expect(saved).toEqual(made);
    expect(saved).toHaveLength(USERS);
    expect(holdsPlan(path, 7, 'pro')).toBe(true);
  });
});

describe('several targets in one file', () => {
  it('a patch of one leaves the other as it was; forgetting one leaves the other whole', () => {
    const path = firstRun();
    const other = 'http://127.0.0.1:4001/users/track';
    const record = learnRecordWriter();
    for (let i = 0; i < 300; i += 1) record.add(userMark(false, -1), { external_id: `u${i}`, plan: 'basic' });
    const first = openStateFileWriter(path, other);
    accept(first, [record.finish()]);
    first.close();
    const before = indexes(path, 1).saved;
    const reader = openStateReader(path, other);
    keyHashInto('e:u7');
    const row = reader.user('e:u7', KEY_HASH[0])!.row;
    reader.close();
    const writer = openStateFileWriter(path, other);
    accept(writer, [knownRecord([{ i: 7, row, plan: 'pro' }])]);
    writer.close();
    expect(indexes(path, 1).saved).toEqual(before);
    expect(indexes(path, 2).saved).toEqual(indexes(path, 2).made);
    expect(indexes(path, 2).saved).toHaveLength(300);
    expect(holdsPlan(path, 7, 'free')).toBe(true);
    expect(listState(path).map((target) => [target.url, target.users])).toEqual([
      [T, USERS],
      [other, 300],
    ]);
    expect(forgetTarget(path, T)).toBe(true);
    expect(listState(path).map((target) => [target.url, target.users])).toEqual([[other, 300]]);
    expect(indexes(path, 2).saved).toEqual(indexes(path, 2).made);
    const after = openStateReader(path, other);
    keyHashInto('e:u7');
    expect(after.user('e:u7', KEY_HASH[0])?.holds('plan', ...valueHash('pro'))).toBe(true);
    after.close();
  });
});

describe('users whose keys share a hash', () => {
  it('keep their own rows and digests through a patch (one changed twice), and are found again after a reopen', () => {
    // u43111 and u101097: the same first 32 bits of their key hash, the one the index is by
    const hashOf = (i: number): number => (keyHashInto(`e:u${i}`), KEY_HASH[0]);
    expect(hashOf(43111)).toBe(hashOf(101097));
    const path = firstRun();
    const record = learnRecordWriter();
    for (const i of [43111, 101097]) record.add(userMark(false, -1), { external_id: `u${i}`, plan: 'free', n: i });
    const adding = openStateFileWriter(path, T);
    accept(adding, [record.finish()]);
    adding.close();
    const rowOf = (i: number): number => {
      const reader = openStateReader(path, T);
      const row = reader.user(`e:u${i}`, hashOf(i))!.row;
      reader.close();
      return row;
    };
    const [a, b] = [rowOf(43111), rowOf(101097)];
    expect(a).not.toBe(b);
    const writer = openStateFileWriter(path, T);
    accept(writer, [knownRecord([{ i: 101097, row: b, plan: 'pro' }, { i: 43111, row: a, plan: 'gold' }]), knownRecord([{ i: 43111, row: a, plan: 'team' }])]);
    writer.close();
    const { saved, made } = indexes(path);
    expect(saved).toHaveLength(USERS + 2);
    expect(saved).toEqual(made);
    expect([rowOf(43111), rowOf(101097)]).toEqual([a, b]);
    expect([holdsPlan(path, 101097, 'pro'), holdsPlan(path, 43111, 'team'), holdsPlan(path, 43111, 'gold'), holdsPlan(path, 43111, 'pro')]).toEqual([true, true, false, false]);
  });
});

describe('a user the index does not hold, in a bucket of one it holds and ending in the same 12 bits of key', () => {
  it('is read as unknown, never as that user (the plan keeps of a key only its last 12 bits), and the user it holds as before', () => {
    const hashOf = (key: string): number => (keyHashInto(key), KEY_HASH[0] >>> 0);
    // u1367 (a user of the first run) and n3775 (a new one): the same first 12 bits (one bucket of 5,000 users') and last 12
    const [held, other] = [hashOf('e:u1367'), hashOf('e:n3775')];
    expect([held >>> 20, held & 0xfff]).toEqual([other >>> 20, other & 0xfff]);
    expect(held).not.toBe(other);
    const path = firstRun();
    const reader = openStateReader(path, T);
    const db = new Database(path, { readonly: true });
    try {
      const row = rowsOf(path)[1367];
      const pack = db.prepare('SELECT users FROM packs WHERE id = ?').pluck().get(Math.floor(row / PACK)) as Buffer;
      const { attrs } = unpack(pack)[row % PACK];
      // the digest a plan makes of u1367's values, for each of the two
      const digestAs = (key: string): number => (keyHashInto(key), rowDigest(userPart(), attrs));
      // the one look of the index matches (1 in about 200), what follows it does not
      expect(reader.mayKnow(other)).toBe(true);
      expect(reader.user('e:n3775', other)).toBeUndefined();
      expect(reader.hasRow(other, digestAs('e:n3775'))).toBe(false);
      expect(reader.user('e:u1367', held)?.row).toBe(row);
      expect(reader.hasRow(held, digestAs('e:u1367'))).toBe(true);
      expect(reader.user('e:u1367', held)?.holds('plan', ...valueHash('free'))).toBe(true);
    } finally {
      db.close();
      reader.close();
    }
  });
});

describe('a damaged index in the state file', () => {
  /** Runs fn on the file's database (to damage it). */
  const damage = (path: string, fn: (db: Database.Database) => void): void => {
    const db = new Database(path);
    fn(db);
    db.close();
  };
  const slab = (db: Database.Database): Buffer => db.prepare('SELECT slots FROM user_index WHERE target = 1 AND part = 4').pluck().get() as Buffer;
  const setSlab = (db: Database.Database, bytes: Buffer): void => void db.prepare('UPDATE user_index SET slots = ? WHERE target = 1 AND part = 4').run(bytes);

  it.each([
    ['a slab one byte longer', (db: Database.Database) => setSlab(db, Buffer.concat([slab(db), Buffer.alloc(1)]))],
    ['a slab one word shorter', (db: Database.Database) => setSlab(db, slab(db).subarray(4))],
    ['a slab missing', (db: Database.Database) => void db.prepare('DELETE FROM user_index WHERE target = 1 AND part = 4').run()],
    ['its directory missing', (db: Database.Database) => void db.prepare('DELETE FROM user_index WHERE target = 1 AND part = 1').run()],
    ['every part missing', (db: Database.Database) => void db.prepare('DELETE FROM user_index WHERE target = 1').run()],
    [
      'a bucket out of range in its directory',
      (db: Database.Database) => {
        const directory = db.prepare('SELECT slots FROM user_index WHERE target = 1 AND part = 1').pluck().get() as Buffer;
        directory.writeUInt32LE(0xffffffff, 0);
        db.prepare('UPDATE user_index SET slots = ? WHERE target = 1 AND part = 1').run(directory);
      },
    ],
  ])('with %s, is refused as a damaged file, naming it', (_, how) => {
    const path = firstRun();
    damage(path, how);
    expect(() => openStateReader(path, T)).toThrow(`--state ${path} is damaged`);
  });

  it('is not patched where a slab has the wrong length: the caller saves it whole, made from the rows', () => {
    const path = firstRun();
    const before = indexes(path).saved!;
    damage(path, (db) => setSlab(db, slab(db).subarray(0, slab(db).length - 4)));
    const db = new Database(path);
    const changes = new IndexEntries();
    changes.push(before[0][0], before[0][1], 12345);
    expect(db.transaction(() => patchIndex(db, 1, changes))()).toBe(false);
    db.close();
  });
});

describe('the words of a part of the index as read', () => {
  it('are the little-endian words of its bytes, wherever its bytes lie (copied when not 4-byte aligned)', () => {
    const words = [1, 0x01020304, 0xffffffff, 7];
    const bytes = Buffer.alloc(17);
    words.forEach((word, i) => bytes.writeUInt32LE(word, 1 + i * 4));
    const unaligned = bytes.subarray(1);
    expect(unaligned.byteOffset % 4).not.toBe(0);
    expect(Array.from(wordsOf(unaligned))).toEqual(words);
    const aligned = Buffer.from(unaligned);
    expect(aligned.byteOffset % 4).toBe(0);
    expect(Array.from(wordsOf(aligned))).toEqual(words);
  });
});

describe('a patch of the index and the process it runs in', () => {
  /** Runs a patch of one user's digest in a process of its own (node started with `flags`): what it saw of `gc` after, and the collections it ran. */
  function patchIn(flags: string[]): { patched: boolean; context: string; worker: string; global: string; collections: number } {
    const path = firstRun();
    const script = join(tmp.dir, 'patch.mjs');
    writeFileSync(
      script,
      `import Database from '${ROOT}/dist/sqlite.js';
       import { runInNewContext } from 'node:vm';
       import { Worker } from 'node:worker_threads';
       import { loadIndex, patchIndex } from '${ROOT}/dist/records/state-rows.js';
       import { IndexEntries } from '${ROOT}/dist/records/user-index.js';
       const db = new Database(${JSON.stringify(path)});
       const changes = new IndexEntries();
       loadIndex(db, 1).forEach((key, row) => changes.count === 0 && changes.push(key, row, 12345));
       console.log('patching');
       const patched = db.transaction(() => patchIndex(db, 1, changes))();
       console.log('patched');
       db.close();
       const worker = await new Promise((resolve) => new Worker('require("node:worker_threads").parentPort.postMessage(typeof globalThis.gc)', { eval: true }).once('message', resolve));
       console.log(JSON.stringify({ patched, context: runInNewContext('typeof gc'), worker, global: typeof globalThis.gc }));`,
    );
    const run = spawnSync(process.execPath, [...flags, '--trace-gc', script], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    const during = lines.slice(lines.indexOf('patching'), lines.indexOf('patched'));
    return { ...JSON.parse(lines.findLast((line) => line.startsWith('{'))!), collections: during.filter((line) => /(Scavenge|Minor Mark-Sweep).*testing/.test(line)).length };
  }

  it('collects the slabs it let go of, and leaves no gc to a context or a worker made after it', () => {
    expect(patchIn([])).toEqual({ patched: true, context: 'undefined', worker: 'undefined', global: 'undefined', collections: 1 });
  });

  it('leaves gc where the process was started with it', () => {
    expect(patchIn(['--expose-gc'])).toEqual({ patched: true, context: 'function', worker: 'function', global: 'function', collections: 1 });
  });
});
