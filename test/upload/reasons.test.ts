// Rejected rows count by their reason, never by the place or the value that caused it; and a file
// whose bytes are not UTF-8 gets one note naming the encoding they look like and the flag.
import { describe, expect, it } from 'vitest';
import { readUndecodableProblem, undecodableMessage } from '../../src/input/decode.js';
import { planEvents } from '../../src/upload/plan.js';
import { createEncodingTally, encodingHint } from '../../src/upload/encoding-note.js';
import { addPlanEvent, emptyPlanSummary, reasonOf } from '../../src/upload/summary.js';
import { tempDir } from '../helpers/cli.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const undecodable = (value: number, offset: number, field = 'Company') => `${field}: ${undecodableMessage({ index: 0, value, offset })}`;

describe('reasonOf', () => {
  it('leaves out the byte and its offset, a parser position, an item size and the value', () => {
    expect(reasonOf(undecodable(0xe9, 27))).toBe(
      'Company: bytes not valid UTF-8; save the file as UTF-8, or give its encoding with --encoding latin1, windows-1252 or utf-16le',
    );
    expect(reasonOf(undecodable(0xfc, 90_210))).toBe(reasonOf(undecodable(0xe9, 27)));
    expect(reasonOf(`line: ${undecodableMessage({ index: 0, value: 0xff, offset: 3 })}`)).toMatch(/^line: bytes not valid UTF-8; /);
    expect(reasonOf("line: is not valid JSON (Expected ',' or '}' after property value in JSON at position 42)")).toBe('line: is not valid JSON');
    expect(reasonOf('prefs: is not valid JSON (Unexpected token \'t\', "{theme: dark}" is not valid JSON), got "{theme: dark}"')).toBe('prefs: is not valid JSON');
    expect(reasonOf('row: the item is 4000123 bytes as JSON; a request body may be at most 4000000 bytes')).toBe(
      'row: the item is larger as JSON than a request body may be (4000000 bytes)',
    );
    expect(reasonOf('email: is not a valid email address, got "x"')).toBe('email: is not a valid email address');
  });

  it('reads back only what undecodableMessage wrote', () => {
    expect(readUndecodableProblem(undecodable(0xe9, 27))).toMatchObject({ prefix: 'Company: ', value: 0xe9, offset: 27 });
    expect(readUndecodableProblem('Company: must be at most 255 characters')).toBeUndefined();
  });

  it('counts a thousand rows refused for bytes at a thousand offsets as one reason', () => {
    let summary = emptyPlanSummary();
    for (let i = 0; i < 1000; i += 1) {
      const errors = [undecodable(0x80 + (i % 100), 100 + i * 37, i % 2 === 0 ? 'Company' : 'first_name')];
      summary = addPlanEvent(summary, { type: 'reject', record: { file: 'x.csv', line: i + 2, kind: 'attributes', row: {}, errors } });
    }
    expect(Object.values(summary.rejectReasons)).toEqual([500, 500]);
    expect(summary.rejectReasons['(other reasons)']).toBeUndefined();
  });
});

describe('the encoding note', () => {
  it('names Windows-1252 and the flag for a file whose many rows hold its bytes, with the characters they are', () => {
    const tally = createEncodingTally('utf-8');
    for (let i = 0; i < 30; i += 1) tally.rejected('crm.csv', [undecodable(i % 3 === 0 ? 0xfc : 0xe9, 40 * i)]);
    tally.rejected('crm.csv', ['email: is not a valid email address']);
    expect(tally.note('crm.csv', 60)).toBe(
      '30 of 60 rows hold bytes that are not valid UTF-8; they look like Windows-1252, as spreadsheets and CRMs on Windows write "é" (0xE9), "ü" (0xFC): ' +
        'read the file with --encoding windows-1252 (if some of its text reads right as UTF-8, it mixes encodings: fix those rows instead)',
    );
    expect(tally.note('crm.csv', 60)).toBeUndefined();
  });

  it('says nothing of a stray byte in a large file, nor when the file was read in another encoding', () => {
    const stray = createEncodingTally('utf-8');
    stray.rejected('big.csv', [undecodable(0xa0, 5000)]);
    expect(stray.note('big.csv', 100_000)).toBeUndefined();
    const latin = createEncodingTally('latin1');
    latin.rejected('x.csv', [undecodable(0xe9, 5)]);
    expect(latin.note('x.csv', 1)).toBeUndefined();
  });

  it('names UTF-16LE for a file that starts with its byte order mark', () => {
    const tally = createEncodingTally('utf-8');
    tally.rejected('wide.ndjson', [`line: ${undecodableMessage({ index: 0, value: 0xff, offset: 0 })}`]);
    expect(tally.note('wide.ndjson', 40)).toMatch(/^1 of 40 rows hold bytes that are not valid UTF-8, and the file starts with FF FE, the mark of UTF-16LE: read it with --encoding utf-16le$/);
    expect(encodingHint(`column 1: ${undecodableMessage({ index: 0, value: 0xff, offset: 0 })}`)).toMatch(/UTF-16LE.*--encoding utf-16le/);
    expect(encodingHint(`column 1: ${undecodableMessage({ index: 0, value: 0x92, offset: 12 })}`)).toBe(
      '0x92 is "’" in Windows-1252, as spreadsheets and CRMs on Windows write it: if that is the file\'s encoding, give --encoding windows-1252',
    );
  });

  it('comes once from the plan, after the rows of its file', async () => {
    const tmp = tempDir();
    try {
      const file = join(tmp.dir, 'crm.csv');
      const rows = Array.from({ length: 20 }, (_, i) => `C-${i},${i % 2 === 0 ? 'Caf\xe9' : 'Acme'}`);
      writeFileSync(file, Buffer.from(`external_id,company\n${rows.join('\n')}\n`, 'latin1'));
      const events = [];
      for await (const event of planEvents({ inputs: [file] })) events.push(event);
      const notes = events.filter((event) => event.type === 'note');
      expect(notes).toEqual([{ type: 'note', file, note: expect.stringMatching(/^10 of 20 rows hold bytes that are not valid UTF-8; they look like Windows-1252, .*"é" \(0xE9\)/) }]);
      expect(events.at(-1)).toMatchObject({ type: 'request' });
    } finally {
      tmp.cleanup();
    }
  });
});
