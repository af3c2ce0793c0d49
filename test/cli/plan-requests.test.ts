// The composing function in-process: what part 2 (the sender) relies on.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { PlannedRequest, RejectRecord } from '../../src/model/plan.js';
import { textHash } from '../../src/model/identity.js';
import { planRequests } from '../../src/plan.js';
import { upload } from '../../src/upload.js';

const dir = mkdtempSync(join(tmpdir(), 'track-plan-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function all(requests: AsyncIterable<PlannedRequest>): Promise<PlannedRequest[]> {
  const out: PlannedRequest[] = [];
  for await (const request of requests) out.push(request);
  return out;
}

describe('planRequests', () => {
  it('fills seq, userKeys and origins (file, line, row) for every item', async () => {
    const csv = file('a.csv', 'external_id,email,plan\nu1,u1@example.com,pro\n,u2@example.com,free\n');
    const plan = planRequests({ inputs: [csv] });
    const [request] = await all(plan.requests);
    expect(request.seq).toBe(0);
    expect(request.userKeys).toEqual([textHash('external_id:u1'), textHash('email:u2@example.com')]);
    expect(request.origins.attributes.map((o) => [o.file, o.line, o.row])).toEqual([
      [csv, 2, { external_id: 'u1', email: 'u1@example.com', plan: 'pro' }],
      [csv, 3, { external_id: '', email: 'u2@example.com', plan: 'free' }],
    ]);
    expect(request.origins.events).toEqual([]);
    expect(plan.summary).toMatchObject({ rows: 2, items: { attributes: 2, events: 0, purchases: 0 }, requests: 1 });
  });

  it('leaves out the items of a request-shaped line that skipItem names, and gives the others their places', async () => {
    const ev = (n: number) => ({ external_id: 'u1', name: 'e', time: '2024-03-07T10:00:00Z', properties: { n } });
    const ndjson = file('r.ndjson', `${JSON.stringify({ events: [ev(0), { external_id: 'u1' }, ev(2), ev(3)] })}\n${JSON.stringify({ events: [] })}\n`);
    const rejects: RejectRecord[] = [];
    const lineItems: number[] = [];
    const plan = planRequests({
      inputs: [ndjson],
      skipItem: (_file, line, item) => line === 1 && item === 2,
      onLineItems: (_file, _line, items) => lineItems.push(items),
      onReject: (record) => void rejects.push(record),
    });
    const [request] = await all(plan.requests);
    expect(request.origins.events.map((o) => [o.line, o.item, (o.row as { properties: { n: number } }).properties.n])).toEqual([
      [1, 0, 0],
      [1, 3, 3],
    ]);
    expect(lineItems).toEqual([3]);
    expect(rejects).toMatchObject([{ line: 1, item: 1, kind: 'events' }]);
    // a line of no items is no row already delivered
    expect(plan.summary).toMatchObject({ rows: 2, skipped: 0 });
  });

  it('leaves out the rows skipRow names (resume), and counts them', async () => {
    const csv = file('b.csv', 'external_id\nu1\nu2\nu3\n');
    const nd = file('b.ndjson', '{"external_id":"n1"}\n{"external_id":"n2"}\n');
    const plan = planRequests({ inputs: [csv, nd], skipRow: (f, line) => (f === csv && line === 3) || (f === nd && line === 1) });
    const requests = await all(plan.requests);
    expect(requests.flatMap((r) => r.body.attributes?.map((i) => i.external_id))).toEqual(['u1', 'u3', 'n2']);
    expect(plan.summary).toMatchObject({ rows: 5, skipped: 2 });
  });

  it('hands each rejected row to onReject before going on', async () => {
    const rejects: RejectRecord[] = [];
    const plan = planRequests({ inputs: [file('c.csv', 'external_id,email\nu1,bad\nu2,ok@example.com\n')], onReject: (r) => void rejects.push(r) });
    const requests = await all(plan.requests);
    expect(rejects).toEqual([{ file: join(dir, 'c.csv'), line: 2, kind: 'attributes', row: { external_id: 'u1', email: 'bad' }, errors: ['email: is not a valid email address, got "bad"'] }]);
    expect(requests).toHaveLength(1);
    expect(plan.summary.rejectReasons).toEqual({ 'email: is not a valid email address': 1 });
  });

  it('rejects a row whose item alone is larger than a request body may be', async () => {
    const rejects: RejectRecord[] = [];
    const big = 'x'.repeat(250);
    const line = JSON.stringify({ external_id: 'u1', ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`a${i}`, big])) });
    const plan = planRequests({ inputs: [file('d.ndjson', `${line}\n{"external_id":"u2"}\n`)], maxBodyBytes: 3000, onReject: (r) => void rejects.push(r) });
    const requests = await all(plan.requests);
    expect(rejects.map((r) => [r.line, r.errors[0]])).toEqual([[1, expect.stringMatching(/^row: the item is \d+ bytes as JSON; a request body may be at most 3000 bytes/)]]);
    expect(requests.flatMap((r) => r.origins.attributes.map((o) => o.line))).toEqual([2]);
  });
});

describe('upload', () => {
  it('dry run: writes --out and the rejects file, and removes a rejects file a clean run leaves empty', async () => {
    const csv = file('e.csv', 'external_id,email\nu1,bad\nu2,ok@example.com\n');
    const out = join(dir, 'e.out.ndjson');
    const first = await upload({ inputs: [csv], dryRun: true, outPath: out });
    expect(first).toMatchObject({ rejected: 1, requests: 1, rejectsPath: join(dir, 'e.rejects.ndjson'), outPath: out });
    writeFileSync(csv, 'external_id,email\nu2,ok@example.com\n');
    const second = await upload({ inputs: [csv], dryRun: true });
    expect(second.rejectsPath).toBeUndefined();
    const { existsSync } = await import('node:fs');
    expect(existsSync(join(dir, 'e.rejects.ndjson'))).toBe(false);
  });

  it('hands the planned requests to deliver when it is not a dry run, with the rejects file as onReject', async () => {
    const seen: number[] = [];
    const summary = await upload({
      inputs: ['-'],
      format: 'ndjson',
      stdin: Readable.from(['{"external_id":"u1"}\n{"external_id":5}\n']),
      rejectsPath: join(dir, 'f.rejects.ndjson'),
      dryRun: false,
      deliver: async (requests, io) => {
        for await (const request of requests) {
          seen.push(request.seq);
          await io.onReject({ file: '-', line: 1, kind: 'attributes', row: {}, errors: ['from the server'] });
        }
        return 'delivered';
      },
    });
    expect(seen).toEqual([0]);
    expect(summary).toMatchObject({ delivery: 'delivered', rejected: 1, rejectsPath: join(dir, 'f.rejects.ndjson') });
  });

  it('refuses to send without a sender', async () => {
    await expect(upload({ inputs: [file('g.csv', 'external_id\nu1\n')], dryRun: false })).rejects.toThrow(/deliver function/);
  });
});
