// A chunk's rejects cross from the planning thread as one batch of their lines: the lines are what
// the rejects file held when each record was written alone, in NDJSON and CSV, on a resume that
// leaves out what the file holds, and in the journal when the file cannot be synced.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RejectRecord } from '../../src/model/request.js';
import { rejectsLedger, rejectsWriter } from '../../src/upload/outputs.js';
import { batchKey, batchRecord, batchSize, createRejectBatcher, type RejectBatch } from '../../src/upload/reject-batch.js';
import { addPlanEvent, emptyPlanSummary, summarizePlan } from '../../src/upload/summary.js';
import { tempDir } from '../helpers/cli.js';

let tmp: { dir: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir();
});
afterAll(() => tmp.cleanup());

const records: RejectRecord[] = [
  { file: 'a.csv', line: 2, kind: 'attributes', row: { external_id: 'u1', email: 'bad "quoted"\nliné ✓' }, errors: ['email: is not a valid email address, got "bad"'] },
  { file: 'a.csv', line: 3, kind: 'attributes', column: 'phone', value: '123', row: { external_id: 'u2', phone: '123' }, errors: ['phone: bad'] },
  { file: 'b.ndjson', line: 1, item: 2, kind: 'events', row: { events: [{ name: 'x', n: 1.5, ok: true, none: null }] }, errors: ['events[2].time: missing', 'events[2].name: bad'] },
  { file: 'a.csv', line: 9, kind: 'unknown', row: 'not,a,row,"', errors: ['row: text after a closing quote'] },
];
const droppedAt = new Set([1]);

function batchOf(list: readonly RejectRecord[], dropped: ReadonlySet<number> = droppedAt): RejectBatch {
  const batcher = createRejectBatcher();
  list.forEach((record, i) => expect(batcher.add(record, dropped.has(i))).toBe(true));
  return batcher.take()!;
}

describe('a batch of rejects', () => {
  it('holds each record as its JSON line, known by file, line, item and column', () => {
    const batch = batchOf(records);
    expect(batchSize(batch)).toBe(4);
    expect(new TextDecoder().decode(batch.bytes)).toBe(records.map((record) => `${JSON.stringify(record)}\n`).join(''));
    expect(batch.bytes.byteOffset).toBe(0);
    expect(batch.bytes.buffer.byteLength).toBe(batch.bytes.byteLength);
    expect(records.map((_, i) => batchRecord(batch, i))).toEqual(records);
    expect(batchKey(batch, 1)).toEqual({ file: 'a.csv', line: 3, column: 'phone' });
    expect(batchKey(batch, 2)).toEqual({ file: 'b.ndjson', line: 1, item: 2 });
    expect(Array.from(batch.dropped)).toEqual([0, 1, 0, 0]);
    expect(batch.files).toEqual(['a.csv', 'b.ndjson']);
    expect(createRejectBatcher().take()).toBeUndefined();
  });

  it('refuses a record JSON would change (typed values, a property left undefined): it crosses as it is', () => {
    const batcher = createRejectBatcher();
    const base = { file: 'p.parquet', line: 4, kind: 'attributes' as const, errors: ['x: bad'] };
    expect(batcher.add({ ...base, row: { id: 12n } }, false)).toBe(false);
    expect(batcher.add({ ...base, row: { bytes: new Uint8Array([1]) } }, false)).toBe(false);
    expect(batcher.add({ ...base, row: { when: new Date(0) } }, false)).toBe(false);
    expect(batcher.add({ ...base, row: { n: Number.NaN } }, false)).toBe(false);
    expect(batcher.add({ ...base, row: { n: -0 } }, false)).toBe(false);
    expect(batcher.add({ ...base, row: { nested: { list: [1, -0] } } }, false)).toBe(false);
    expect(batcher.add({ ...base, item: undefined, row: {} }, false)).toBe(false);
    expect(batcher.take()).toBeUndefined();
  });

  it('counts in the summary as the same rejects one at a time do, reasons past the bound of 100 included', () => {
    const many: RejectRecord[] = Array.from({ length: 260 }, (_, i) => ({ file: 'a.csv', line: i + 2, kind: 'attributes', row: {}, errors: [`col_${i % 130}: bad`, `col_${i % 130}: bad, got "${i}"`] }));
    const one = summarizePlan(many.map((record) => ({ type: 'reject', record })));
    const halves = [batchOf(many.slice(0, 77), new Set()), batchOf(many.slice(77), new Set())];
    let batched = emptyPlanSummary();
    for (const batch of halves) batched = addPlanEvent(batched, { type: 'rejects', batch });
    expect(batched).toEqual(one);
    expect(Object.keys(one.rejectReasons)).toContain('(other reasons)');
  });
});

describe('a batch written to the rejects file', () => {
  const journaled = true;

  it('is the file one record at a time makes, in NDJSON and in CSV', async () => {
    const input = join(tmp.dir, 'in.csv');
    writeFileSync(input, 'external_id,email,phone\nu1,x,\n');
    const csvRecords = records.slice(0, 2);
    for (const format of ['ndjson', 'csv'] as const) {
      const [alone, batched] = ['alone', 'batched'].map((name) => join(tmp.dir, `${name}.rejects.${format}`));
      const one = rejectsWriter(alone, false, { rejectsFormat: format, inputs: [input] });
      const list = format === 'csv' ? csvRecords : records;
      for (const record of list) await rejectsLedger(one, new Set(), journaled).write(record);
      await one.close();
      const many = rejectsWriter(batched, false, { rejectsFormat: format, inputs: [input] });
      await rejectsLedger(many, new Set(), journaled).writeBatch(batchOf(list));
      expect(many.count).toBe(list.length);
      await many.close();
      expect(readFileSync(batched, 'utf8')).toBe(readFileSync(alone, 'utf8'));
    }
  });

  it('leaves out on a resume what the file holds, and gives the journal its records when the file cannot be synced', async () => {
    const path = join(tmp.dir, 'resumed.rejects.ndjson');
    const file = rejectsWriter(path, false, { inputs: [] });
    const held = new Set([`3\u0000\u0000phone\u0000a.csv`]);
    const ledger = rejectsLedger(file, held, journaled);
    await ledger.writeBatch(batchOf(records));
    expect(ledger.held).toBe(1);
    await file.close();
    const lines = readFileSync(path, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(lines).toEqual([records[0], records[2], records[3]]);

    const failing = { ...rejectsWriter(join(tmp.dir, 'never.ndjson'), false, { inputs: [] }), sync: () => Promise.reject(new Error('full')), writeBatch: async () => undefined };
    const unsynced = rejectsLedger(failing, new Set(), journaled);
    await unsynced.writeBatch(batchOf(records));
    expect(await unsynced.settle()).toEqual(records);
  });
});
