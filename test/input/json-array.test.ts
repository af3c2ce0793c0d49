import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inputBytes } from '../../src/input/source.js';
import { readJson } from '../../src/input/json-array.js';
import { MAX_LINE_DEPTH } from '../../src/input/ndjson.js';
import { chunksOf, collect } from './helpers.js';

const read = (text: string | Buffer, chunk = Infinity) => collect(readJson(chunksOf(text, chunk), 'users.json'));

describe('readJson', () => {
  it('gives each element of a pretty-printed array as a row numbered from 1, in any chunking', async () => {
    const text = '\ufeff[\n  {"external_id": "u1", "name": "Zoë ✓ 𝄞"},\n  {"external_id": "u2", "visits": 3}\n]\n';
    const whole = await read(text);
    expect(whole).toEqual([
      { line: 1, fileLine: 2, value: { external_id: 'u1', name: 'Zoë ✓ 𝄞' }, chars: expect.any(Number) },
      { line: 2, fileLine: 3, value: { external_id: 'u2', visits: 3 }, chars: expect.any(Number) },
    ]);
    expect(await read(text, 1)).toEqual(whole);
    expect(await read('[]')).toEqual([]);
    expect(await read('  \n')).toEqual([]);
  });

  it("names the line of the file where each element begins, in any chunking, an element over many chunks and a one-line array too", async () => {
    const long = `"${'x'.repeat(50)}"`;
    const text = `\ufeff[\n  {"external_id": "u1"},\n\n  {"external_id": "é",\n   "bio": ${long},\n   "n": [\n1,\n2]},\r\n  3, {"a":\n1}\n]\n`;
    for (const chunk of [Infinity, 1, 3, 7]) {
      const records = await read(text, chunk);
      expect(records.map((r) => [r.line, r.fileLine])).toEqual([[1, 2], [2, 4], [3, 9], [4, 9]]);
    }
    const oneLine = await read('[{"a":1},{"b":2}, {"c":3}]', 2);
    expect(oneLine.map((r) => r.fileLine)).toEqual([1, 1, 1]);
    // an element rejected is named at its line too
    expect(await read('[\n{"big": 12345678901234567890}]')).toEqual([expect.objectContaining({ line: 1, fileLine: 2, error: expect.any(String) })]);
  });

  it('reads objects one after another, each over lines, when the first line is { alone (a pretty-printed object, jq without -c)', async () => {
    const one = '{\n  "attributes": [\n    {"external_id": "u1"},\n    {"external_id": "u2"}\n  ]\n}\n';
    for (const chunk of [Infinity, 1, 4]) {
      expect(await read(one, chunk)).toEqual([{ line: 1, fileLine: 1, value: { attributes: [{ external_id: 'u1' }, { external_id: 'u2' }] }, chars: expect.any(Number) }]);
    }
    const several = '\ufeff\n{\r\n  "external_id": "u1"\r\n}\r\n{\r\n  "external_id": "u2",\r\n  "n": 12345678901234567890\r\n}\n{"external_id": "u3"}\n';
    expect(await read(several, 3)).toEqual([
      expect.objectContaining({ line: 1, fileLine: 2, value: { external_id: 'u1' } }),
      expect.objectContaining({ line: 2, fileLine: 5, error: expect.stringMatching(/^n: 12345678901234567890 is a whole number beyond/) }),
      expect.objectContaining({ line: 3, fileLine: 9, value: { external_id: 'u3' } }),
    ]);
    await expect(read('{\n  "external_id": "u1"\n}\n{\n  "external_id": "u2",\n')).rejects.toThrow(/^users\.json:6: is not valid JSON \(objects one after another\): the file ends before the object is closed with \} \(after row 1, which was read\)$/);
    await expect(read('{\n  "a": 1\n}\n{\n  "a" 2\n}')).rejects.toThrow(/^users\.json:5: is not valid JSON \(objects one after another\): found 2 where the : after a field name belongs/);
    // a first line holding more than { is a line of NDJSON
    expect(await read('{"a": 1}\n{"b": 2}\n')).toHaveLength(2);
  });

  it('reads NDJSON when the first character that is not a space is {', async () => {
    expect(await read('\n{"a":1}\n{"b":2}\n')).toEqual([
      { line: 2, value: { a: 1 }, chars: 7 },
      { line: 3, value: { b: 2 }, chars: 7 },
    ]);
  });

  it('rejects an element holding a number JavaScript cannot hold, naming where, and keeps its text', async () => {
    const records = await read('[{"external_id":"u1","properties":{"big":12345678901234567890}},{"n":1.5e3}]');
    expect(records[0]).toEqual({
      line: 1,
      fileLine: 1,
      text: '{"external_id":"u1","properties":{"big":12345678901234567890}}',
      error: expect.stringMatching(/^properties\.big: 12345678901234567890 is a whole number beyond/),
    });
    expect(records[1]).toMatchObject({ line: 2, value: { n: 1500 } });
  });

  it('rejects an element longer than its bound unread, as an NDJSON line is, and reads on', async () => {
    const long = JSON.stringify({ external_id: 'u2', tags: Array.from({ length: 100 }, (_, i) => i), more: { a: [1, 2, 3] } });
    const bounded = (text: string, chunk = Infinity) => collect(readJson(chunksOf(text, chunk), 'users.json', { maxElementBytes: 100 }));
    for (const chunk of [Infinity, 7]) {
      expect(await bounded(`[\n{"external_id":"u1"},\n${long},\n{"external_id":"u3"}\n]`, chunk)).toEqual([
        expect.objectContaining({ line: 1, value: { external_id: 'u1' } }),
        { line: 2, fileLine: 3, text: '', error: 'row: is longer than 100 bytes; it was not read' },
        expect.objectContaining({ line: 3, fileLine: 4, value: { external_id: 'u3' } }),
      ]);
    }
    // the last element, and objects one after another
    expect((await bounded(`[{"external_id":"u1"},${long}]`)).map((r) => r.line)).toEqual([1, 2]);
    await expect(bounded(`[{"external_id":"u1"},${long}`)).rejects.toThrow(/ends before the array is closed/);
    expect(await bounded(`{\n"external_id":"u1"}\n${long}\n{"external_id":"u3"}`)).toEqual([
      expect.objectContaining({ line: 1, value: { external_id: 'u1' } }),
      expect.objectContaining({ line: 2, error: 'row: is longer than 100 bytes; it was not read' }),
      expect.objectContaining({ line: 3, fileLine: 4, value: { external_id: 'u3' } }),
    ]);
  });

  it('rejects an element nested too deep without failing the file', async () => {
    const deep = `${'['.repeat(MAX_LINE_DEPTH + 2)}1${']'.repeat(MAX_LINE_DEPTH + 2)}`;
    const records = await read(`[${deep},{"a":1}]`);
    expect(records[0]).toMatchObject({ line: 1, error: expect.stringMatching(/nests deeper than/) });
    expect(records[1]).toMatchObject({ line: 2, value: { a: 1 } });
  });

  it('stops at JSON that is broken, naming the file, the line, the byte and the rows read before', async () => {
    await expect(read('[{"a":1},{"a":2},{"a"3}]')).rejects.toThrow(/^users\.json:1: is not a valid JSON array: found 3 where the : after a field name belongs \(byte 21; after row 2, which was read\)$/);
    // the line and byte where the broken part starts, however the text came in chunks
    const broken = '[\n  {"a": "é"},\n  {"a": 2}\n  {"a": 3}\n]';
    const byte = Buffer.byteLength(broken.slice(0, broken.lastIndexOf('{')));
    for (const chunk of [Infinity, 3]) {
      await expect(read(broken, chunk)).rejects.toThrow(`users.json:4: is not a valid JSON array: found "{" where a , or the ] or } that closes the array or object belongs (byte ${byte}; after row 2, which was read)`);
    }
    await expect(read('[{"a":1}, x]')).rejects.toThrow(/found "x" where a value belongs.* \(byte 10; after row 1/);
    for (const chunk of [Infinity, 2]) {
      await expect(read('[\n{"a":1},\n{"a":tru}]', chunk)).rejects.toThrow(/^users\.json:3: is not a valid JSON array: found "}" in a word that is not true, false or null .*\(byte 19; after row 1, which was read\)$/);
    }
    await expect(read('[\n{"a":"abc')).rejects.toThrow(/^users\.json:2: is not a valid JSON array: the file ends in the middle of a string/);
    await expect(read('[{"a":1},')).rejects.toThrow(/users\.json:1: is not a valid JSON array: the file ends before the array is closed/);
    await expect(read('[{"a":1}] [2]')).rejects.toThrow(/users\.json:1: is not a valid JSON array: found "\[" after the \] that closes the array/);
  });

  it('rejects an element holding a byte not valid in the encoding, naming it, and reads on: its text never reaches an item as U+FFFD', async () => {
    // 0xFF at byte 28 of the file, in the first element's "plan"; the second element is whole
    const bytes = Buffer.concat([Buffer.from('[{"external_id":"a","plan":"x'), Buffer.of(0xff), Buffer.from('y"},\n{"external_id":"b","plan":"ok"}]')]);
    for (const chunk of [Infinity, 5]) {
      const records = await read(bytes, chunk);
      expect(records).toHaveLength(2);
      expect(records[0]).toMatchObject({ line: 1, error: expect.stringMatching(/^row: byte 0xFF at byte offset 29 of the file is not valid UTF-8; /) });
      // the rejects file shows one U+FFFD in the place of the byte
      expect((records[0] as { text: string }).text).toBe('{"external_id":"a","plan":"x\uFFFDy"}');
      expect(records[1]).toMatchObject({ line: 2, value: { external_id: 'b', plan: 'ok' } });
    }
    // in objects one after another (a pretty-printer's), the same
    const spread = Buffer.concat([Buffer.from('{\n"external_id": "a", "plan": "'), Buffer.of(0xe9), Buffer.from('"\n}\n{\n"external_id": "b"\n}\n')]);
    const records = await read(spread);
    expect(records[0]).toMatchObject({ line: 1, error: expect.stringMatching(/^row: byte 0xE9 at byte offset 31 of the file is not valid UTF-8; /) });
    expect(records[1]).toMatchObject({ line: 2, value: { external_id: 'b' } });
  });

  it('says what a .json file must hold when it is neither', async () => {
    await expect(read('"text"')).rejects.toThrow(/users\.json: is not a JSON array of objects \(it begins with "\\""\)/);
  });

  it('refuses one object holding the rows under a key, however it is written, naming the key and the jq command that writes them one a line', async () => {
    const rows = [{ external_id: 'w1', plan: 'gold' }, { external_id: 'w2', plan: 'free' }];
    const refused = /^users\.json: is one object holding its rows in an array under the key "users", not rows: .* Write the rows out one a line, jq -c '\.users\[\]' users\.json > users\.ndjson, and upload users\.ndjson$/;
    const layouts = [
      JSON.stringify({ users: rows }),
      JSON.stringify({ users: rows }, null, 2),
      // the opening on a line of its own, each row on its own line: read as NDJSON, the rows that parsed were sent
      `{"users": [\n${rows.map((r) => `  ${JSON.stringify(r)}`).join(',\n')}\n]}\n`,
      JSON.stringify({ count: 2, users: rows, next: null }, null, 2),
    ];
    for (const text of layouts) for (const chunk of [Infinity, 5]) await expect(read(text, chunk), text).rejects.toThrow(refused);
    // too long to be read as a row, told by its first bytes
    const long = JSON.stringify({ users: Array.from({ length: 50 }, (_, i) => ({ external_id: `w${i}`, notes: 'x'.repeat(40) })) });
    await expect(collect(readJson(chunksOf(long, Infinity), 'users.json', { maxElementBytes: 100 }))).rejects.toThrow(refused);
    await expect(collect(readJson(chunksOf(`{\n${long.slice(1)}`, Infinity), 'users.json', { maxElementBytes: 100 }))).rejects.toThrow(refused);
    // another key is named as jq takes it
    await expect(read(JSON.stringify({ 'the rows': rows }))).rejects.toThrow(`jq -c '.["the rows"][]' users.json > users.ndjson`);
  });

  it('reads as rows the objects a wrapper is not: a row with an identifier, a request, an anonymous push token import, and a file of more than one', async () => {
    const rowsOf = async (text: string) => (await read(text)).map((r) => ('value' in r ? r.value : r.error));
    const tokens = { push_token_import: true, push_tokens: [{ app_id: 'a', token: 't', device_id: 'd'.repeat(10) }] };
    for (const row of [
      { pets: [{ name: 'Rex' }], external_id: 'u1' },
      { attributes: [{ external_id: 'u1', plan: 'gold' }] },
      tokens,
    ]) {
      expect(await rowsOf(JSON.stringify(row))).toEqual([row]);
      expect(await rowsOf(JSON.stringify(row, null, 2))).toEqual([row]);
    }
    const twice = { users: [{ external_id: 'w1' }] };
    expect(await rowsOf(`${JSON.stringify(twice)}\n${JSON.stringify(twice)}\n`)).toEqual([twice, twice]);
  });

  it('names a byte order mark of UTF-16, or a first byte not valid in the encoding, where it named a lone surrogate', async () => {
    const utf16 = Buffer.concat([Buffer.of(0xff, 0xfe), Buffer.from('[{"a":1}]', 'utf16le')]);
    await expect(read(utf16)).rejects.toThrow(/^users\.json: starts with FF FE, the mark of UTF-16LE: give --encoding utf-16le$/);
    expect(await collect(readJson(chunksOf(utf16, 3), 'users.json', { encoding: 'utf-16le' }))).toMatchObject([{ value: { a: 1 } }]);
    await expect(read(Buffer.concat([Buffer.of(0xfe, 0xff), Buffer.from('\u5b00')]))).rejects.toThrow(/^users\.json: starts with FE FF, the mark of UTF-16BE, which no --encoding reads: save it as UTF-8$/);
    await expect(read(Buffer.from('\xe9[', 'latin1'))).rejects.toThrow(/^users\.json: is not a JSON array of objects: byte 0xE9 at byte offset 0 of the file is not valid UTF-8; /);
  });
});

describe('readJson, stopped early', () => {
  it.skipIf(!existsSync('/proc/self/fd'))('closes its file when its reader stops at the first rows (a preview), an array or lines of objects', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-json-stop-'));
    const rows = Array.from({ length: 5000 }, (_, i) => ({ external_id: `u${i}`, plan: 'pro' }));
    const array = join(dir, 'array.json');
    const lines = join(dir, 'lines.json');
    writeFileSync(array, JSON.stringify(rows, null, 1));
    writeFileSync(lines, rows.map((row) => JSON.stringify(row)).join('\n'));
    const open = (): number => readdirSync('/proc/self/fd').length;
    const before = open();
    for (const file of [array, lines, array, lines]) {
      for await (const records of readJson(inputBytes(file, { chunkBytes: 1024 }), file)) {
        expect(records.length).toBeGreaterThan(0);
        break;
      }
    }
    expect(open()).toBe(before);
  });
});
