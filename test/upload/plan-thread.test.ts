// A plan made in a worker thread (what `track upload` sends from) must be the plan made in this
// thread: the same request bodies, the same origins with the same rows, the same rejects and
// summary, the same rows skipped on resume, and the same input errors.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import type { PlannedRequest, RejectRecord } from '../../src/model/plan.js';
import { planInWorker } from '../../src/plan-thread.js';
import { planRequests, type Plan, type PlanOptions } from '../../src/plan.js';

const dir = mkdtempSync(join(tmpdir(), 'track-plan-thread-'));
const fixture = (name: string): string => join(import.meta.dirname, '../../fixtures', name);
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

interface Outcome {
  requests: Array<{ seq: number; body: unknown; json: unknown; origins: unknown; userKeys: number[] }>;
  rejects: RejectRecord[];
  lineItems: Array<[string, number, number]>;
  summary: Plan['summary'];
}

async function run(make: (options: PlanOptions) => Plan, options: PlanOptions): Promise<Outcome> {
  const rejects: RejectRecord[] = [];
  const lineItems: Array<[string, number, number]> = [];
  const plan = make({ ...options, onReject: (r) => void rejects.push(r), onLineItems: (...a) => void lineItems.push(a) });
  const requests: Outcome['requests'] = [];
  for await (const request of plan.requests as AsyncIterable<PlannedRequest>) {
    requests.push({
      seq: request.seq,
      body: request.body,
      // the worker's requests carry their text; it must be the body's
      json: request.json === undefined ? request.body : JSON.parse(new TextDecoder().decode(request.json)),
      // through JSON, as the rejects file writes them: rows built on demand are rows
      origins: JSON.parse(JSON.stringify(request.origins)),
      userKeys: Array.from(request.userKeys),
    });
  }
  return { requests, rejects, lineItems, summary: plan.summary };
}

const inThread = (options: PlanOptions): Plan => planRequests(options);
const inWorker = (options: PlanOptions): Plan => planInWorker(options);

describe('a plan made in a worker thread', () => {
  it('is the plan made in this thread, for every fixture together', async () => {
    const inputs = [
      'attributes.csv',
      'events.csv',
      'purchases.csv',
      'bad-rows.csv',
      'bad-lines.ndjson',
      'mixed.ndjson',
      'multiline-crlf.csv',
      'inference.csv',
      'annotations.csv',
      'empty-and-null.csv',
      'identifiers.csv',
      'warnings.csv',
    ].map(fixture);
    const here = await run(inThread, { inputs });
    const there = await run(inWorker, { inputs });
    expect(here.requests.length).toBeGreaterThan(1);
    expect(here.rejects.length).toBeGreaterThan(5);
    expect(there.requests).toEqual(here.requests);
    expect(there.rejects).toEqual(here.rejects);
    expect(there.lineItems).toEqual(here.lineItems);
    expect(there.summary).toEqual(here.summary);
    for (const request of there.requests) expect(request.json).toEqual(request.body);
  });

  it('gives a CSV row back cell for cell: quotes, line breaks, commas and characters beyond ASCII', async () => {
    const csv = file('cells.csv', 'external_id,note,city\r\nu1,"two\nlines, and ""quotes""",Zürich\r\nu2,😀 emoji,\r\nu3,,São Paulo\r\n');
    const here = await run(inThread, { inputs: [csv] });
    const there = await run(inWorker, { inputs: [csv] });
    expect(there.requests).toEqual(here.requests);
    const rows = (there.requests[0].origins as { attributes: Array<{ line: number; row: unknown }> }).attributes;
    expect(rows).toEqual([
      { file: csv, line: 2, row: { external_id: 'u1', note: 'two\nlines, and "quotes"', city: 'Zürich' } },
      { file: csv, line: 4, row: { external_id: 'u2', note: '😀 emoji', city: '' } },
      { file: csv, line: 5, row: { external_id: 'u3', note: '', city: 'São Paulo' } },
    ]);
  });

  it('is the same plan for a file of 1,500 columns (rows mapped by the loop, cells kept as one text), rows given back whole', async () => {
    const header = ['external_id', ...Array.from({ length: 1499 }, (_, i) => `attr_${i}`)];
    const row = (r: number) => header.map((_, i) => (i === 0 ? `u${r}` : i === 7 && r === 3 ? 'x:inc' : i % 5 === 0 ? '' : `${(r * i) % 97}${i % 2 ? 'é' : ''}`));
    const text = [header.join(','), ...Array.from({ length: 30 }, (_, r) => row(r).join(','))].join('\n');
    const csv = file('wide.csv', text.replace(',x:inc,', ',"a,b",'));
    const here = await run(inThread, { inputs: [csv], maxBodyBytes: 60_000 });
    const there = await run(inWorker, { inputs: [csv], maxBodyBytes: 60_000 });
    expect(here.requests.length).toBeGreaterThan(3);
    expect(there.requests).toEqual(here.requests);
    expect(there.rejects).toEqual(here.rejects);
    expect(there.summary).toEqual(here.summary);
    const origins = there.requests.flatMap((r) => (r.origins as { attributes: Array<{ line: number; row: Record<string, string> }> }).attributes);
    expect(origins).toHaveLength(30);
    expect(origins[5].row).toEqual(Object.fromEntries(header.map((key, i) => [key, row(5)[i]])));
  });

  it('rejects, in both, what would change without a word, and goes on: bad bytes, deep lines, numbers, NUL in identifiers', async () => {
    const deep = (depth: number) => `{"external_id":"d","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const ndjsonText = Buffer.concat([
      Buffer.from(`{"external_id":"u1"}\n${deep(100_000)}\n${deep(60)}\n{"events":[${deep(5_000)}]}\n`),
      Buffer.from('{"external_id":"u'),
      Buffer.from([0xff]),
      Buffer.from('2"}\n{"external_id":"u3","properties":{"big":12345678901234567890}}\n{"external_id":"u4","t":1e-400}\n'),
      Buffer.from('{"external_id":"u5\\u0000x"}\n{"user_alias":{"alias_name":"a\\u0000","alias_label":"l"}}\n{"external_id":"u6","n":1e400}\n{"external_id":"u7"}\n'),
    ]);
    const lines = join(dir, 'altered.ndjson');
    writeFileSync(lines, ndjsonText);
    const csv = join(dir, 'altered.csv');
    writeFileSync(csv, Buffer.concat([Buffer.from('external_id,city\nu1,Paris\nu'), Buffer.from([0xff]), Buffer.from('2,x\nu3,ok\n')]));
    const here = await run(inThread, { inputs: [lines, csv] });
    const there = await run(inWorker, { inputs: [lines, csv] });
    expect(there.rejects).toEqual(here.rejects);
    expect(there.requests).toEqual(here.requests);
    expect(there.summary).toEqual(here.summary);
    expect(here.rejects.map((r) => [r.file === csv ? 'csv' : 'ndjson', r.line, r.errors[0]])).toEqual([
      ['ndjson', 2, expect.stringMatching(/^line: nests deeper than 128 levels/)],
      ['ndjson', 3, expect.stringMatching(/^x: nests deeper than 32 levels/)],
      ['ndjson', 4, expect.stringMatching(/^line: nests deeper than 128 levels/)],
      ['ndjson', 5, expect.stringMatching(/^line: byte 0xFF at byte offset 210246 of the file is not valid UTF-8/)],
      ['ndjson', 6, expect.stringMatching(/^properties\.big: 12345678901234567890 is a whole number/)],
      ['ndjson', 7, expect.stringMatching(/^t: 1e-400 is too small/)],
      ['ndjson', 8, 'external_id: must not hold a NUL character (U+0000)'],
      ['ndjson', 9, 'user_alias.alias_name: must not hold a NUL character (U+0000)'],
      ['ndjson', 10, expect.stringMatching(/^n: 1e400 is too large/)],
      ['csv', 3, expect.stringMatching(/^external_id: byte 0xFF at byte offset 27 of the file/)],
    ]);
    // every reject can be written as a line of the rejects file
    for (const record of there.rejects) expect(JSON.parse(JSON.stringify(record))).toEqual(record);
    expect(there.summary.items.attributes).toBe(4); // u1, u7, and u1 and u3 of the CSV file
  });

  it('reads files in the encoding given, in both', async () => {
    const latin1 = join(dir, 'latin1.csv');
    writeFileSync(latin1, Buffer.from([...Buffer.from('external_id,note\nu1,'), 0x80, 0xe9, ...Buffer.from('\n')]));
    for (const [encoding, note] of [['latin1', '\u0080é'], ['windows-1252', '€é']] as const) {
      const here = await run(inThread, { inputs: [latin1], encoding });
      const there = await run(inWorker, { inputs: [latin1], encoding });
      expect(there.requests).toEqual(here.requests);
      expect(here.requests[0].body).toEqual({ attributes: [{ external_id: 'u1', note }] });
    }
  });

  it('gives a row back whole when the first cell of its request begins with U+FEFF', async () => {
    // past the file's start the character is a cell's text: decoding the request's cells must keep it
    const csv = file('bom-cell.csv', 'note,external_id,city\n\uFEFFjoined,u1,Zürich\nplain,u2,São Paulo\n');
    const here = await run(inThread, { inputs: [csv] });
    const there = await run(inWorker, { inputs: [csv] });
    expect(there.requests).toEqual(here.requests);
    expect((there.requests[0].origins as { attributes: Array<{ row: unknown }> }).attributes.map((o) => o.row)).toEqual([
      { note: '\uFEFFjoined', external_id: 'u1', city: 'Zürich' },
      { note: 'plain', external_id: 'u2', city: 'São Paulo' },
    ]);
  });

  it('leaves out the rows an earlier run settled, given as line ranges', async () => {
    const csv = file('skip.csv', `external_id\n${Array.from({ length: 20 }, (_, i) => `u${i}`).join('\n')}\n`);
    const ranges: Array<[number, number]> = [[2, 5], [9, 9], [15, 21]];
    const skipRow = (_: string, line: number): boolean => ranges.some(([a, b]) => line >= a && line <= b);
    const here = await run(inThread, { inputs: [csv], skipRow });
    const there = await run((o) => planInWorker({ ...o, skip: new Map([[csv, ranges]]) }), { inputs: [csv] });
    expect(there.requests).toEqual(here.requests);
    expect(there.summary).toEqual(here.summary);
    expect(there.summary.skipped).toBe(4 + 1 + 7);
  });

  it('stops reading when the sender stops taking requests', async () => {
    const csv = file('many.csv', `external_id\n${Array.from({ length: 20_000 }, (_, i) => `u${i}`).join('\n')}\n`);
    const plan = planInWorker({ inputs: [csv] });
    let taken = 0;
    for await (const _ of plan.requests) if ((taken += 1) === 3) break;
    expect(taken).toBe(3);
    expect(plan.summary.requests).toBe(3);
    expect(plan.summary.rows).toBeLessThan(20_000);
  });

  it('hands on every rejected row of a file of mostly bad rows, in order, and counts what it handed on', async () => {
    const rows = Array.from({ length: 30_000 }, (_, i) => (i % 100 === 0 ? `u${i},u${i}@example.com` : `u${i},not-an-email`));
    const csv = file('mostly-bad.csv', `external_id,email\n${rows.join('\n')}\n`);
    const here = await run(inThread, { inputs: [csv] });
    const there = await run(inWorker, { inputs: [csv] });
    expect(there.rejects).toHaveLength(29_700);
    expect(there.rejects).toEqual(here.rejects);
    expect(there.summary).toEqual(here.summary);
  });

  it('stops at once when told to, counting only the rejected rows it handed on', async () => {
    const rows = Array.from({ length: 50_000 }, (_, i) => `u${i},not-an-email`);
    const csv = file('all-bad.csv', `external_id,email\n${rows.join('\n')}\n`);
    const stop = new AbortController();
    let handed = 0;
    const plan = planInWorker({
      inputs: [csv],
      stopSignal: stop.signal,
      onReject: async () => {
        handed += 1;
        if (handed === 500) stop.abort();
        await new Promise((resolve) => setImmediate(resolve));
      },
    });
    for await (const _ of plan.requests) expect.unreachable('no row is valid');
    expect(handed).toBe(500);
    expect(plan.summary.rejected).toBe(500);
    expect(plan.summary.rows).toBeLessThan(50_000);
  });

  it('throws the input error the thread met, with its file and line, and the summary names the file', async () => {
    const csv = file('bad-header.csv', 'external_id,a:nonsense\nu1,x\n');
    const here = await run(inThread, { inputs: [csv] }).catch((e: unknown) => e);
    const there = await run(inWorker, { inputs: [csv] }).catch((e: unknown) => e);
    expect(here).toBeInstanceOf(InputError);
    expect(there).toBeInstanceOf(InputError);
    expect((there as InputError).message).toBe((here as InputError).message);
    expect((there as InputError).file).toBe(csv);
    expect((there as InputError).line).toBe(1);
    const plan = planInWorker({ inputs: [csv] });
    await expect(plan.requests[Symbol.asyncIterator]().next()).rejects.toThrow(InputError);
    expect(plan.summary.files).toEqual([{ file: csv, format: 'csv', rows: 0 }]);
  });
});
