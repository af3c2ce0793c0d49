// The state's index of a target's users: every entry found again under its key (two users may share
// one), digests told apart, buckets split as it grows, and the same after it is saved and read back.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PartedEntries, PART_BITS } from '../../src/records/parted-entries.js';
import { IndexEntries, UserIndex } from '../../src/records/user-index.js';
import { tempDir } from '../helpers/cli.js';

/** The folder entries spill to. */
const spill = tempDir();
afterAll(() => spill.cleanup());

/** A stream of 32-bit keys (xorshift), some of them signed as the plan gives them. */
function keys(n: number): number[] {
  let s = 0x9e3779b9;
  return Array.from({ length: n }, (_, i) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return i % 2 === 0 ? s | 0 : s >>> 0;
  });
}

describe('UserIndex', () => {
  it('finds every user again by key and digest, and no other', () => {
    const index = new UserIndex();
    const all = keys(100_000);
    all.forEach((key, i) => index.set(key, i + 1, i * 7919 + 2 ** 40));
    expect(index.size).toBe(100_000);
    all.forEach((key, i) => {
      expect(index.has(key, i * 7919 + 2 ** 40)).toBe(true);
      expect(index.has(key, i * 7919 + 2 ** 40 + 1)).toBe(false);
    });
    const unknown = keys(200_000).slice(100_000);
    expect(unknown.filter((key) => index.has(key)).length).toBeLessThan(5);
  });

  it('holds several users under one key, sets a row again in place, and survives being saved', () => {
    const index = new UserIndex();
    for (let row = 1; row <= 20; row += 1) index.set(-5, row, row * 10);
    keys(50_000).forEach((key, i) => index.set(key, 100 + i, i));
    index.set(-5, 7, 777);
    const rows: Array<[number, number]> = [];
    index.find(-5 >>> 0, (row, digest) => {
      rows.push([row, digest]);
      return false;
    });
    expect(rows).toHaveLength(20);
    expect(rows).toContainEqual([7, 777]);
    const again = new UserIndex(structuredClone(index.persist()));
    expect(again.size).toBe(index.size);
    expect(again.has(-5, 777)).toBe(true);
    keys(50_000).forEach((key, i) => expect(again.has(key, i)).toBe(true));
    again.set(12345, 999_999, 1);
    expect(again.has(12345, 1)).toBe(true);
    expect(again.size).toBe(index.size + 1);
  });

  it('made at once from entries, holds what adding them one by one holds, and grows and is saved as that one', () => {
    const all = keys(150_000);
    const entries = new PartedEntries();
    const one = new UserIndex();
    // several users under one key, as in the index added to
    for (let row = 1; row <= 20; row += 1) entries.push(-5, row, row * 10);
    all.forEach((key, i) => entries.push(key, 100 + i, i * 7919 + 2 ** 40));
    for (let row = 1; row <= 20; row += 1) one.add(-5, row, row * 10);
    all.forEach((key, i) => one.add(key, 100 + i, i * 7919 + 2 ** 40));
    const made = UserIndex.of(entries);
    expect(entries.count).toBe(0);
    expect(made.size).toBe(one.size);
    const entriesOf = (index: UserIndex): number[][] => {
      const list: number[][] = [];
      index.forEach((key, row, digest) => list.push([key, row, digest]));
      return list.sort((a, b) => a[1] - b[1]);
    };
    expect(entriesOf(made)).toEqual(entriesOf(one));
    all.forEach((key, i) => expect(made.has(key, i * 7919 + 2 ** 40)).toBe(true));
    const rows: number[] = [];
    made.find(-5, (row) => (rows.push(row), false));
    expect(rows.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // its buckets hold no more than one split by adds would
    const { counts, shape } = made.persist();
    expect(Math.max(...counts)).toBeLessThanOrEqual(30);
    expect(shape[1]).toBeGreaterThan(150_020 / 30);
    // it grows (its buckets split) and is saved as one made by adds
    keys(200_000).slice(150_000).forEach((key, i) => made.add(key, 200_000 + i, i));
    made.set(all[3], 103, 42);
    const back = new UserIndex(made.persist());
    expect(back.size).toBe(200_020);
    expect(back.has(all[3], 42)).toBe(true);
    expect(back.has(all[3], 3 * 7919 + 2 ** 40)).toBe(false);
    expect(keys(200_000).slice(150_000).every((key, i) => back.has(key, i))).toBe(true);
    expect(UserIndex.of(new PartedEntries()).size).toBe(0);
  });

  it('laid out a slab at a time in one slab used again, is persisted as the one made in memory', () => {
    const fill = (n: number): PartedEntries => {
      const entries = new PartedEntries();
      keys(n).forEach((key, i) => entries.push(key, i + 1, i * 3 + 2 ** 41));
      return entries;
    };
    for (const n of [0, 25, 3000, 130_000]) {
      const slabs: Uint32Array[] = [];
      const words: Uint32Array[] = [];
      const head = UserIndex.lay(fill(n), (i, slab) => (slabs.push(slab.slice()), words.push(slab), expect(i).toBe(slabs.length - 1)), true);
      const made = UserIndex.of(fill(n)).persist();
      expect({ ...head, slabs }).toEqual(made);
      // each slab laid in the same words (a cut of them, the last)
      expect(new Set(words.map((w) => w.buffer)).size).toBe(1);
      const back = new UserIndex({ ...head, slabs });
      expect(back.size).toBe(n);
      expect(keys(n).every((key, i) => back.has(key, i * 3 + 2 ** 41))).toBe(true);
    }
  });
});

// the entries in memory, and spilled past their last slab (1,024 chunks of 64 entries, each of one part: a slab is filled by 2,000 entries spread over the parts)
describe.each([
  ['in memory', () => new PartedEntries()],
  ['spilled to a file past their last slab', () => new PartedEntries(spill.dir, 1)],
])('PartedEntries %s', (_, made) => {
  it('sorts a part by key, rows and digests along, in the order pushed among equal keys, and lets go of it', () => {
    const entries = made();
    // keys spread over all bits, and many sharing their first 11 bits (one part much larger than the others)
    const all = [...keys(70_000), ...Array.from({ length: 5000 }, (_, i) => (0x7ff << 21) | ((i * 7919) & 0x1fffff)), 42, 42, 42];
    all.forEach((key, i) => entries.push(key, i + 1, i * 3 + 2 ** 40));
    const sorted: number[][] = [];
    for (let part = 0; part < 2 ** PART_BITS; part += 1) {
      const size = entries.sizeOf(part);
      const words = entries.sorted(part, part + 1);
      expect(words.length).toBe(size * 4);
      expect(entries.sizeOf(part)).toBe(0);
      for (let at = 0; at < words.length; at += 4) sorted.push([words[at], words[at + 1], words[at + 2] * 2 ** 32 + words[at + 3]]);
    }
    expect(entries.count).toBe(0);
    const expected = all.map((key, i) => [key >>> 0, i + 1, i * 3 + 2 ** 40]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(sorted).toEqual(expected);
    // a few entries of several parts at once (a bucket that spans them)
    const few = new PartedEntries();
    [0x7fffffff, 5, 0x00300000, 5, 0x20000000].forEach((key, i) => few.push(key, i + 1, i));
    expect(Array.from(few.sorted(0, 2 ** PART_BITS))).toEqual([5, 2, 0, 1, 5, 4, 0, 3, 0x00300000, 3, 0, 2, 0x20000000, 5, 0, 4, 0x7fffffff, 1, 0, 0]);
  });

  it('finds the entries under a key by a search of its part alone, in the order pushed, and sets a row\'s digest in place', () => {
    const entries = made();
    const all = keys(20_000);
    all.forEach((key, i) => entries.push(key, i + 1, i));
    entries.push(all[7], 50_000, 2 ** 50);
    const found: number[][] = [];
    const looked = entries.find(all[7], (row, digest) => (found.push([row, digest]), false));
    expect(found).toEqual([[8, 7], [50_000, 2 ** 50]]);
    expect(looked).toBe(entries.sizeOf((all[7] >>> 0) >>> 21));
    expect(looked).toBeLessThan(60);
    // stops where fn says
    expect(entries.find(all[7], () => true)).toBeLessThanOrEqual(looked);
    entries.set(all[7], 50_000, 2 ** 51 + 3);
    entries.set(all[9], 10, 99);
    entries.set(12345, 60_000, 1);
    expect(entries.count).toBe(20_002);
    const rowsOf = (key: number): number[][] => {
      const rows: number[][] = [];
      entries.find(key, (row, digest) => (rows.push([row, digest]), false));
      return rows;
    };
    expect(rowsOf(all[7])).toEqual([[8, 7], [50_000, 2 ** 51 + 3]]);
    expect(rowsOf(all[9])).toEqual([[10, 99]]);
    expect(rowsOf(12345)).toEqual([[60_000, 1]]);
    let seen = 0;
    entries.forEach(() => (seen += 1));
    expect(seen).toBe(20_002);
    expect(() => entries.push(1, 0, 1)).toThrow(/out of range/);
    entries.discard();
  });
});

describe('PartedEntries spilled', () => {
  /** The files this process holds open. */
  const open = (): number => readdirSync('/proc/self/fd').length;

  it('writes to a file that is never in the folder, read back alike, let go of once every part is sorted, or discarded', () => {
    const before = open();
    const entries = new PartedEntries(spill.dir, 2);
    const all = keys(100_000);
    all.forEach((key, i) => entries.push(key, i + 1, i + 2 ** 45));
    expect(readdirSync(spill.dir)).toEqual([]);
    expect(open()).toBe(before + 1);
    // a digest set where its slab was written out, read back as set
    entries.set(all[3], 4, 77);
    const rows: number[][] = [];
    entries.find(all[3], (row, digest) => (rows.push([row, digest]), false));
    expect(rows).toEqual([[4, 77]]);
    let sum = 0;
    entries.forEach((_, row) => (sum += row));
    expect(sum).toBe((100_000 * 100_001) / 2);
    for (let part = 0; part < 2 ** PART_BITS; part += 1) entries.sorted(part, part + 1);
    expect(open()).toBe(before);
    const discarded = new PartedEntries(spill.dir, 1);
    all.forEach((key, i) => discarded.push(key, i + 1, i));
    expect(open()).toBe(before + 1);
    discarded.discard();
    expect(open()).toBe(before);
    expect(readdirSync(spill.dir)).toEqual([]);
  });

  it('fails naming the folder it cannot write to', () => {
    const entries = new PartedEntries(join(spill.dir, 'missing'), 1);
    expect(() => keys(20_000).forEach((key, i) => entries.push(key, i + 1, i))).toThrow(/ENOENT.*missing/);
  });
});

describe('UserIndex patches', () => {
  it('patches a persisted index slab by slab: each slab with a change read and written once, the others not read', () => {
    const index = new UserIndex();
    const all = keys(150_000);
    all.forEach((key, i) => index.add(key, i + 1, i));
    const { shape, directory, slabs } = index.persist();
    expect(slabs.length).toBeGreaterThan(3);
    const changes = new IndexEntries();
    // users of every slab but the second one
    const slabOf = (key: number): number => Math.floor(directory[(key >>> 0) >>> (32 - shape[0])] / 2048);
    all.forEach((key, i) => {
      if (i % 1000 === 0 && slabOf(key) !== 1) changes.push(key, i + 1, 2 ** 45 + i);
    });
    const read: number[] = [];
    const written: number[] = [];
    const copies = slabs.map((slab) => slab.slice());
    expect(UserIndex.patch(shape, directory, changes, (s) => (read.push(s), copies[s]), (s) => written.push(s))).toBe(true);
    expect(read).toEqual(written);
    expect(new Set(read).size).toBe(read.length);
    expect(read).not.toContain(1);
    expect(read.length).toBe(slabs.length - 1);
    const patched = new UserIndex({ ...index.persist(), slabs: copies });
    all.forEach((key, i) => expect(patched.has(key, i % 1000 === 0 && slabOf(key) !== 1 ? 2 ** 45 + i : i)).toBe(true));
  });

  it('refuses to patch a row it holds twice (as a run that added users to a known target saved it before), which the caller then saves whole', () => {
    const index = new UserIndex();
    keys(1000).forEach((key, i) => index.add(key, i + 1, i));
    const once = index.persist();
    const changes = new IndexEntries();
    changes.push(keys(1000)[7], 8, 99);
    expect(UserIndex.patch(once.shape, once.directory, changes, (s) => once.slabs[s], () => undefined)).toBe(true);
    index.add(keys(1000)[7], 8, 7);
    const twice = index.persist();
    expect(UserIndex.patch(twice.shape, twice.directory, changes, (s) => twice.slabs[s], () => undefined)).toBe(false);
  });
});
