// The rejects file as a run writes it: lines gathered into large writes, and on disk once synced.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { openNdjsonWriter } from '../../src/input/ndjson-writer.js';
import type { RejectRecord } from '../../src/model/request.js';

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
    // no sync and no close: the line reaches the file by itself (polled for, however slow the machine)
    await vi.waitFor(() => expect(lines(path)).toEqual([record(2)]), { timeout: 10_000, interval: 10 });
    await writer.close();
  });

  // a run that never syncs (a dry run's --out and rejects file) learns of a full disk only here
  it.skipIf(!existsSync('/dev/full'))('fails its close when the last lines cannot be written (a full disk, /dev/full)', async () => {
    const writer = await openNdjsonWriter('/dev/full', 'requests');
    await writer.write({ attributes: [] });
    const closing = writer.close();
    await expect(closing).rejects.toThrow(OutputError);
    await expect(closing).rejects.toThrow(/cannot write the requests file \/dev\/full: ENOSPC/);
  });
});
