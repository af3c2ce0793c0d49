// How many rows a --delta run's inputs hold, guessed from the start of the largest file before any is
// read: the filter of users sent is made for that many (seen-users.ts).
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rowsIn } from '../../src/upload/rows-guess.js';
import { ROOT, tempDir } from '../helpers/cli.js';
import { writeParquet } from '../helpers/parquet.js';

/** CSV rows of users with ids of varying length, in no order, as a warehouse export has them. */
function usersCsv(rows: number, seed: number): string {
  const lines = ['external_id,email,first_name,plan,visits'];
  let x = seed;
  for (let i = 0; i < rows; i += 1) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const id = `u${x % 10 ** (3 + (x % 6))}`;
    lines.push(`${id},${id}@example.com,${['Ann', 'Bo', 'Christabel'][x % 3]},${x % 2 === 0 ? 'pro' : 'free'},${x % 1000}`);
  }
  return `${lines.join('\n')}\n`;
}

const near = (guess: number | undefined, rows: number) => {
  expect(guess).toBeDefined();
  expect(Math.abs(guess! - rows) / rows).toBeLessThan(0.1);
};

describe('the rows a run guesses its inputs hold', () => {
  let dir: string;
  let cleanup: () => void;
  beforeEach(() => ({ dir, cleanup } = tempDir()));
  afterEach(() => cleanup());

  it('reads a large CSV file by the rows of its start', () => {
    const file = join(dir, 'users.csv');
    writeFileSync(file, usersCsv(200_000, 1));
    near(rowsIn([file]), 200_001);
  });

  it('reads rows of kilobytes by the few lines of its sample', () => {
    const file = join(dir, 'wide.ndjson');
    writeFileSync(file, Array.from({ length: 200 }, (_, i) => `{"external_id":"user-${i}","notes":"${'n'.repeat(8_000 + (i % 7) * 100)}"}\n`).join(''));
    near(rowsIn([file]), 200);
  });

  it('gives a shard its share of the rows (--shard K/N)', () => {
    const file = join(dir, 'users.csv');
    writeFileSync(file, usersCsv(90_000, 6));
    near(rowsIn([file], 3), 30_000);
    expect(rowsIn([file], 3)).toBe(Math.ceil(rowsIn([file])! / 3));
  });

  it('counts the lines of a file smaller than its sample, the last one unended too', () => {
    const ended = join(dir, 'ended.csv');
    const unended = join(dir, 'unended.csv');
    writeFileSync(ended, 'external_id\na\nb\nc\n');
    writeFileSync(unended, 'external_id\na\nb\nc');
    expect(rowsIn([ended])).toBe(4);
    expect(rowsIn([unended])).toBe(4);
  });

  it('reads a gzipped file by the rows its start inflates to', () => {
    const file = join(dir, 'users.csv.gz');
    writeFileSync(file, gzipSync(usersCsv(300_000, 2)));
    near(rowsIn([file]), 300_001);
  });

  it('takes the files of one kind to hold rows of the largest one’s length', () => {
    const big = join(dir, 'big.ndjson');
    const small = join(dir, 'small.ndjson');
    const lines = (n: number, note: string) => Array.from({ length: n }, (_, i) => `{"external_id":"user-${i}","note":"${note}"}\n`).join('');
    writeFileSync(big, lines(100_000, 'x'));
    // rows four times as long: taken at the big file's length, by the big file's sample (the small
    // one's would take the big file for about 25,000 rows)
    writeFileSync(small, lines(5_000, 'x'.repeat(120)));
    near(rowsIn([small, big]), 100_000 + statSync(small).size / (statSync(big).size / 100_000));
  });

  it('adds gzipped and plain files each by their own sample', () => {
    const plain = join(dir, 'a.csv');
    const packed = join(dir, 'b.csv.gz');
    writeFileSync(plain, usersCsv(100_000, 3));
    writeFileSync(packed, gzipSync(usersCsv(100_000, 4)));
    near(rowsIn([plain, packed]), 200_002);
  });

  it('takes 40 bytes a row where the start is no lines of rows: a JSON array on one line, Parquet', () => {
    const array = join(dir, 'users.json');
    const text = JSON.stringify(Array.from({ length: 5_000 }, (_, i) => ({ external_id: `user-${i}`, plan: 'pro' })));
    writeFileSync(array, text);
    expect(rowsIn([array])).toBe(Math.ceil(text.length / 40));
    const parquet = join(dir, 'users.parquet');
    writeParquet(parquet, [{ name: 'root', num_children: 1 }, { name: 'external_id', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' }], { external_id: Array.from({ length: 20_000 }, (_, i) => `user-${i}`) });
    expect(rowsIn([parquet])).toBe(Math.ceil(statSync(parquet).size / 40));
    // bytes that are not text (a workbook saved under a .csv name): not lines either
    const workbook = join(dir, 'users.csv');
    const zip = Buffer.concat([Buffer.from([0x50, 0x4b, 3, 4, 0x14, 0, 0, 0]), Buffer.from(usersCsv(2_000, 5))]);
    writeFileSync(workbook, zip);
    expect(rowsIn([workbook])).toBe(Math.ceil(zip.length / 40));
  });

  it('takes 8 bytes of gzip a row where its start does not inflate', () => {
    const file = join(dir, 'broken.csv.gz');
    const bytes = Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(100_000, 0x41)]);
    writeFileSync(file, bytes);
    expect(rowsIn([file])).toBe(Math.ceil(bytes.length / 8));
  });

  it('takes 8 bytes of gzip a row where its start inflates to more than 64 times its size (no rows of text, a bomb)', () => {
    const file = join(dir, 'newlines.csv.gz');
    const bytes = gzipSync(Buffer.alloc(16 * 1024 * 1024, 0x0a));
    writeFileSync(file, bytes);
    expect(rowsIn([file])).toBe(Math.ceil(bytes.length / 8));
  });

  it('knows nothing of standard input, or of an input that is not a local file', () => {
    expect(rowsIn(['-'])).toBeUndefined();
    // a pipe with no writer: opening it would wait for one (and a read would take what the run reads);
    // asked in a process of its own, so that a wait fails the test instead of holding it forever
    const pipe = join(dir, 'rows.csv');
    expect(spawnSync('mkfifo', [pipe]).status).toBe(0);
    const asked = spawnSync(process.execPath, ['--input-type=module', '-e', `import { rowsIn } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/upload/rows-guess.js')).href)}; console.log(String(rowsIn([${JSON.stringify(pipe)}])))`], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(asked.signal).toBeNull();
    expect(asked.stdout.trim()).toBe('undefined');
    expect(rowsIn([join(dir, 'missing.csv')])).toBeUndefined();
    expect(rowsIn(['s3://bucket/users.csv'])).toBeUndefined();
  });
});
