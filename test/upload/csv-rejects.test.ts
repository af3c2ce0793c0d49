// --rejects-format csv written and read again by a resumed run: a dropped field's row is known by
// its column as well as its file and line, so it is not written twice.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RejectRecord } from '../../src/model/request.js';
import { checkRejectsHeader } from '../../src/upload/csv-rejects.js';
import { heldNote, rejectKey, rejectsSoFar, rejectsWriter } from '../../src/upload/outputs.js';
import { tempDir } from '../helpers/cli.js';

let tmp: { dir: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir();
});
afterAll(() => tmp.cleanup());

describe('CSV rejects on resume', () => {
  it('knows the rows and dropped fields it holds by file, line and column', async () => {
    const input = join(tmp.dir, 'in.csv');
    writeFileSync(input, 'external_id,phone,dob\nu1,123,1990-13-01\nu2,x,\n');
    const path = join(tmp.dir, 'in.rejects.csv');
    const records: RejectRecord[] = [
      { file: 'in.csv', line: 2, kind: 'attributes', column: 'phone', value: '123', row: { external_id: 'u1', phone: '123' }, errors: ['phone: bad'] },
      { file: 'in.csv', line: 2, kind: 'attributes', column: 'dob', value: '1990-13-01', row: { external_id: 'u1', dob: '1990-13-01' }, errors: ['dob: bad'] },
      { file: 'in.csv', line: 3, kind: 'attributes', row: { external_id: 'u2', phone: 'x', dob: '' }, errors: ['phone: bad'] },
    ];
    const writer = rejectsWriter(path, false, { rejectsFormat: 'csv', inputs: [input] });
    for (const record of records) await writer.write(record);
    await writer.close();
    const held = await rejectsSoFar(path, 'csv');
    expect(records.map((record) => held.has(rejectKey(record)))).toEqual([true, true, true]);
    expect(held.size).toBe(3);
    expect(heldNote(2, 'in.rejects.csv')).toEqual([
      '2 of the rejected rows and dropped fields counted here were in in.rejects.csv already, from the run this one resumes: not written again',
    ]);
  });

  it('takes an earlier file that begins with the inputs’ header and the _ columns, or with no whole line yet; refuses any other', async () => {
    const input = join(tmp.dir, 'h.csv');
    writeFileSync(input, 'external_id,phone\nu1,123\n');
    const path = join(tmp.dir, 'h.rejects.csv');
    const check = () => checkRejectsHeader(path, { inputs: [input] });
    writeFileSync(path, 'external_id,phone,_file,_line,_kind,_column,_errors\nu1,123,h.csv,2,attributes,,bad\n');
    await expect(check()).resolves.toBeUndefined();
    // a column the first reject added beyond the inputs' header
    writeFileSync(path, 'external_id,phone,extra,_file,_line,_kind,_column,_errors\n');
    await expect(check()).resolves.toBeUndefined();
    // a first line cut short by a kill is cut off when the file is resumed
    writeFileSync(path, 'external_id,pho');
    await expect(check()).resolves.toBeUndefined();
    // a line without its end that is not the beginning of that header is another file: it was cut off unread
    for (const other of ['email,plan', 'garbage-no-newline', 'external_id,email']) {
      writeFileSync(path, other);
      await expect(check(), other).rejects.toThrow(`the rejects file ${path} does not begin with the header of these inputs (its one line, without an end, is not the beginning of it)`);
    }
    writeFileSync(path, 'email,plan\nx,y\n');
    await expect(check()).rejects.toThrow(`the rejects file ${path} does not begin with the header of these inputs (it lacks "external_id", "phone", "_file", "_line", "_kind", and 2 more)`);
    writeFileSync(path, 'external_id,phone\n');
    await expect(check()).rejects.toThrow(/it lacks "_file", "_line", "_kind", "_column", "_errors"\)/);
  });

  it('keeps a last reject saved without its line break (an editor, a spreadsheet), and cuts off one torn by a kill', async () => {
    const ndjsonPath = join(tmp.dir, 'saved.rejects.ndjson');
    const whole = '{"file":"in.csv","line":2,"kind":"attributes","row":{"external_id":"u1"},"errors":["bad"]}';
    const last = '{"file":"in.csv","line":3,"kind":"attributes","row":{"external_id":"u2"},"errors":["bad"]}';
    for (const [text, kept] of [
      [`${whole}\n${last}`, `${whole}\n${last}\n`],
      [last, `${last}\n`],
      [`${whole}\n${last.slice(0, 40)}`, `${whole}\n`],
    ]) {
      writeFileSync(ndjsonPath, text);
      const held = await rejectsSoFar(ndjsonPath, 'ndjson');
      expect(readFileSync(ndjsonPath, 'utf8'), text).toBe(kept);
      expect(held.size).toBe(kept.trimEnd().split('\n').length);
    }
    const csvPath = join(tmp.dir, 'saved.rejects.csv');
    const header = 'external_id,phone,_file,_line,_kind,_column,_errors\n';
    for (const [text, kept] of [
      [`${header}u1,123,h.csv,2,attributes,,bad`, `${header}u1,123,h.csv,2,attributes,,bad\n`],
      [`${header}u1,123,h.csv,2,attributes,,bad\nu2,12`, `${header}u1,123,h.csv,2,attributes,,bad\n`],
      // torn after its file and line (a full disk cuts a row anywhere), or inside a quoted cell: cut off too
      [`${header}u1,123,h.csv,2,attributes,,bad\nu2,123,h.csv,3`, `${header}u1,123,h.csv,2,attributes,,bad\n`],
      [`${header}u1,123,h.csv,2,attributes,,bad\nu2,123,h.csv,3,attributes,,"bad, got ""x`, `${header}u1,123,h.csv,2,attributes,,bad\n`],
    ]) {
      writeFileSync(csvPath, text);
      const held = await rejectsSoFar(csvPath, 'csv');
      expect(readFileSync(csvPath, 'utf8'), text).toBe(kept);
      expect(held.size).toBe(1);
    }
  });
});
