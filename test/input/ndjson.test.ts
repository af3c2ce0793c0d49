import { describe, expect, it } from 'vitest';
import { MAX_LINE_DEPTH, nestsDeeperThan, readNdjson } from '../../src/input/ndjson.js';
import { chunksOf, collect } from './helpers.js';

const read = (text: string | Buffer, chunk = Infinity, maxLineChars?: number) =>
  collect(readNdjson(chunksOf(text, chunk), { maxLineChars }));

describe('readNdjson', () => {
  it('parses each line with its 1-based line number, skipping blank lines, with LF or CRLF', async () => {
    const records = await read('{"a":1}\r\n\r\n  \n{"b":2}\n[3]');
    expect(records).toEqual([
      { line: 1, value: { a: 1 }, chars: 7 },
      { line: 4, value: { b: 2 }, chars: 7 },
      { line: 5, value: [3], chars: 3 },
    ]);
  });

  it('reports a line that is not JSON as data, with its text, and goes on', async () => {
    const records = await read('{"a":1}\n{"a":\n{"a":3}\n');
    expect(records[1]).toEqual({ line: 2, text: '{"a":', error: expect.stringMatching(/^line: is not valid JSON/) });
    expect(records[2]).toEqual({ line: 3, value: { a: 3 }, chars: 7 });
  });

  it('joins characters split across chunks, and drops a byte order mark', async () => {
    const text = '\ufeff{"name":"Zoë ✓ 𝄞"}\n{"n":2}\n';
    expect(await read(text, 1)).toEqual(await read(text));
    expect((await read(text, 1))[0]).toMatchObject({ line: 1, value: { name: 'Zoë ✓ 𝄞' } });
  });

  it('rejects a line longer than the limit without holding it, and reads the next', async () => {
    const long = `{"x":"${'y'.repeat(500)}"}`;
    const records = await read(`${long}\n{"ok":true}\n`, 64, 100);
    expect(records).toEqual([
      { line: 1, text: expect.any(String), error: 'line: is longer than 100 characters; it was not read' },
      { line: 2, value: { ok: true }, chars: 11 },
    ]);
    expect((records[0] as { text: string }).text.length).toBeLessThan(300);
  });

  it('rejects a line holding bytes that are not valid UTF-8 with the byte and its offset in the file, and reads on', async () => {
    const bytes = Buffer.concat([Buffer.from('{"a":1}\n{"external_id":"u'), Buffer.from([0xff]), Buffer.from('2"}\n{"a":3}\n')]);
    for (const chunk of [1, 3, Infinity]) {
      const records = await read(bytes, chunk);
      expect(records).toEqual([
        { line: 1, value: { a: 1 }, chars: 7 },
        { line: 2, text: '{"external_id":"u\uFFFD2"}', error: expect.stringMatching(/^line: byte 0xFF at byte offset 25 of the file is not valid UTF-8/) },
        { line: 3, value: { a: 3 }, chars: 7 },
      ]);
    }
  });

  it('reads the encoding it is given', async () => {
    const latin1 = Buffer.from([...Buffer.from('{"city":"'), 0xe9, 0x80, ...Buffer.from('"}\n')]);
    const one = async (encoding: 'latin1' | 'windows-1252') => (await collect(readNdjson(chunksOf(latin1, 2), { encoding })))[0];
    expect(await one('latin1')).toMatchObject({ value: { city: 'é\u0080' } });
    expect(await one('windows-1252')).toMatchObject({ value: { city: 'é€' } });
    const utf16 = Buffer.from('\ufeff{"city":"Zürich €"}\r\n{"n":2}\n', 'utf16le');
    expect(await collect(readNdjson(chunksOf(utf16, 3), { encoding: 'utf-16le' }))).toEqual([
      { line: 1, value: { city: 'Zürich €' }, chars: 19 },
      { line: 2, value: { n: 2 }, chars: 7 },
    ]);
  });

  it('rejects a line nested 100,000 deep unread, its text cut short, and reads the next; one within the bound is parsed', async () => {
    const deep = (depth: number) => `{"external_id":"d","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const records = await read(`${deep(100_000)}\n${deep(MAX_LINE_DEPTH - 1)}\n{"a":1}\n`, 65536);
    expect(records[0]).toEqual({ line: 1, text: expect.stringMatching(/^\{"external_id":"d","x":\[+\.\.\.$/), error: expect.stringMatching(/^line: nests deeper than 128 levels/) });
    expect((records[0] as { text: string }).text.length).toBeLessThan(10_010);
    expect(records[1]).toMatchObject({ line: 2, value: { external_id: 'd' } });
    expect(records[2]).toEqual({ line: 3, value: { a: 1 }, chars: 7 });
  });

  it('counts depth outside strings only', () => {
    const brackets = '['.repeat(300);
    expect(nestsDeeperThan(`{"s":"${brackets}\\"","t":"${brackets}"}`, 128)).toBe(false);
    expect(nestsDeeperThan(`[${'{"a":'.repeat(200)}1${'}'.repeat(200)}]`, 128)).toBe(true);
    expect(nestsDeeperThan(`[${'[1],'.repeat(500)}[1]]`, 128)).toBe(false);
  });

  it('rejects a line holding a number JavaScript cannot hold, naming its field, with the line as written', async () => {
    const records = await read('{"properties":{"big":12345678901234567890}}\n{"n":1e400}\n{"n":1e-400}\n{"n":0.1,"m":1.5e3}\n');
    expect(records).toEqual([
      { line: 1, text: '{"properties":{"big":12345678901234567890}}', error: expect.stringMatching(/^properties\.big: 12345678901234567890 is a whole number .*quote it as a string/) },
      { line: 2, text: '{"n":1e400}', error: expect.stringMatching(/^n: 1e400 is too large for a number.*quote it as a string/) },
      { line: 3, text: '{"n":1e-400}', error: expect.stringMatching(/^n: 1e-400 is too small for a number.*quote it as a string/) },
      { line: 4, value: { n: 0.1, m: 1500 }, chars: 19 },
    ]);
  });
});
