// The planner's cases, run against every planner (plan.test.ts): the one in this thread and the one
// in the worker thread, so the threaded fast path cannot drift from the plain one.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { textHash } from '../../src/model/identity.js';
import type { RejectRecord } from '../../src/model/request.js';
import type { RequestToSend } from '../../src/transport/request.js';
import type { ResumeSkips } from '../../src/records/journal.js';
import type { PlanEvent, PlanOptions } from '../../src/upload/plan.js';
import { batchRecord, batchSize } from '../../src/upload/reject-batch.js';
import { summarizePlan, type PlanSummary } from '../../src/upload/summary.js';

export type Planner = (options: Omit<PlanOptions, 'stdin'>) => AsyncIterable<PlanEvent<RequestToSend>>;

const dir = mkdtempSync(join(tmpdir(), 'track-plan-'));
export const fixture = (name: string): string => join(import.meta.dirname, '../../fixtures', name);
export function file(name: string, text: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

export interface Outcome {
  requests: Array<{ seq: number; body: unknown; origins: unknown; userKeys: number[] }>;
  rejects: RejectRecord[];
  lineItems: Array<[string, number, number]>;
  summary: PlanSummary;
}

const text = new TextDecoder();

/** What a list of a plan's events holds, with its requests as plain data. */
export function outcomeOf(events: ReadonlyArray<PlanEvent<RequestToSend>>): Outcome {
  const requests = events.flatMap((e) => (e.type === 'request' ? [e.request] : []));
  return {
    requests: requests.map((request) => ({
      seq: request.seq,
      // a request from the worker carries its JSON text; it must be the body's
      body: request.body instanceof Uint8Array ? JSON.parse(text.decode(request.body)) : request.body,
      // through JSON, as the rejects file writes them: rows built on demand are rows
      origins: JSON.parse(JSON.stringify(request.origins)),
      userKeys: Array.from(request.userKeys),
    })),
    // a batch of rejects (the worker's) read back from its lines, as the rejects file holds them
    rejects: events.flatMap((e) =>
      e.type === 'reject' ? [e.record] : e.type === 'rejects' ? Array.from({ length: batchSize(e.batch) }, (_, i) => i).filter((i) => e.batch.dropped[i] === 0).map((i) => batchRecord(e.batch, i)) : [],
    ),
    lineItems: events.flatMap((e): Array<[string, number, number]> => (e.type === 'line-items' ? [[e.file, e.line, e.items]] : [])),
    summary: summarizePlan(events),
  };
}

/** Every event of a plan. */
export async function run(plan: Planner, options: Omit<PlanOptions, 'stdin'>): Promise<Outcome> {
  const events: Array<PlanEvent<RequestToSend>> = [];
  for await (const event of plan(options)) events.push(event);
  return outcomeOf(events);
}

const origins = (request: Outcome['requests'][number], kind = 'attributes'): Array<{ line: number; item?: number; row: never }> =>
  (request.origins as Record<string, Array<{ line: number; item?: number; row: never }>>)[kind];

const skipsOf = (rows: Array<[string, Array<[number, number]>]>, items: ResumeSkips['items'] = new Map()): ResumeSkips => ({ rows: new Map(rows), items });

export function planCases(name: string, plan: Planner): void {
  describe(`a plan ${name}`, () => {
    it('fills seq, userKeys and origins (file, line, row) for every item', async () => {
      const csv = file('a.csv', 'external_id,email,plan\nu1,u1@example.com,pro\n,u2@example.com,free\n');
      const { requests, summary } = await run(plan, { inputs: [csv] });
      expect(requests).toHaveLength(1);
      expect(requests[0].seq).toBe(0);
      expect(requests[0].userKeys).toEqual([textHash('external_id:u1'), textHash('email:u2@example.com')]);
      expect(requests[0].origins).toEqual({
        attributes: [
          { file: csv, line: 2, row: { external_id: 'u1', email: 'u1@example.com', plan: 'pro' } },
          { file: csv, line: 3, row: { external_id: '', email: 'u2@example.com', plan: 'free' } },
        ],
        events: [],
        purchases: [],
      });
      expect(summary).toMatchObject({ rows: 2, items: { attributes: 2, events: 0, purchases: 0 }, requests: 1 });
      expect(summary.files).toEqual([{ file: csv, format: 'csv', kind: 'attributes', rows: 2 }]);
    });

    it('reads a header many files share once, and notes the types of its columns over all of its files, once', async () => {
      const header = 'external_id,zip\n';
      const mixed = file('mixed-zip.csv', `${header}u1,12\nu2,x12\n`);
      const numbers = file('number-zip.csv', `${header}u3,12345\nu4,23456\n`);
      const again = file('mixed-zip-again.csv', `${header}u5,34\nu6,y34\n`);
      const { summary, requests } = await run(plan, { inputs: [mixed, numbers, again] });
      const zipNotes = summary.notes.filter((note) => note.includes('"zip"'));
      // one note, naming the first file and counting every cell of the three
      expect(zipNotes).toHaveLength(1);
      expect(zipNotes[0]).toMatch(/^.*mixed-zip\.csv and 2 other files: column "zip" was guessed as 4 numbers and 2 texts, so profiles will hold mixed types/);
      expect(requests.flatMap((r) => origins(r).map((o) => o.row))).toEqual([
        { external_id: 'u1', zip: '12' },
        { external_id: 'u2', zip: 'x12' },
        { external_id: 'u3', zip: '12345' },
        { external_id: 'u4', zip: '23456' },
        { external_id: 'u5', zip: '34' },
        { external_id: 'u6', zip: 'y34' },
      ]);
    });

    it('notes a column whose files each hold one type, and the run two, naming the file its second type was found in', async () => {
      const header = 'external_id,zip,plan\n';
      const numbers = file('only-numbers.csv', `${header}u1,12345,1\n`);
      const moreNumbers = file('more-numbers.csv', `${header}u2,23456,free\n`);
      const texts = file('only-texts.csv', `${header}u3,x12,pro\nu4,y34,pro\n`);
      const { summary } = await run(plan, { inputs: [numbers, moreNumbers, texts] });
      // the file to look in for the texts among the numbers, not the first of the header's files
      expect(summary.notes.filter((note) => note.includes('"zip"'))).toEqual([
        expect.stringMatching(/only-texts\.csv and 2 other files: column "zip" was guessed as 2 numbers and 2 texts, so profiles will hold mixed types/),
      ]);
      expect(summary.notes.filter((note) => note.includes('"plan"'))).toEqual([expect.stringMatching(/more-numbers\.csv and 2 other files: column "plan" was guessed as 1 number and 3 texts/)]);
    });

    it('notes the types its files counted when a later file breaks off and stops the plan', async () => {
      const header = 'external_id,zip\n';
      const mixed = file('before-break.csv', `${header}u1,12\nu2,x12\n`);
      const packed = gzipSync(`${header}${Array.from({ length: 2000 }, (_, i) => `u${i},${i}`).join('\n')}\n`);
      const cut = file('cut-short.csv.gz', packed.subarray(0, packed.length >> 1));
      const events: Array<PlanEvent<RequestToSend>> = [];
      const error = await (async () => {
        for await (const event of plan({ inputs: [mixed, cut] })) events.push(event);
      })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect(outcomeOf(events).summary.notes.filter((note) => note.includes('"zip"'))).toEqual([
        expect.stringMatching(/before-break\.csv and 1 other file: column "zip" was guessed as [\d,]+ numbers and 1 text/),
      ]);
    });

    it('notes the columns of each header apart, and the same note on many files once', async () => {
      const first = file('header-a.csv', 'external_id,zip\nu1,12\nu2,x1\n');
      const second = file('header-b.csv', 'external_id,zip,plan\nu3,34,free\nu4,y1,pro\nu5,56,free\n');
      const empty = file('empty-a.csv', '');
      const alsoEmpty = file('empty-b.csv', '');
      const { summary } = await run(plan, { inputs: [first, empty, second, alsoEmpty] });
      expect(summary.notes.filter((note) => note.includes('"zip"'))).toEqual([
        expect.stringMatching(/header-a\.csv: column "zip" was guessed as 1 number and 1 text/),
        expect.stringMatching(/header-b\.csv: column "zip" was guessed as 2 numbers and 1 text/),
      ]);
      expect(summary.notes.filter((note) => note.includes('is empty'))).toEqual([`${empty}, ${alsoEmpty}: is empty (no header row)`]);
    });

    it('leaves out the items of a RequestLine an earlier run settled, and gives the others their places', async () => {
      const ev = (n: number) => ({ external_id: 'u1', name: 'e', time: '2024-03-07T10:00:00Z', properties: { n } });
      const ndjson = file('r.ndjson', `${JSON.stringify({ events: [ev(0), { external_id: 'u1' }, ev(2), ev(3)] })}\n${JSON.stringify({ events: [] })}\n`);
      const skips = skipsOf([], new Map([[ndjson, new Map([[1, new Set([2])]])]]));
      const { requests, rejects, lineItems, summary } = await run(plan, { inputs: [ndjson], skips });
      expect(origins(requests[0], 'events').map((o) => [o.line, o.item, (o.row as { properties: { n: number } }).properties.n])).toEqual([
        [1, 0, 0],
        [1, 3, 3],
      ]);
      expect(lineItems).toEqual([[ndjson, 1, 3]]);
      expect(rejects).toMatchObject([{ line: 1, item: 1, kind: 'events' }]);
      // a line of no items is no row already delivered
      expect(summary).toMatchObject({ rows: 2, skipped: 0, skippedItems: 1 });
    });

    it('leaves out the rows an earlier run settled, given as line ranges, and counts them', async () => {
      const csv = file('b.csv', `external_id\n${Array.from({ length: 20 }, (_, i) => `u${i}`).join('\n')}\n`);
      const nd = file('b.ndjson', '{"external_id":"n1"}\n{"external_id":"n2"}\n');
      const skips = skipsOf([[csv, [[2, 5], [9, 9], [15, 21]]], [nd, [[1, 1]]]]);
      const { requests, summary } = await run(plan, { inputs: [csv, nd], skips });
      const ids = requests.flatMap((r) => (r.body as { attributes: Array<{ external_id: string }> }).attributes.map((i) => i.external_id));
      expect(ids).toEqual(['u4', 'u5', 'u6', 'u8', 'u9', 'u10', 'u11', 'u12', 'n2']);
      expect(summary).toMatchObject({ rows: 22, skipped: 4 + 1 + 7 + 1 });
    });

    it('rejects unsent, with the reason, the rows an earlier run left in doubt (--on-unknown reject)', async () => {
      const csv = file('doubt.csv', 'external_id\nu1\nu2\nu3\n');
      const skips: ResumeSkips = { ...skipsOf([[csv, [[2, 2]]]]), inDoubt: new Map([[csv, [[3, 3]]]]) };
      const { requests, rejects } = await run(plan, { inputs: [csv], skips });
      expect(requests.flatMap((r) => origins(r).map((o) => o.line))).toEqual([4]);
      expect(rejects).toMatchObject([{ line: 3, row: { external_id: 'u2' }, errors: [expect.stringMatching(/^outcome unknown: .*--on-unknown reject/)] }]);
    });

    it('rejects each bad row with its reasons and goes on', async () => {
      const csv = file('c.csv', 'external_id,email\nu1,bad\nu2,ok@example.com\n');
      const { requests, rejects, summary } = await run(plan, { inputs: [csv] });
      expect(rejects).toEqual([{ file: csv, line: 2, kind: 'attributes', row: { external_id: 'u1', email: 'bad' }, errors: ['email: is not a valid email address, got "bad"'] }]);
      expect(requests).toHaveLength(1);
      expect(summary.rejectReasons).toEqual({ 'email: is not a valid email address': 1 });
    });

    it('rejects a row whose item alone is larger than a request body may be', async () => {
      const big = 'x'.repeat(250);
      const line = JSON.stringify({ external_id: 'u1', ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`a${i}`, big])) });
      const { requests, rejects } = await run(plan, { inputs: [file('d.ndjson', `${line}\n{"external_id":"u2"}\n`)], maxBodyBytes: 3000 });
      expect(rejects.map((r) => [r.line, r.errors[0]])).toEqual([[1, expect.stringMatching(/^row: the item is \d+ bytes as JSON; a request body may be at most 3000 bytes/)]]);
      expect(requests.flatMap((r) => origins(r).map((o) => o.line))).toEqual([2]);
    });

    it('gives a CSV row back cell for cell: quotes, line breaks, commas, characters beyond ASCII, a leading U+FEFF', async () => {
      const csv = file('cells.csv', 'external_id,note,city\r\nu1,"two\nlines, and ""quotes""",Zürich\r\nu2,😀 emoji,\r\nu3,\uFEFFjoined,São Paulo\r\n');
      const { requests } = await run(plan, { inputs: [csv] });
      expect(origins(requests[0])).toEqual([
        { file: csv, line: 2, row: { external_id: 'u1', note: 'two\nlines, and "quotes"', city: 'Zürich' } },
        { file: csv, line: 4, row: { external_id: 'u2', note: '😀 emoji', city: '' } },
        { file: csv, line: 5, row: { external_id: 'u3', note: '\uFEFFjoined', city: 'São Paulo' } },
      ]);
    });

    it('rejects what would change without a word, and goes on: bad bytes, deep lines, numbers, NUL in identifiers', async () => {
      const deep = (depth: number) => `{"external_id":"d","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      const lines = file(
        'altered.ndjson',
        Buffer.concat([
          Buffer.from(`{"external_id":"u1"}\n${deep(100_000)}\n${deep(60)}\n{"events":[${deep(5_000)}]}\n`),
          Buffer.from('{"external_id":"u'),
          Buffer.from([0xff]),
          Buffer.from('2"}\n{"external_id":"u3","properties":{"big":12345678901234567890}}\n{"external_id":"u4","t":1e-400}\n'),
          Buffer.from('{"external_id":"u5\\u0000x"}\n{"user_alias":{"alias_name":"a\\u0000","alias_label":"l"}}\n{"external_id":"u6","n":1e400}\n{"external_id":"u7"}\n'),
        ]),
      );
      const csv = file('altered.csv', Buffer.concat([Buffer.from('external_id,city\nu1,Paris\nu'), Buffer.from([0xff]), Buffer.from('2,x\nu3,ok\n')]));
      const { rejects, summary } = await run(plan, { inputs: [lines, csv] });
      expect(rejects.map((r) => [r.file === csv ? 'csv' : 'ndjson', r.line, r.errors[0]])).toEqual([
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
      for (const record of rejects) expect(JSON.parse(JSON.stringify(record))).toEqual(record);
      expect(summary.items.attributes).toBe(4); // u1, u7, and u1 and u3 of the CSV file
    });

    it('reads files in the encoding given', async () => {
      const latin1 = file('latin1.csv', Buffer.from([...Buffer.from('external_id,note\nu1,'), 0x80, 0xe9, ...Buffer.from('\n')]));
      for (const [encoding, note] of [['latin1', '\u0080é'], ['windows-1252', '€é']] as const) {
        const { requests } = await run(plan, { inputs: [latin1], encoding });
        expect(requests[0].body).toEqual({ attributes: [{ external_id: 'u1', note }] });
      }
    });

    it('stops reading when its consumer stops taking, and what was taken tells what was read', async () => {
      const csv = file('many.csv', `external_id\n${Array.from({ length: 20_000 }, (_, i) => `u${i}`).join('\n')}\n`);
      const events: Array<PlanEvent<RequestToSend>> = [];
      let requests = 0;
      for await (const event of plan({ inputs: [csv] })) {
        events.push(event);
        if (event.type === 'request' && (requests += 1) === 3) break;
      }
      const { summary } = outcomeOf(events);
      expect(summary.requests).toBe(3);
      expect(summary.rows).toBeGreaterThanOrEqual(150);
      expect(summary.rows).toBeLessThan(20_000);
    });

    it('throws the input error it met, with its file and line, after telling of the file', async () => {
      const csv = file('bad-header.csv', 'external_id,a:nonsense\nu1,x\n');
      const events: string[] = [];
      const error = await (async () => {
        for await (const event of plan({ inputs: [csv] })) events.push(event.type);
      })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).message).toMatch(/bad-header\.csv:1: the header cannot be used:\n {2}column 2 "a:nonsense"/);
      expect((error as InputError).file).toBe(csv);
      expect((error as InputError).line).toBe(1);
      expect(events).toEqual(['file']);
    });
  });
}
