import { describe, expect, it } from 'vitest';
import { readCsv } from '../../src/input/csv.js';
import { chunksOf, collect } from './helpers.js';

const read = (text: string | Buffer, chunk = Infinity) => collect(readCsv(chunksOf(text, chunk), 'test.csv'));

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
      { line: 3, error: expect.stringMatching(/^row: a quoted cell .* never closed/) },
    ]);
  });

  it('names the file when the input itself fails', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('a\n1\n');
      throw new Error('disk gone');
    }
    await expect(collect(readCsv(failing(), 'users.csv'))).rejects.toThrow(/users\.csv: .*disk gone/);
  });
});
