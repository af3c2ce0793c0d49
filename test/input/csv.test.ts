import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readCsv, type CsvRecord } from '../../src/input/csv.js';
import { CSV_TEXT_AFTER_QUOTE as TEXT_AFTER_QUOTE } from '../../src/model/index.js';
import { chunksOf, collect } from './helpers.js';

const read = (text: string | Buffer, chunk = Infinity, maxRowChars?: number) =>
  collect(readCsv(chunksOf(text, chunk), 'test.csv', { maxRowChars }));

describe('readCsv', () => {
  it('gives each row the physical line it starts on, the header being line 1', async () => {
    expect(await read('id,a\nu1,1\nu2,2\n')).toEqual([
      { line: 1, cells: ['id', 'a'] },
      { line: 2, cells: ['u1', '1'] },
      { line: 3, cells: ['u2', '2'] },
    ]);
  });

  it('counts lines inside quoted cells, with LF or CRLF, and skips empty lines without losing count', async () => {
    const text = 'id,bio\r\nu1,"one\r\ntwo\r\nthree"\r\n\r\nu2,"a\nb"\nu3,x\r\n';
    const rows = await read(text);
    expect(rows.map((r) => r.line)).toEqual([1, 2, 6, 8]);
    expect(rows[1]).toEqual({ line: 2, cells: ['u1', 'one\r\ntwo\r\nthree'] });
    expect(rows[2]).toEqual({ line: 6, cells: ['u2', 'a\nb'] });
  });

  it('reads the same whatever the chunk boundaries (one byte at a time)', async () => {
    const text = '\ufeffid,bio\r\nu1,"x ""y""\r\nz"\r\nu2,plain\r\n';
    expect(await read(text, 1)).toEqual(await read(text));
    expect(await read(text, 1)).toEqual([
      { line: 1, cells: ['id', 'bio'] },
      { line: 2, cells: ['u1', 'x "y"\r\nz'] },
      { line: 4, cells: ['u2', 'plain'] },
    ]);
  });

  it('drops a UTF-8 byte order mark', async () => {
    expect((await read('\ufeffexternal_id\nu1\n'))[0]).toEqual({ line: 1, cells: ['external_id'] });
  });

  it('keeps rows of the wrong width (the mapping rejects them) and the last row without a newline', async () => {
    expect(await read('a,b\n1,2,3\n4')).toEqual([
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['1', '2', '3'] },
      { line: 3, cells: ['4'] },
    ]);
  });

  it('keeps a stray quote inside an unquoted cell as text instead of failing the rows after it', async () => {
    expect(await read('a,b\n5\'10",x\nok,y\n')).toEqual([
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['5\'10"', 'x'] },
      { line: 3, cells: ['ok', 'y'] },
    ]);
  });

  it('turns a quote left open to the end of the file into one error row at its line', async () => {
    const rows = await read('a,b\nu1,ok\nu2,"never closed\nu3,lost\n');
    expect(rows).toEqual([
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['u1', 'ok'] },
      { line: 3, error: expect.stringMatching(/^row: a quoted cell .* never closed/), text: 'u2,"never closed\nu3,lost' },
    ]);
  });

  it('names the file when the input itself fails', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('a\n1\n');
      throw new Error('disk gone');
    }
    await expect(collect(readCsv(failing(), 'users.csv'))).rejects.toThrow(/users\.csv: .*disk gone/);
  });

  it('reads a file mixing LF and CRLF line breaks, and drops the CR before a line feed from the last cell', async () => {
    expect(await read('id,a\r\nu1,1\nu2,"two"\r\nu3,3\r')).toEqual([
      { line: 1, cells: ['id', 'a'] },
      { line: 2, cells: ['u1', '1'] },
      { line: 3, cells: ['u2', 'two'] },
      { line: 4, cells: ['u3', '3'] },
    ]);
  });

  it('takes spaces between a closing quote and the comma for padding', async () => {
    expect(await read('a,b\n"x" ,"y"  \n')).toEqual([
      { line: 1, cells: ['a', 'b'] },
      { line: 2, cells: ['x', 'y'] },
    ]);
  });

  it('turns a row with text after a closing quote into an error row with its text, and reads on from the next line', async () => {
    const text = 'id,a\nu1,"ab"c,d\r\nu2,"x"\nu3,"two\nlines"z\nu4,ok\n';
    const expected = [
      { line: 1, cells: ['id', 'a'] },
      { line: 2, error: TEXT_AFTER_QUOTE, text: 'u1,"ab"c,d' },
      { line: 3, cells: ['u2', 'x'] },
      { line: 4, error: TEXT_AFTER_QUOTE, text: 'u3,"two\nlines"z' },
      { line: 6, cells: ['u4', 'ok'] },
    ];
    expect(await read(text)).toEqual(expected);
    expect(await read(text, 1)).toEqual(expected);
    expect(await read('id\n"a"b')).toEqual([
      { line: 1, cells: ['id'] },
      { line: 2, error: TEXT_AFTER_QUOTE, text: '"a"b' },
    ]);
  });

  it('stops at a row longer than the limit, naming the line it starts on', async () => {
    const text = `id,a\nu1,ok\nu2,"${'x'.repeat(300)}\nu3,more\n`;
    await expect(read(text, 7, 100)).rejects.toThrow(/^test\.csv:3: a row starting on this line is longer than 100 characters/);
    expect(await read(text, 7, 1000)).toEqual([
      { line: 1, cells: ['id', 'a'] },
      { line: 2, cells: ['u1', 'ok'] },
      { line: 3, error: expect.stringMatching(/never closed/), text: expect.stringMatching(/^u2,"x{300}\nu3,more$/) },
    ]);
    // however the text comes in, a row still open past the limit stops the reading
    for (let length = 1001; length < 2100; length += 97) {
      await expect(read(`id\n"${'x'.repeat(length)}`, 64, 1000)).rejects.toThrow(/^test\.csv:2: /);
    }
  });

  it('reads a last row that ends without a line feed after a quote, spaces or CR', async () => {
    expect(await read('id,a\nu1,"A"  ')).toEqual([
      { line: 1, cells: ['id', 'a'] },
      { line: 2, cells: ['u1', 'A'] },
    ]);
    expect(await read('id,a\nu1,"x"\r')).toEqual([
      { line: 1, cells: ['id', 'a'] },
      { line: 2, cells: ['u1', 'x'] },
    ]);
  });

  it('ends a row with a bad quote where its quoted cells end, so no row is made of the text inside them', async () => {
    const text = 'external_id,first_name,notes\nu1,"Ann "Nan"","call back,\nu9,then,email"\nu2,Bob,ok\n';
    const expected = [
      { line: 1, cells: ['external_id', 'first_name', 'notes'] },
      { line: 2, error: TEXT_AFTER_QUOTE, text: 'u1,"Ann "Nan"","call back,\nu9,then,email"' },
      { line: 4, cells: ['u2', 'Bob', 'ok'] },
    ];
    expect(await read(text)).toEqual(expected);
    expect(await read(text, 3)).toEqual(expected);
  });
});

/** A cell's text: commas, quotes, CR, LF and characters of two and four UTF-8 bytes among letters. */
const cellText = fc.array(fc.constantFrom('a', 'b', ' ', ',', '"', '\n', '\r', '\r\n', 'é', '😀'), { maxLength: 6 }).map((parts) => parts.join(''));

/** A cell as written: quoted when it must be (or at random), with each quote doubled. */
const cell = fc.record({ text: cellText, quoted: fc.boolean() }).map(({ text, quoted }) => {
  const mustQuote = /[,\r\n]/.test(text) || text.startsWith('"');
  return { text, written: mustQuote || quoted ? `"${text.replaceAll('"', '""')}"` : text };
});

const row = fc.record({
  cells: fc.array(cell, { minLength: 1, maxLength: 4 }),
  /** What ends it: a line break, or a line break and empty lines after it. */
  breaks: fc.array(fc.constantFrom('\n', '\r\n'), { minLength: 1, maxLength: 3 }),
  /** A row with a bad quote, written as `"ab"c`, in place of one of its cells. */
  malformed: fc.option(fc.nat(), { nil: undefined }),
});

const file = fc.record({
  bom: fc.boolean(),
  rows: fc.array(row, { minLength: 1, maxLength: 12 }),
  lastBreak: fc.boolean(),
  chunk: fc.integer({ min: 1, max: 64 }),
});

describe('readCsv on generated files', () => {
  it('reads back every row written, at its line, whatever the chunk boundaries', async () => {
    await fc.assert(
      fc.asyncProperty(file, async ({ bom, rows, lastBreak, chunk }) => {
        let text = bom ? '\ufeff' : '';
        let line = 1;
        const expected: CsvRecord[] = [];
        rows.forEach((r, i) => {
          const cells = r.cells.map((c) => c.text);
          let written = r.cells.map((c) => c.written);
          // a CR ending the last cell is taken for part of the line break: the model leaves it out
          if (cells.at(-1)!.endsWith('\r')) {
            cells[cells.length - 1] += 'a';
            written[written.length - 1] = `"${cells.at(-1)!.replaceAll('"', '""')}"`;
          }
          if (r.malformed !== undefined) written = written.map((w, j) => (j === r.malformed! % written.length ? '"ab"c' : w));
          const rowText = written.join(',');
          if (r.malformed !== undefined) expected.push({ line, error: TEXT_AFTER_QUOTE, text: rowText });
          // a row of one empty cell is an empty line
          else if (cells.length > 1 || cells[0] !== '') expected.push({ line, cells });
          const breaks = i === rows.length - 1 && !lastBreak ? [] : r.breaks;
          text += rowText + breaks.join('');
          line += rowText.split('\n').length - 1 + breaks.length;
        });
        expect(await read(text, chunk)).toEqual(expected);
      }),
      { numRuns: 1_000 },
    );
  });

  it('marks a row holding bytes that are not valid UTF-8: the first such cell, the byte and its offset in the file; U+FFFD in its cells', async () => {
    const bytes = Buffer.concat([Buffer.from('external_id,city\nu1,Paris\nu'), Buffer.from([0xff]), Buffer.from('2,Z'), Buffer.from([0xfc]), Buffer.from('rich\nu3,ok\n')]);
    for (const chunk of [1, 4, Infinity]) {
      const records = await read(bytes, chunk);
      expect(records).toEqual([
        { line: 1, cells: ['external_id', 'city'] },
        { line: 2, cells: ['u1', 'Paris'] },
        {
          line: 3,
          cells: ['u\uFFFD2', 'Z\uFFFDrich'],
          undecodable: { cell: 0, message: expect.stringMatching(/^byte 0xFF at byte offset 27 of the file is not valid UTF-8/) },
        },
        { line: 4, cells: ['u3', 'ok'] },
      ]);
    }
  });

  it('reads latin1, windows-1252 and utf-16le files as the encoding says', async () => {
    const text = 'external_id,city\nu1,Zürich\n';
    const single = Buffer.from([...Buffer.from('external_id,note\nu1,'), 0x80, 0xe9, ...Buffer.from('\n')]);
    const cells = async (bytes: Buffer, encoding: 'latin1' | 'windows-1252' | 'utf-16le') =>
      (await collect(readCsv(chunksOf(bytes, 3), 'test.csv', { encoding }))).map((r) => ('cells' in r ? r.cells : r));
    expect(await cells(single, 'latin1')).toEqual([['external_id', 'note'], ['u1', '\u0080é']]);
    expect(await cells(single, 'windows-1252')).toEqual([['external_id', 'note'], ['u1', '€é']]);
    expect(await cells(Buffer.from(`\ufeff${text}`, 'utf16le'), 'utf-16le')).toEqual([['external_id', 'city'], ['u1', 'Zürich']]);
  });
});
