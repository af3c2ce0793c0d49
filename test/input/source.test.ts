import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { InputError, UsageError } from '../../src/errors.js';
import { checkFormat, checkReadable, formatOf, inputBytes } from '../../src/input/source.js';

async function text(bytes: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of bytes) parts.push(chunk);
  return Buffer.concat(parts).toString('utf8');
}

describe('formatOf', () => {
  it('follows the extension, .gz aside, unless a format is given', () => {
    expect(formatOf('a/users.csv')).toBe('csv');
    expect(formatOf('users.CSV.gz')).toBe('csv');
    expect(formatOf('events.ndjson')).toBe('ndjson');
    expect(formatOf('events.jsonl.gz')).toBe('ndjson');
    expect(formatOf('events.txt', 'ndjson')).toBe('ndjson');
    expect(formatOf('-', 'csv')).toBe('csv');
  });

  it('is a usage error for standard input or an unknown extension without --format', () => {
    expect(() => formatOf('-')).toThrow(UsageError);
    expect(() => formatOf('users.txt')).toThrow(/users\.txt: cannot tell the format/);
    expect(() => formatOf('s3://b/exports/_SUCCESS')).toThrow(/give --format, or leave it out with a glob/);
  });

  it('knows JSON, Parquet and the names of objects in storage, a URL by its path', () => {
    expect(formatOf('users.json')).toBe('json');
    expect(formatOf('users.json.gz')).toBe('json');
    expect(formatOf('part-0001.snappy.parquet')).toBe('parquet');
    expect(() => formatOf('users.parquet.gz')).toThrow(/cannot tell the format/);
    expect(formatOf('s3://bucket/exports/part-1.ndjson.gz')).toBe('ndjson');
    expect(formatOf('https://bucket.example.com/users.csv?X-Amz-Signature=abc.json')).toBe('csv');
  });

  it('says to save a workbook as CSV, by its name or by its first bytes', async () => {
    expect(() => formatOf('users.xlsx')).toThrow(/save it as CSV/);
    const dir = mkdtempSync(join(tmpdir(), 'track-source-'));
    const zip = join(dir, 'export');
    writeFileSync(zip, Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00, 0x08]));
    await expect(checkFormat(zip)).rejects.toThrow(/export: is a ZIP archive .*save it as CSV/);
    writeFileSync(join(dir, 'renamed.csv'), Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0x00]));
    await expect(text(inputBytes(join(dir, 'renamed.csv')))).rejects.toThrow(/renamed\.csv: is an Excel workbook .*save it as CSV/);
  });

  it('says to read a Parquet file as Parquet, by its first bytes, where it was read as text a byte at a time', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-source-'));
    const parquet = Buffer.from('PAR1\x15\x00\x15\x1c', 'latin1');
    writeFileSync(join(dir, 'part-0000'), parquet);
    await expect(checkFormat(join(dir, 'part-0000'))).rejects.toThrow(/part-0000: is a Parquet file \(it starts with PAR1\), not text: give --format parquet/);
    writeFileSync(join(dir, 'users.csv'), parquet);
    await expect(text(inputBytes(join(dir, 'users.csv')))).rejects.toThrow(/users\.csv: is a Parquet file/);
    // a CSV header may begin with the letters
    writeFileSync(join(dir, 'par.csv'), 'PAR1,external_id\n');
    expect(await text(inputBytes(join(dir, 'par.csv')))).toBe('PAR1,external_id\n');
  });
});

describe('inputBytes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'track-source-'));

  it('reads a file, and gunzips one that starts like gzip whatever its name', async () => {
    writeFileSync(join(dir, 'plain.csv'), 'id\n1\n');
    writeFileSync(join(dir, 'packed.csv.gz'), gzipSync('id\n2\n'));
    writeFileSync(join(dir, 'packed-no-ext.csv'), gzipSync('id\n3\n'));
    expect(await text(inputBytes(join(dir, 'plain.csv')))).toBe('id\n1\n');
    expect(await text(inputBytes(join(dir, 'packed.csv.gz')))).toBe('id\n2\n');
    expect(await text(inputBytes(join(dir, 'packed-no-ext.csv')))).toBe('id\n3\n');
  });

  it('reads standard input, gzipped or not, even in one-byte chunks', async () => {
    const packed = gzipSync('id\n4\n');
    const oneByte = Readable.from((function* () { for (const b of packed) yield Buffer.from([b]); })());
    expect(await text(inputBytes('-', { stdin: oneByte }))).toBe('id\n4\n');
    expect(await text(inputBytes('-', { stdin: Readable.from([Buffer.from('x')]) }))).toBe('x');
    expect(await text(inputBytes('-', { stdin: Readable.from([]) }))).toBe('');
  });

  it('reads a file a chunk at a time, hands it on in pieces when asked, and counts every byte read', async () => {
    const body = Array.from({ length: 3000 }, (_, i) => `u${i},é${i}`).join('\n');
    const path = join(dir, 'chunks.csv');
    writeFileSync(path, body);
    const size = Buffer.byteLength(body);
    let read = 0;
    const pieces: number[] = [];
    for await (const piece of inputBytes(path, { chunkBytes: 8192, pieceBytes: 2048, onRead: (n) => (read += n) })) pieces.push(piece.length);
    expect(read).toBe(size);
    expect(pieces.reduce((a, b) => a + b, 0)).toBe(size);
    expect(Math.max(...pieces)).toBe(2048);
    expect(await text(inputBytes(path, { chunkBytes: 8192, pieceBytes: 2048 }))).toBe(body);
    // a gzipped file is handed on as it is unpacked
    writeFileSync(join(dir, 'chunks.csv.gz'), gzipSync(body));
    expect(await text(inputBytes(join(dir, 'chunks.csv.gz'), { chunkBytes: 1024, pieceBytes: 512 }))).toBe(body);
  });

  it('lets the event loop turn between the reads of a file (a signal, a timer, a socket is seen to)', async () => {
    const path = join(dir, 'turns.csv');
    writeFileSync(path, 'x'.repeat(64 * 1024));
    let turns = 0;
    const timer = setInterval(() => (turns += 1), 0);
    let chunks = 0;
    try {
      for await (const chunk of inputBytes(path, { chunkBytes: 1024 })) {
        expect(chunk.length).toBeLessThanOrEqual(1024);
        chunks += 1;
      }
    } finally {
      clearInterval(timer);
    }
    expect(chunks).toBe(64);
    expect(turns).toBeGreaterThan(0);
  });

  it('reads what a file gains while it is read into what the last read left free, keeping the bytes handed on', async () => {
    const path = join(dir, 'growing.csv');
    // read into a buffer of the least size, 1,024 bytes
    writeFileSync(path, 'a'.repeat(1000));
    const chunks: Buffer[] = [];
    const bytes = inputBytes(path);
    for await (const chunk of bytes) {
      chunks.push(chunk);
      if (chunks.length === 1) appendFileSync(path, 'b'.repeat(300));
    }
    // the first buffer's last 24 bytes took the first of what was added, and a second the rest
    expect(chunks.map((chunk) => chunk.length)).toEqual([1000, 24, 276]);
    expect(Buffer.concat(chunks).toString()).toBe(`${'a'.repeat(1000)}${'b'.repeat(300)}`);
  });

  it('reads a small file into one buffer: the read that finds its end takes what the first left free', async () => {
    const path = join(dir, 'small.csv');
    writeFileSync(path, 'id\n1\n');
    const allocations = vi.spyOn(Buffer, 'allocUnsafeSlow');
    try {
      expect(await text(inputBytes(path))).toBe('id\n1\n');
      expect(allocations).toHaveBeenCalledTimes(1);
    } finally {
      allocations.mockRestore();
    }
  });

  it('reads a file transiently into one buffer, which serves the next file read so, and gunzips a copy', async () => {
    const body = Array.from({ length: 3000 }, (_, i) => `u${i},é${i}`).join('\n');
    const [first, second] = [join(dir, 'transient-1.csv'), join(dir, 'transient-2.csv')];
    writeFileSync(first, body);
    writeFileSync(second, body.toUpperCase());
    // (bytes that do not pack: many chunks for gunzip to be behind on)
    const noise = randomBytes(512 * 1024).toString('base64');
    writeFileSync(join(dir, 'transient.csv.gz'), gzipSync(noise));
    // a reader that decodes each chunk before it asks for the next (as the CSV and NDJSON readers do)
    const decoded = async (path: string, buffers: Set<ArrayBufferLike>): Promise<string> => {
      let out = '';
      for await (const chunk of inputBytes(path, { chunkBytes: 4096, transient: true })) {
        buffers.add(chunk.buffer);
        out += chunk.toString('latin1');
      }
      return Buffer.from(out, 'latin1').toString('utf8');
    };
    const buffers = new Set<ArrayBufferLike>();
    expect(await decoded(first, buffers)).toBe(body);
    expect(await decoded(second, buffers)).toBe(body.toUpperCase());
    expect(buffers.size).toBe(1);
    // gunzip reads its input later than it is given it: what it unpacks is whole all the same
    expect(await decoded(join(dir, 'transient.csv.gz'), new Set())).toBe(noise);
  });

  it('reads a file shorter than the bytes that tell formats apart, and an empty one, whole', async () => {
    writeFileSync(join(dir, 'tiny.csv'), 'id\n');
    writeFileSync(join(dir, 'empty.csv'), '');
    for (const transient of [false, true]) {
      expect(await text(inputBytes(join(dir, 'tiny.csv'), { transient }))).toBe('id\n');
      expect(await text(inputBytes(join(dir, 'empty.csv'), { transient }))).toBe('');
    }
  });

  it.skipIf(!existsSync('/proc/self/fd'))('closes a file whose reader stops at its first chunk, plain or gzipped, and reads it whole again after', async () => {
    const body = Array.from({ length: 2000 }, (_, i) => `u${i},${i}`).join('\n');
    writeFileSync(join(dir, 'stopped.csv'), body);
    writeFileSync(join(dir, 'stopped.csv.gz'), gzipSync(body));
    const open = (): number => readdirSync('/proc/self/fd').length;
    const before = open();
    for (const name of ['stopped.csv', 'stopped.csv.gz']) {
      for (const transient of [false, true]) {
        let chunks = 0;
        for await (const chunk of inputBytes(join(dir, name), { chunkBytes: 1024, transient })) {
          expect(chunk.length).toBeGreaterThan(0);
          chunks += 1;
          break;
        }
        expect(chunks).toBe(1);
        expect(open()).toBe(before);
        // (a transient chunk is read over by the next: each is copied as it comes)
        const whole: Buffer[] = [];
        for await (const chunk of inputBytes(join(dir, name), { chunkBytes: 1024, transient })) whole.push(Buffer.from(chunk));
        expect(Buffer.concat(whole).toString()).toBe(body);
      }
    }
    expect(open()).toBe(before);
  });

  it('names the file when it is missing, not gzip after all, or not a file', async () => {
    writeFileSync(join(dir, 'broken.csv.gz'), Buffer.concat([gzipSync('id\n5\n').subarray(0, 12)]));
    await expect(checkReadable(join(dir, 'nope.csv'))).rejects.toThrow(InputError);
    await expect(checkReadable(join(dir, 'nope.csv'))).rejects.toThrow(/nope\.csv: no such file/);
    await expect(checkReadable(dir)).rejects.toThrow(/is not a file/);
    await expect(text(inputBytes(join(dir, 'broken.csv.gz')))).rejects.toThrow(/broken\.csv\.gz: .*gzip|broken\.csv\.gz: cannot read/);
    await expect(text(inputBytes(join(dir, 'gone.csv')))).rejects.toThrow(/gone\.csv: cannot read it \(ENOENT\)/);
  });

  it('hands on every byte a gzip file cut short inflates to before it names the break, however slowly it is taken', async () => {
    const body = Array.from({ length: 50_000 }, (_, i) => `gz${i},p\n`).join('');
    const whole = gzipSync(body);
    const cut = whole.subarray(0, whole.length >> 1);
    writeFileSync(join(dir, 'cut.csv.gz'), cut);
    const before = gunzipSync(cut, { finishFlush: constants.Z_SYNC_FLUSH }).length;
    for (const options of [{}, { chunkBytes: 64 * 1024, pieceBytes: 16 * 1024 }, { transient: true, chunkBytes: 1000 }]) {
      let got = 0;
      const read = (async () => {
        for await (const chunk of inputBytes(join(dir, 'cut.csv.gz'), options)) {
          got += chunk.length;
          // a reader slower than gunzip: what it inflated waits to be taken when the break comes
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      })();
      await expect(read).rejects.toThrow(`cut.csv.gz: is not valid gzip data past byte ${cut.length.toLocaleString('en-US')} of the file (unexpected end of file)`);
      expect(got).toBe(before);
    }
  });
});
