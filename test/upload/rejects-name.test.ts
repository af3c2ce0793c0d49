// The default rejects file's name: each input's own, each shard's own, a check's apart; and the file
// of an earlier version, taken by a resumed run only when it holds rows of the run's inputs.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultRejectsPath, earlierRejectsPath, rejectsFileOf } from '../../src/upload/rejects-name.js';
import { useServers } from '../helpers/servers.js';

const { tmp } = useServers();

describe('defaultRejectsPath', () => {
  it('keeps the whole name of the input, and says the shard and a check', () => {
    expect(defaultRejectsPath('data/users.csv')).toBe(join('data', 'users.csv.rejects.ndjson'));
    expect(defaultRejectsPath('data/users.ndjson')).toBe(join('data', 'users.ndjson.rejects.ndjson'));
    expect(defaultRejectsPath('users.csv.gz', 'csv')).toBe('users.csv.gz.rejects.csv');
    expect(defaultRejectsPath('users.csv', 'ndjson', { shard: { index: 2, count: 4 } })).toBe('users.csv.shard-2-of-4.rejects.ndjson');
    expect(defaultRejectsPath('users.csv', 'ndjson', { shard: { index: 2, count: 4 }, check: true })).toBe('users.csv.shard-2-of-4.check.rejects.ndjson');
    expect(defaultRejectsPath('-')).toBe('stdin.rejects.ndjson');
    expect(defaultRejectsPath('s3://bucket/exports/users/', 'ndjson', { shard: { index: 1, count: 4 } })).toBe('users.shard-1-of-4.rejects.ndjson');
    expect(earlierRejectsPath('data/users.csv.gz')).toBe(join('data', 'users.rejects.ndjson'));
  });
});

describe('rejectsFileOf a resumed upload', () => {
  const resume = (inputs: string[], format: 'ndjson' | 'csv' = 'ndjson') => rejectsFileOf(inputs, inputs, format, { resume: true });

  it("takes the earlier version's file only when it holds rows of the run's inputs, and its own is not there", async () => {
    const csv = join(tmp.dir, 'users.csv');
    const earlier = join(tmp.dir, 'users.rejects.ndjson');
    // the earlier file holds the rejects of users.ndjson, which shared its name: not this run's
    writeFileSync(earlier, `${JSON.stringify({ file: 'users.ndjson', line: 1, errors: ['x'] })}\n`);
    expect(await resume([csv])).toEqual({ path: join(tmp.dir, 'users.csv.rejects.ndjson') });
    writeFileSync(earlier, `${JSON.stringify({ file: 'users.csv', line: 2, errors: ['x'] })}\n{"torn`);
    expect((await resume([csv])).path).toBe(earlier);
    // a run that is not resumed, or a check, writes its own
    expect((await rejectsFileOf([csv], [csv], 'ndjson', { resume: false })).path).toBe(join(tmp.dir, 'users.csv.rejects.ndjson'));
    expect((await rejectsFileOf([csv], [csv], 'ndjson', { resume: true, check: true })).path).toBe(join(tmp.dir, 'users.csv.check.rejects.ndjson'));
    // once its own file is there, that one
    writeFileSync(join(tmp.dir, 'users.csv.rejects.ndjson'), '');
    expect((await resume([csv])).path).toBe(join(tmp.dir, 'users.csv.rejects.ndjson'));
  });

  it("reads a CSV rejects file's rows by their _file column", async () => {
    const csv = join(tmp.dir, 'users.csv');
    writeFileSync(join(tmp.dir, 'users.rejects.csv'), 'external_id,_file,_line,_kind,_column,_errors\nu1,other.csv,2,attributes,,x\n');
    expect((await resume([csv], 'csv')).path).toBe(join(tmp.dir, 'users.csv.rejects.csv'));
    writeFileSync(join(tmp.dir, 'users.rejects.csv'), 'external_id,_file,_line,_kind,_column,_errors\nu1,users.csv,2,attributes,,x\n');
    expect((await resume([csv], 'csv')).path).toBe(join(tmp.dir, 'users.rejects.csv'));
  });
});
