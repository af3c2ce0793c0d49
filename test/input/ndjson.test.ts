import { describe, expect, it } from 'vitest';
import { readNdjson } from '../../src/input/ndjson.js';
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
});
