// The rejects file as a run writes it: lines gathered into large writes and on disk once synced, and
// the rejects kept until then for the journal bounded on a file of mostly rejected rows.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openNdjsonWriter } from '../../src/input/ndjson-writer.js';
import type { RejectRecord } from '../../src/model/request.js';
import { rejectsLedger } from '../../src/upload/outputs.js';

const dir = mkdtempSync(join(tmpdir(), 'track-rejects-ledger-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = (line: number): RejectRecord => ({ file: 'in.csv', line, kind: 'attributes', row: { email: `bad-${line}` }, errors: ['email: is not a valid email address'] });
const lines = (path: string): unknown[] => readFileSync(path, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

describe('an NDJSON output file', () => {
  it('holds every line written, in order, once synced (before it is closed)', async () => {
    const path = join(dir, 'gathered.ndjson');
    const writer = await openNdjsonWriter(path, 'rejects');
    for (let i = 0; i < 30_000; i += 1) await writer.write(record(i + 2));
    await writer.writeLine(Buffer.from('{"bytes":true}'));
    await writer.write({ after: true });
    await writer.sync();
    const written = lines(path);
    expect(written).toHaveLength(30_002);
    expect(written.slice(0, 30_000)).toEqual(Array.from({ length: 30_000 }, (_, i) => record(i + 2)));
    expect(written.slice(30_000)).toEqual([{ bytes: true }, { after: true }]);
    await writer.close();
  });

  it('writes a line that stays alone in a turn of the event loop without waiting for more', async () => {
    const path = join(dir, 'alone.ndjson');
    const writer = await openNdjsonWriter(path, 'rejects');
    await writer.write(record(2));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines(path)).toEqual([record(2)]);
    await writer.close();
  });
});

describe('the rejects ledger', () => {
  it('syncs along the way on a run of many rejects, so that what it keeps for the journal stays bounded', async () => {
    const path = join(dir, 'many.ndjson');
    const writer = await openNdjsonWriter(path, 'rejects');
    let syncs = 0;
    const sync = writer.sync.bind(writer);
    writer.sync = () => ((syncs += 1), sync());
    const ledger = rejectsLedger(writer, new Set(), true);
    for (let i = 0; i < 25_000; i += 1) await ledger.write(record(i + 2));
    // 25,000 rejects and no settling by the journal: synced twice on the way
    expect(syncs).toBe(2);
    expect(lines(path).length).toBeGreaterThanOrEqual(20_000);
    expect(await ledger.settle()).toBeUndefined();
    expect(lines(path)).toHaveLength(25_000);
    await writer.close();
  });

  it('gives the journal every reject it could not sync, those the bound tried included', async () => {
    const path = join(dir, 'failing.ndjson');
    const writer = await openNdjsonWriter(path, 'rejects');
    writer.sync = () => Promise.reject(new Error('no space left on device'));
    const ledger = rejectsLedger(writer, new Set(), true);
    for (let i = 0; i < 12_000; i += 1) await ledger.write(record(i + 2));
    const owed = (await ledger.settle()) ?? [];
    expect(owed).toHaveLength(12_000);
    expect(owed.map((r) => r.line)).toEqual(Array.from({ length: 12_000 }, (_, i) => i + 2));
    await writer.close();
  });
});
