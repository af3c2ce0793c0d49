// The index a plan reads (read-index.ts): packed from the persisted one, it finds every user the
// index holds with their row and digest, tells digests apart, and matches a key it does not hold
// only where a user it holds shares its bucket and the last 12 bits of its key; one holding a row
// twice, or other than the users its shape says, is made from the rows instead.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ReadIndex } from '../../src/records/read-index.js';
import { SpillFile } from '../../src/records/spill-file.js';
import { UserIndex } from '../../src/records/user-index.js';
import { withRowsInFile } from '../helpers/rows-in-file.js';
import { isRoot, withSmallDisk } from '../helpers/small-disk.js';

/** A stream of 32-bit keys (xorshift), some of them signed as the plan gives them. */
function keys(n: number, seed = 0x9e3779b9): number[] {
  let s = seed;
  return Array.from({ length: n }, (_, i) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return i % 2 === 0 ? s | 0 : s >>> 0;
  });
}

/** The rows and digests fn is called with for a key. */
function found(index: { find: UserIndex['find'] }, key: number): Array<[number, number]> {
  const rows: Array<[number, number]> = [];
  index.find(key, (row, digest) => (rows.push([row, digest]), false));
  return rows;
}

const packed = (index: UserIndex, rowsTo?: string): ReadIndex | undefined => {
  const { shape, directory, slabs } = structuredClone(index.persist());
  return ReadIndex.of(shape, directory, slabs, rowsTo);
};

const openFiles = (): number => readdirSync('/proc/self/fd').length;

/** A rows file that takes `budget` bytes in all, then fails as a full disk does (the part of a write it has room for taken). */
class FullAfter extends SpillFile {
  #left: number;
  constructor(folder: string, budget: number) {
    super(folder, 'rows');
    this.#left = budget;
  }
  override write(bytes: Uint8Array, position: number): void {
    const taken = Math.min(this.#left, bytes.length);
    super.write(bytes.subarray(0, taken), position);
    this.#left -= taken;
    if (taken < bytes.length) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  }
}


describe('ReadIndex', () => {
  const all = keys(120_000);
  const index = new UserIndex();
  // twenty users under one key, and digests of all 52 bits
  for (let row = 1; row <= 20; row += 1) index.set(-5, row, row * 10);
  all.forEach((key, i) => index.set(key, 100 + i, (i * 7919 + 2 ** 51 + 2 ** 40) % 2 ** 52));
  const read = packed(index)!;
  const keyOfRow = new Map<number, number>();
  index.forEach((key, row) => keyOfRow.set(row, key));

  it('finds every user by key and digest, with the row and digest it holds, and tells digests apart', () => {
    expect(read.size).toBe(index.size);
    all.forEach((key, i) => {
      const digest = (i * 7919 + 2 ** 51 + 2 ** 40) % 2 ** 52;
      expect(read.has(key, digest)).toBe(true);
      expect(read.has(key, digest + 1)).toBe(false);
      expect(read.has(key, digest + 2 ** 32)).toBe(false);
      expect(read.has(key)).toBe(true);
    });
    const byRow = (a: [number, number], b: [number, number]): number => a[0] - b[0];
    expect(found(read, -5).filter(([row]) => row <= 20).sort(byRow)).toEqual(found(index, -5).sort(byRow));
    expect(found(index, -5)).toHaveLength(20);
  });

  it('gives for a key every row the index holds under it, and others only of keys that end in the same 12 bits', () => {
    let extra = 0;
    for (const key of all.slice(0, 20_000)) {
      const rows = found(read, key);
      expect(rows).toEqual(expect.arrayContaining(found(index, key)));
      for (const [row] of rows) {
        if (keyOfRow.get(row) === key >>> 0) continue;
        extra += 1;
        expect(keyOfRow.get(row)! & 0xfff).toBe(key & 0xfff);
      }
    }
    // about 1 look in 200 (a bucket's 20-odd users, 4,096 endings)
    expect(extra).toBeGreaterThan(0);
    expect(extra).toBeLessThan(20_000 / 50);
  });

  it('holds a key it was not given only where a user it holds ends in the same 12 bits', () => {
    const endings = new Set(all.map((key) => key & 0xfff));
    const unknown = keys(50_000, 12345).filter((key) => !index.has(key));
    const matched = unknown.filter((key) => read.has(key));
    expect(matched.length).toBeLessThan(unknown.length / 50);
    for (const key of matched) expect(endings.has(key & 0xfff)).toBe(true);
    expect(unknown.filter((key) => read.has(key, 12345))).toEqual([]);
  });

  it('is an empty index and a one-bucket index as well', () => {
    expect(packed(new UserIndex())!.size).toBe(0);
    expect(packed(new UserIndex())!.has(7)).toBe(false);
    const small = new UserIndex();
    small.set(7, 1, 70);
    small.set(7 + 4096 * 3, 2, 80);
    const one = packed(small)!;
    expect([one.has(7, 70), one.has(7, 80), one.has(8)]).toEqual([true, true, false]);
    expect(found(one, 7)).toEqual([[1, 70], [2, 80]]);
  });

  it('is not made of an index holding a row twice, or other than the users its shape says', () => {
    const twice = new UserIndex();
    all.slice(0, 1000).forEach((key, i) => twice.add(key, i + 1, i));
    twice.add(all[500], 501, 99);
    expect(twice.holdsARowTwice()).toBe(true);
    expect(packed(twice)).toBeUndefined();
    const persisted = structuredClone(index.persist());
    expect(ReadIndex.of(Uint32Array.of(persisted.shape[0], persisted.shape[1], persisted.shape[2] - 1), persisted.directory, persisted.slabs)).toBeUndefined();
    expect(ReadIndex.of(Uint32Array.of(persisted.shape[0], persisted.shape[1], persisted.shape[2] + 1), persisted.directory, persisted.slabs)).toBeUndefined();
    expect(ReadIndex.of(persisted.shape, persisted.directory, persisted.slabs.slice(0, -1))).toBeUndefined();
  });

  describe('with its rows in a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-read-index-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** Whether the index answers as the one holding its rows in memory does, for every 6th user and a key of each ending. */
    const answersAsInMemory = (other: ReadIndex): void => {
      expect(other.size).toBe(read.size);
      for (let i = 0; i < all.length; i += 6) expect(found(other, all[i])).toEqual(found(read, all[i]));
      for (let ending = 0; ending < 4096; ending += 1) expect(found(other, ending)).toEqual(found(read, ending));
      expect(found(other, -5)).toEqual(found(read, -5));
      expect([other.has(all[7], (7 * 7919 + 2 ** 51 + 2 ** 40) % 2 ** 52), other.has(all[7], 7)]).toEqual([true, false]);
    };

    it('past a number of users, writes them to a file it removes from the folder at once, reads them back, and closes it', () => {
      const fds = openFiles();
      const inFile = withRowsInFile(() => packed(index, dir))!;
      expect(openFiles()).toBe(fds + 1);
      expect(readdirSync(dir)).toEqual([]);
      answersAsInMemory(inFile);
      inFile.close();
      expect(openFiles()).toBe(fds);
      // an index of fewer users keeps them in memory
      const small = new UserIndex();
      for (let row = 1; row <= 1000; row += 1) small.set(all[row], row, row);
      const few = withRowsInFile(() => packed(small, dir))!;
      expect(openFiles()).toBe(fds);
      expect(found(few, all[10])).toEqual([[10, 10]]);
    });

    it('closes its file when it is not made (a row held twice, users other than its shape says, a part that cannot be read)', () => {
      const fds = openFiles();
      const twice = new UserIndex();
      all.slice(0, 5000).forEach((key, i) => twice.add(key, i + 1, i));
      twice.add(all[4500], 4501, 99);
      expect(withRowsInFile(() => packed(twice, dir))).toBeUndefined();
      const persisted = structuredClone(index.persist());
      expect(withRowsInFile(() => ReadIndex.of(Uint32Array.of(persisted.shape[0], persisted.shape[1], persisted.shape[2] + 1), persisted.directory, persisted.slabs, dir))).toBeUndefined();
      expect(openFiles()).toBe(fds);
      // nor when reading its parts fails (a damaged file)
      function* damaged(): Generator<Uint32Array> {
        yield persisted.slabs[0];
        throw new Error('its index of users is malformed');
      }
      expect(() => withRowsInFile(() => ReadIndex.of(persisted.shape, persisted.directory, damaged(), dir))).toThrow('malformed');
      expect(openFiles()).toBe(fds);
    });

    it('keeps them in memory where the folder cannot take a file', () => {
      const fds = openFiles();
      const inMemory = withRowsInFile(() => packed(index, join(dir, 'missing')))!;
      expect(openFiles()).toBe(fds);
      answersAsInMemory(inMemory);
    });

    it('reads back what it wrote and keeps them in memory when the disk fills up: at its first write, inside a chunk, inside the last', () => {
      // 120,020 users: 29 chunks of 4,096 rows (16,384 bytes), then 1,236
      expect(read.size).toBe(120_020);
      for (const budget of [0, 40_000, 29 * 16_384 + 100]) {
        const fds = openFiles();
        const filled = withRowsInFile(() => packed(index, dir), (folder) => new FullAfter(folder, budget))!;
        expect(openFiles()).toBe(fds);
        answersAsInMemory(filled);
      }
      // (with room for them all, the rows stay in the file)
      const fds = openFiles();
      const roomy = withRowsInFile(() => packed(index, dir), (folder) => new FullAfter(folder, 120_020 * 4))!;
      expect(openFiles()).toBe(fds + 1);
      answersAsInMemory(roomy);
      roomy.close();
    });

    it.runIf(isRoot)('on a real full disk, reads back what it wrote and keeps them in memory', async () => {
      await withSmallDisk(dir, '64k', async (small) => {
        const fds = openFiles();
        const filled = withRowsInFile(() => packed(index, small))!;
        expect(openFiles()).toBe(fds);
        answersAsInMemory(filled);
      });
    });
  });
});
