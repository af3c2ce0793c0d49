import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openParquet } from '../../src/input/parquet.js';
import { float32Number } from '../../src/input/parquet-values.js';
import { mapParquetRow, parquetRowObject, readParquetHeader, type ParquetHeader } from '../../src/mapping/parquet-rows.js';
import { tempDir } from '../helpers/cli.js';
import { CODECS, optional, writeCompressed, writeParquet } from '../helpers/parquet.js';

let dir: ReturnType<typeof tempDir>;
beforeEach(() => (dir = tempDir()));
afterEach(() => dir.cleanup());

/** Every row of a file, as the values of its columns, with the row numbers read. */
async function rowsOf(path: string): Promise<{ columns: string[]; numbers: number[]; rows: unknown[][] }> {
  const file = await openParquet(path);
  const rows: unknown[][] = [];
  const numbers: number[] = [];
  for await (const batch of file.batches()) {
    for (let at = 0; at < batch.rows; at += 1) {
      numbers.push(batch.firstRow + at);
      rows.push(batch.values.map((values) => values(at)));
    }
  }
  return { columns: file.columns, numbers, rows };
}

/** A row's values as a batch of one row gives them. */
const asBatch = (row: unknown[]) => row.map((value) => () => value);
const mapRow = (read: ParquetHeader, row: unknown[]) => mapParquetRow(read, asBatch(row), 0);

function header(columns: string[], options: Parameters<typeof readParquetHeader>[1] = {}): ParquetHeader {
  const result = readParquetHeader(columns, options);
  if (!result.ok) throw new Error(result.problems.join('; '));
  return result.header;
}

/** A file of every kind of column the issue names, three rows, the last mostly nulls, in groups of two rows. */
function typedFile(path: string): void {
  writeParquet(
    path,
    [
      { name: 'root', num_children: 11 },
      optional('external_id', { type: 'INT64' }),
      optional('score', { type: 'DOUBLE' }),
      optional('price', { type: 'INT64', converted_type: 'DECIMAL', scale: 2, precision: 18 }),
      optional('seen_utc', { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' } }),
      optional('seen_local', { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: 'MILLIS' } }),
      optional('dob', { type: 'INT32', converted_type: 'DATE' }),
      optional('tags', { converted_type: 'LIST', num_children: 1 }),
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      optional('element', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
      optional('address', { num_children: 2 }),
      optional('city', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
      optional('zip', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
      optional('vip', { type: 'BOOLEAN' }),
      optional('visits', { type: 'INT64' }),
      optional('ratio', { type: 'FLOAT' }),
    ],
    {
      external_id: [123n, 9007199254740993n, 7n],
      score: [1.5, null, null],
      price: [12345n, -5n, 123456789012345678n],
      seen_utc: [1709805600123456n, null, null],
      seen_local: [1709805600123n, null, null],
      dob: [7305, null, null],
      tags: [['a', 'b'], [], null],
      address: [{ city: 'Paris', zip: '75001' }, { city: null, zip: '1' }, null],
      vip: [true, false, null],
      visits: [3n, 12345678901234567n, null],
      ratio: [0.1, null, null],
    },
    2,
  );
}

describe('Parquet files', () => {
  it('reads every row group in order, numbering rows from 1', async () => {
    const path = join(dir.dir, 'typed.parquet');
    typedFile(path);
    const { columns, numbers, rows } = await rowsOf(path);
    expect(columns).toEqual(['external_id', 'score', 'price', 'seen_utc', 'seen_local', 'dob', 'tags', 'address', 'vip', 'visits', 'ratio']);
    expect(numbers).toEqual([1, 2, 3]);
    expect(rows[2][0]).toBe(7);
    expect(rows[1][0]).toBe(9007199254740993n);
  });

  it('maps values by their type: exact numbers, times in UTC, dates, lists, structs; nulls left out', async () => {
    const path = join(dir.dir, 'typed.parquet');
    typedFile(path);
    const { columns, rows } = await rowsOf(path);
    const read = header(columns, { cells: { timeZone: 'Europe/Paris' } });
    expect(read.csv.kind).toBe('attributes');
    expect(mapRow(read, rows[0])).toEqual({
      item: {
        external_id: '123',
        score: 1.5,
        price: 123.45,
        seen_utc: '2024-03-07T10:00:00.123Z',
        seen_local: '2024-03-07T09:00:00.123Z',
        dob: '1990-01-01',
        tags: ['a', 'b'],
        address: { city: 'Paris', zip: '75001' },
        vip: true,
        visits: 3,
        ratio: 0.1,
      },
    });
    // an identifier beyond 2^53 stays text, exactly; a count beyond it rejects the row, naming the column
    const second = mapRow(read, rows[1]);
    expect(second.item).toEqual({ external_id: '9007199254740993', price: -0.05, tags: [], address: { zip: '1' }, vip: false });
    expect(second.errors).toEqual([expect.stringMatching(/^visits: 12345678901234567 is a whole number beyond ±9007199254740991.*:string/)]);
    const third = mapRow(read, rows[2]);
    expect(third.errors).toEqual([expect.stringMatching(/^price: 1234567890123456\.78 has more digits than a number holds/)]);
    expect(parquetRowObject(read, asBatch(rows[2]), 0)).toEqual({ external_id: 7, price: '1234567890123456.78' });
  });

  it('sends a null as null with --empty-as-null, as CSV sends an empty cell: never an identifier or an operation', async () => {
    const columns = ['external_id', 'email', 'company', 'address.city', 'address.zip', 'visits:inc', 'tags:array'];
    const rows = [
      ['u1', null, null, null, null, null, null],
      ['u2', 'b@x.com', 'Acme', null, '75001', 2, ['a']],
    ];
    for (const wide of [false, true]) {
      // a header too wide to compile is mapped by the loop, to the same items
      const names = wide ? [...columns, ...Array.from({ length: 1000 }, (_, i) => `c${i}`)] : columns;
      const padded = rows.map((row) => (wide ? [...row, ...Array.from({ length: 1000 }, () => undefined)] : row));
      const read = header(names, { cells: { emptyAsNull: true } });
      const first = mapRow(read, padded[0]);
      expect(first.item).toEqual({ external_id: 'u1', company: null, address: null, tags: null, ...(wide ? Object.fromEntries(names.slice(7).map((n) => [n, null])) : {}) });
      expect(first.emptied?.slice(0, 3)).toEqual(['company', 'address', 'tags']);
      expect(mapRow(read, padded[1])).toEqual({
        item: { external_id: 'u2', email: 'b@x.com', company: 'Acme', address: { zip: '75001' }, visits: { inc: 2 }, tags: ['a'], ...(wide ? Object.fromEntries(names.slice(7).map((n) => [n, null])) : {}) },
        emptied: wide ? names.slice(7) : undefined,
      });
    }
    // without the flag a null is left out; events are never cleared
    expect(mapRow(header(columns), rows[0])).toEqual({ item: { external_id: 'u1' } });
    expect(mapRow(header(['external_id', 'name', 'time', 'properties.plan'], { cells: { emptyAsNull: true } }), ['u1', 'opened', '2024-01-01T00:00:00Z', null]).item).toEqual({
      external_id: 'u1',
      name: 'opened',
      time: '2024-01-01T00:00:00Z',
    });
  });

  it('reads a column as its annotation or --map says, as a CSV cell of the same text', async () => {
    const path = join(dir.dir, 'typed.parquet');
    typedFile(path);
    const { columns, rows } = await rowsOf(path);
    const map = new Map<string, string | null>([
      ['visits', 'visits:inc'],
      ['vip', 'vip:string'],
      ['seen_utc', 'seen_utc:time'],
      ['price', 'price:string'],
      ['tags', 'tags:add'],
      ['score', null],
    ]);
    const read = header(columns, { map });
    const { item } = mapRow(read, rows[0]);
    expect(item).toMatchObject({ visits: { inc: 3 }, vip: 'true', seen_utc: { $time: '2024-03-07T10:00:00.123Z' }, price: '123.45', tags: { add: ['a', 'b'] } });
    expect(item).not.toHaveProperty('score');
    expect(mapRow(read, rows[2]).item).toMatchObject({ price: '1234567890123456.78' });
  });

  it('takes the kind from the columns, or --kind, and reads an event time as the time field it is', async () => {
    const path = join(dir.dir, 'events.parquet');
    writeParquet(
      path,
      [
        { name: 'root', num_children: 3 },
        optional('external_id', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
        optional('name', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
        optional('time', { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: 'NANOS' } }),
      ],
      { external_id: ['u1'], name: ['login'], time: [1709805600000000001n] },
    );
    const { columns, rows } = await rowsOf(path);
    const read = header(columns, { cells: { timeZone: 'America/New_York' } });
    expect(read.csv.kind).toBe('events');
    expect(mapRow(read, rows[0]).item).toEqual({ external_id: 'u1', name: 'login', time: '2024-03-07T15:00:00.000Z' });
  });

  it('refuses a header that names no user, as a CSV header is refused', () => {
    const result = readParquetHeader(['first_name', 'plan'], {});
    expect(result.ok).toBe(false);
  });

  it.each(CODECS)('reads a file compressed with %s', async (codec) => {
    const path = join(dir.dir, `${codec}.parquet`);
    writeCompressed(path, codec, ['a', 'b', 'c']);
    expect((await rowsOf(path)).rows).toEqual([['a', 0], ['b', 1], ['c', 2]]);
  });

  it('names the file when it is not Parquet', async () => {
    const path = join(dir.dir, 'not.parquet');
    writeParquet(path, [{ name: 'root', num_children: 1 }, optional('a', { type: 'INT32' })], { a: [1] });
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path, 'external_id\nu1\n');
    await expect(openParquet(path)).rejects.toThrow(/not\.parquet: cannot be read as Parquet/);
  });

  it('says a gzipped Parquet file is gzipped, where the decoder named its footer corrupt', async () => {
    const path = join(dir.dir, 'users.parquet');
    writeCompressed(path, 'SNAPPY', ['a', 'b']);
    const { readFileSync, writeFileSync } = await import('node:fs');
    const { gzipSync } = await import('node:zlib');
    writeFileSync(path, gzipSync(readFileSync(path)));
    await expect(openParquet(path)).rejects.toThrow(/users\.parquet: is gzip-compressed, which a Parquet file is not .*: gunzip it/);
  });

  it('rejects a row whose DATE or TIMESTAMP is past the years a time holds, naming the column, and reads the rest', async () => {
    const path = join(dir.dir, 'far.parquet');
    writeParquet(
      path,
      [
        { name: 'root', num_children: 4 },
        optional('external_id', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
        optional('ends', { type: 'INT32', converted_type: 'DATE' }),
        optional('seen', { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } }),
        optional('wall', { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: 'MILLIS' } }),
      ],
      {
        external_id: ['u1', 'u2', 'u3'],
        ends: [2147483647, 2932896, null],
        seen: [null, -9000000000000000n, 0n],
        wall: [null, null, 9000000000000000n],
      },
    );
    const { columns, rows } = await rowsOf(path);
    const read = header(columns);
    const far = 'past the years a time can be sent in (-271821 to 275760)';
    expect(mapRow(read, rows[0]).errors).toEqual([`ends: is a DATE ${far}, got 2147483647 days from 1970-01-01`]);
    expect(mapRow(read, rows[1])).toMatchObject({ item: { ends: '9999-12-31' }, errors: [`seen: is a TIMESTAMP ${far}, got -9000000000000000 milliseconds from 1970-01-01`] });
    expect(mapRow(read, rows[2])).toMatchObject({ item: { seen: '1970-01-01T00:00:00.000Z' }, errors: [expect.stringMatching(/^wall: is a TIMESTAMP past the years/)] });
    // the rejects file shows what the file holds
    expect(parquetRowObject(read, asBatch(rows[0]), 0)).toEqual({ external_id: 'u1', ends: '2147483647 days from 1970-01-01' });
  });

  it('names the file and the rows read when its data is damaged past them, where the decoder only said "unreachable"', async () => {
    const path = join(dir.dir, 'damaged.parquet');
    writeCompressed(path, 'SNAPPY', Array.from({ length: 20_000 }, (_, i) => `user-${i}`), 2_000);
    const { readFileSync, writeFileSync } = await import('node:fs');
    const bytes = readFileSync(path);
    for (let at = bytes.length >> 1; at < (bytes.length >> 1) + 2_000; at += 1) bytes[at] = (bytes[at] * 7 + 13) & 0xff;
    writeFileSync(path, bytes);
    const file = await openParquet(path);
    let read = 0;
    const reading = (async () => {
      for await (const batch of file.batches()) read += batch.rows;
    })();
    await expect(reading).rejects.toThrow(/^.*damaged\.parquet: cannot be read as Parquet past row [\d,]+ of 20,000: its data is damaged there \(.+\); the rows before it were read$/);
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(20_000);
  });

  it('gives a FLOAT in its shortest form', () => {
    expect(float32Number(Math.fround(0.1))).toBe(0.1);
    expect(float32Number(Math.fround(1 / 3))).toBe(0.33333334);
    expect(float32Number(2)).toBe(2);
  });
});
