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

describe('the reasons of a plan', () => {
  it('count rows refused for a number that cannot be held, or an element of an array, as one reason whatever the number or its place', async () => {
    const tmp = tempDir();
    try {
      const ndjson = join(tmp.dir, 'ids.ndjson');
      const lines = Array.from({ length: 60 }, (_, i) =>
        i % 2 === 0
          ? `{"external_id":"u${i}","account_id":${12345678901234567890n + BigInt(i)}}`
          : JSON.stringify({ external_id: `p${i}`, pets: { $add: [...Array.from({ length: i % 3 }, () => ({ id: 1 })), 7] } }),
      );
      writeFileSync(ndjson, `${lines.join('\n')}\n`);
      const csv = join(tmp.dir, 'scores.csv');
      const rows = Array.from({ length: 30 }, (_, i) => `u${i},[${i + 1}.00000000000000000001]`);
      writeFileSync(csv, `external_id,scores:array\n${rows.join('\n')}\n`);
      const summary = emptyPlanSummary();
      for await (const event of planEvents({ inputs: [ndjson, csv] })) addPlanEvent(summary, event);
      expect(summary.rejected).toBe(90);
      expect(summary.rejectReasons).toEqual({
        'account_id: is a whole number beyond ±9007199254740991, which a number cannot tell from its neighbours; quote it as a string to send it as written': 30,
        'pets.$add[*]: must be an object': 30,
        'scores: [*]: has more digits than a number holds; quote it as a string to send it as written': 30,
      });
      // what a number becomes is kept where every such number becomes it
      expect(reasonOf('n: 1e400 is too large for a number (it would become null); quote it as a string to send it as written')).toBe(
        'n: is too large for a number (it would become null); quote it as a string to send it as written',
      );
    } finally {
      tmp.cleanup();
    }
  });
});

describe('the encoding note', () => {
  it('names Windows-1252 and the flag for a file whose many rows hold its bytes, with the characters they are', () => {
    const tally = createEncodingTally('utf-8');
    for (let i = 0; i < 30; i += 1) tally.rejected('crm.csv', [undecodable(i % 3 === 0 ? 0xfc : 0xe9, 40 * i)]);
    tally.rejected('crm.csv', ['email: is not a valid email address']);
    expect(tally.note('crm.csv', 60)).toBe(
      '30 of 60 rows hold bytes that are not valid UTF-8; they look like Windows-1252, as spreadsheets and CRMs on Windows write "é" (0xE9), "ü" (0xFC): ' +
        'read the file with --encoding windows-1252',
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

  it('names UTF-16LE for a file that starts with its byte order mark, and UTF-16BE for its own', () => {
    const tally = createEncodingTally('utf-8');
    tally.rejected('wide.ndjson', [`line: ${undecodableMessage({ index: 0, value: 0xff, offset: 0 })}`]);
    expect(tally.note('wide.ndjson', 40)).toMatch(/^1 of 40 rows hold bytes that are not valid UTF-8, and the file starts with FF FE, the mark of UTF-16LE: read it with --encoding utf-16le$/);
    expect(encodingHint(`column 1: ${undecodableMessage({ index: 0, value: 0xff, offset: 0 })}`)).toMatch(/UTF-16LE.*--encoding utf-16le/);
    // FE FF is UTF-16BE's mark, which --encoding utf-16le would read as nonsense
    const big = createEncodingTally('utf-8');
    big.rejected('mac.csv', [`line: ${undecodableMessage({ index: 0, value: 0xfe, offset: 0 })}`]);
    expect(big.note('mac.csv', 40)).toBe('1 of 40 rows hold bytes that are not valid UTF-8, and the file starts with FE FF, the mark of UTF-16BE, which no --encoding reads: save it as UTF-8');
    expect(encodingHint(`column 1: ${undecodableMessage({ index: 0, value: 0xfe, offset: 0 })}`)).toBe(
      'the file starts with FE FF, the mark of UTF-16BE, which no --encoding reads: save the file as UTF-8 (or UTF-16LE, a spreadsheet\'s "Unicode text")',
    );
    expect(encodingHint(`column 1: ${undecodableMessage({ index: 0, value: 0x92, offset: 12 })}`)).toBe(
      '0x92 is "’" in Windows-1252, as spreadsheets and CRMs on Windows write it: if that is the file\'s encoding, give --encoding windows-1252',
    );
  });

  it('tells a file of UTF-8 text to fix its odd rows, not to be read as Windows-1252, and says nothing of one stray byte there', () => {
    const tally = createEncodingTally('utf-8');
    for (let i = 0; i < 30; i += 1) tally.rejected('mixed.csv', [undecodable(0xe9, 40 * i)]);
    tally.textRead('mixed.csv', true);
    expect(tally.note('mixed.csv', 60)).toBe(
      '30 of 60 rows hold bytes that are not valid UTF-8, though the rest of its text is UTF-8: those rows were written in another encoding ' +
        '(their bytes look like Windows-1252: "é" (0xE9)); fix them in the file, as --encoding windows-1252 would misread the rest',
    );
    tally.rejected('small.csv', [undecodable(0xe9, 40)]);
    tally.textRead('small.csv', true);
    expect(tally.note('small.csv', 20)).toBeUndefined();
  });

  it('reads whether a file held UTF-8 text beyond ASCII from its bytes, CSV and NDJSON alike', async () => {
    const tmp = tempDir();
    try {
      const notesOf = async (name: string, text: string, odd: (i: number) => boolean): Promise<string[]> => {
        const file = join(tmp.dir, name);
        const lines = Array.from({ length: 20 }, (_, i) => text.replace('#', String(i)));
        // the odd rows hold "José" as Windows-1252 writes it (0xE9), the others as UTF-8 (C3 A9)
        const bytes = lines.map((line, i) => Buffer.from(`${line}\n`, odd(i) ? 'latin1' : 'utf8'));
        const header = name.endsWith('.csv') ? 'external_id,first_name\n' : '';
        writeFileSync(file, Buffer.concat([Buffer.from(header), ...bytes]));
        const events = [];
        for await (const event of planEvents({ inputs: [file] })) events.push(event);
        return events.flatMap((event) => (event.type === 'note' ? [event.note] : []));
      };
      const csv = 'u#,José';
      const ndjson = '{"external_id":"u#","first_name":"José"}';
      expect(await notesOf('stray.csv', csv, (i) => i === 7)).toEqual([]);
      expect(await notesOf('stray.ndjson', ndjson, (i) => i === 7)).toEqual([]);
      expect(await notesOf('mixed.csv', csv, (i) => i % 2 === 0)).toEqual([expect.stringMatching(/^10 of 20 rows .* the rest of its text is UTF-8: .*fix them in the file/)]);
      expect(await notesOf('mixed.ndjson', ndjson, (i) => i % 2 === 0)).toEqual([expect.stringMatching(/^10 of 20 rows .* the rest of its text is UTF-8: .*fix them in the file/)]);
      expect(await notesOf('cp1252.ndjson', ndjson, () => true)).toEqual([expect.stringMatching(/^20 of 20 rows .*: read the file with --encoding windows-1252$/)]);
    } finally {
      tmp.cleanup();
    }
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

describe('the notes of a summary', () => {
  it('gives a note the same for many files once, naming the first three and counting the others', () => {
    const summary = emptyPlanSummary();
    const note = (file: string, text: string, files?: number) => addPlanEvent(summary, { type: 'note', file, note: text, files });
    for (const file of ['a.csv', 'b.csv', 'c.csv', 'd.csv', 'e.csv']) note(file, 'is empty (no header row)');
    note('f.csv', 'another note');
    note('f.csv', 'another note');
    // a note over the files of a header: its first and how many
    note('g.csv', 'column "zip" was guessed as 3 numbers and 1 text', 4);
    note('k.csv', 'is empty (no header row)');
    expect(summary.notes).toEqual([
      'a.csv, b.csv, c.csv and 3 other files: is empty (no header row)',
      'f.csv: another note',
      'g.csv and 3 other files: column "zip" was guessed as 3 numbers and 1 text',
    ]);
  });
});
