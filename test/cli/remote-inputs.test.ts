// Inputs where they live, through the real CLI: a real S3-compatible server on loopback (s3rver),
// objects named by key, prefix, glob and presigned URL, the same rows as CSV, Parquet and gzipped
// NDJSON parts giving the same requests, bad inputs refused before anything is sent, and a run that
// the network or a kill stopped resumed without reading again the parts it settled.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isWhole, readJournal } from '../../src/records/journal.js';
import { BIN, runCliAsync } from '../helpers/cli.js';
import { startCuttingProxy, type CuttingProxy } from '../helpers/cutting-proxy.js';
import { optional, writeParquet } from '../helpers/parquet.js';
import { S3_ENV, startS3, type S3Server } from '../helpers/s3.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();
let s3: S3Server;

/** 120 users; every seventh has no first name (an empty cell, a null, a key left out). */
const USERS = Array.from({ length: 120 }, (_, i) => ({
  external_id: `user-${String(i).padStart(3, '0')}`,
  first_name: i % 7 === 0 ? null : `Name ${i}`,
  visits: i * 3,
  vip: i % 2 === 0,
  signed_up: Date.UTC(2024, 0, 1 + (i % 28), 10, i % 60, 0, i),
  city: ['Paris', 'Berlin', 'Lagos'][i % 3],
  tags: i % 5 === 0 ? [] : ['a', `t${i % 4}`],
}));
const PART_ROWS = 40;

function csvOf(users: typeof USERS): string {
  const quote = (text: string): string => `"${text.replaceAll('"', '""')}"`;
  const rows = users.map((u) =>
    [u.external_id, u.first_name ?? '', u.visits, u.vip, new Date(u.signed_up).toISOString(), u.city, quote(JSON.stringify(u.tags))].join(','),
  );
  return `external_id,first_name,visits,vip,signed_up,address.city,tags:array\n${rows.join('\n')}\n`;
}

function ndjsonOf(users: typeof USERS): string {
  return users
    .map((u) => {
      const { first_name, city, signed_up, ...rest } = u;
      const item = { external_id: rest.external_id, ...(first_name === null ? {} : { first_name }), visits: rest.visits, vip: rest.vip };
      return JSON.stringify({ ...item, signed_up: new Date(signed_up).toISOString(), address: { city }, tags: rest.tags });
    })
    .join('\n');
}

function parquetOf(path: string, users: typeof USERS): void {
  writeParquet(
    path,
    [
      { name: 'root', num_children: 7 },
      optional('external_id', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
      optional('first_name', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
      optional('visits', { type: 'INT32' }),
      optional('vip', { type: 'BOOLEAN' }),
      optional('signed_up', { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } }),
      optional('address', { num_children: 1 }),
      optional('city', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
      optional('tags', { converted_type: 'LIST', num_children: 1 }),
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      optional('element', { type: 'BYTE_ARRAY', converted_type: 'UTF8' }),
    ],
    {
      external_id: users.map((u) => u.external_id),
      first_name: users.map((u) => u.first_name),
      visits: users.map((u) => u.visits),
      vip: users.map((u) => u.vip),
      signed_up: users.map((u) => BigInt(u.signed_up)),
      address: users.map((u) => ({ city: u.city })),
      tags: users.map((u) => u.tags),
    },
    25,
  );
}

const PARTS = [0, 1, 2].map((p) => `parts/part-${String(p).padStart(3, '0')}.ndjson.gz`);
const partBytes = (p: number): Buffer => gzipSync(ndjsonOf(USERS.slice(p * PART_ROWS, (p + 1) * PART_ROWS)));

beforeAll(async () => {
  s3 = await startS3();
  await s3.bucket('exports');
  // put last first: the run reads in key order, not in the order the store got them
  for (const p of [2, 1, 0]) await s3.put('exports', PARTS[p], partBytes(p));
  await s3.put('exports', 'parts/_SUCCESS', '');
  await s3.put('exports', 'users.csv', csvOf(USERS));
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const path = join(mkdtempSync(join(tmpdir(), 'track-pq-')), 'users.parquet');
  parquetOf(path, USERS);
  await s3.put('exports', 'tables/users.parquet', readFileSync(path));
});
afterAll(async () => {
  await s3?.close();
});

/** The CLI with the server's credentials in its environment, in this test's folder. */
const track = (args: string[], env: Record<string, string> = {}) =>
  runCliAsync(args, { cwd: servers.tmp.dir, env: { ...S3_ENV, AWS_ENDPOINT_URL_S3: s3.endpoint, HOME: servers.tmp.dir, ...env } });

describe('inputs in S3', () => {
  it('gives the same requests from a local CSV, a Parquet object, a CSV object and gzipped NDJSON parts by glob', async () => {
    const dir = servers.tmp.dir;
    writeFileSync(join(dir, 'users.csv'), csvOf(USERS));
    parquetOf(join(dir, 'users.parquet'), USERS);
    const runs = [
      ['users.csv'],
      ['users.parquet'],
      ['s3://exports/users.csv'],
      ['s3://exports/tables/users.parquet'],
      ['s3://exports/parts/*.ndjson.gz'],
    ];
    const outs: string[] = [];
    for (const [i, inputs] of runs.entries()) {
      const run = await track(['validate', ...inputs, '--out', `out-${i}.ndjson`, '--max-total', '50']);
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      outs.push(readFileSync(join(dir, `out-${i}.ndjson`), 'utf8'));
    }
    expect(outs[0].split('\n').filter(Boolean)).toHaveLength(3);
    for (const out of outs) expect(out).toBe(outs[0]);
    const first = JSON.parse(outs[0].split('\n')[0]).attributes;
    expect(first[0]).toEqual({ external_id: 'user-000', visits: 0, vip: true, signed_up: '2024-01-01T10:00:00.000Z', address: { city: 'Paris' }, tags: [] });
  });

  it('reads a glob in key order and counts each object as a file; a prefix names what has no format', async () => {
    const glob = await track(['validate', 's3://exports/parts/*.ndjson.gz', '--json']);
    expect(glob.status).toBe(0);
    const summary = JSON.parse(glob.stdout);
    expect(summary.files.map((f: { file: string }) => f.file)).toEqual(PARTS.map((key) => `s3://exports/${key}`));
    expect(summary.rows).toBe(120);
    const prefix = await track(['validate', 's3://exports/parts/']);
    expect(prefix.status).toBe(2);
    expect(prefix.stderr).toMatch(/s3:\/\/exports\/parts\/_SUCCESS: cannot tell the format .* leave it out with a glob/);
  });

  it('previews the first rows of CSV and Parquet objects (validate --preview)', async () => {
    const run = await track(['validate', 's3://exports/users.csv', 's3://exports/tables/users.parquet', '--preview', '1']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('preview of s3://exports/users.csv:\n  line 2 (attributes) {"external_id":"user-000"');
    expect(run.stdout).toContain('preview of s3://exports/tables/users.parquet:\n  line 1 (attributes) {"external_id":"user-000"');
  });

  it('reads every object under a prefix, with --s3-endpoint', async () => {
    await s3.put('exports', 'only/a.csv', 'external_id,plan\nu1,pro\n');
    await s3.put('exports', 'only/b/c.csv', 'external_id,plan\nu2,team\n');
    await s3.put('exports', 'only/folder/', '');
    const run = await track(['validate', 's3://exports/only/', '--s3-endpoint', s3.endpoint, '--json'], { AWS_ENDPOINT_URL_S3: '' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: 2, files: [{ file: 's3://exports/only/a.csv' }, { file: 's3://exports/only/b/c.csv' }] });
  });

  it('refuses bad inputs before anything is sent, exit 2, naming the URL and the cause', async () => {
    const emulator = await servers.emulator();
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [['s3://nowhere/users.csv'], {}, /s3:\/\/nowhere\/users\.csv: the bucket "nowhere" does not exist/],
      [['s3://exports/missing.csv'], {}, /s3:\/\/exports\/missing\.csv: no such object \(to read every object under it as a prefix, end it with \/: s3:\/\/exports\/missing\.csv\/\)/],
      [['s3://exports/empty/'], {}, /s3:\/\/exports\/empty\/: no object is under this prefix/],
      [['s3://exports/parts/*.csv'], {}, /s3:\/\/exports\/parts\/\*\.csv: no object matches this glob/],
      [['s3://exports/users.csv'], { AWS_ACCESS_KEY_ID: 'someone-else' }, /s3:\/\/exports\/users\.csv: access denied \(403\)/],
      [['s3://exports/users.csv'], { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '' }, /no AWS credentials were found to read it; looked for AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY .*AWS_PROFILE/],
      // an object named twice would have its rows sent twice
      [['s3://exports/parts/*.gz', 's3://exports/parts/part-001.ndjson.gz'], {}, /s3:\/\/exports\/parts\/part-001\.ndjson\.gz is named by s3:\/\/exports\/parts\/\*\.gz and s3:\/\/exports\/parts\/part-001\.ndjson\.gz; give each object once/],
      [['s3://exports/users.csv', 's3://exports/users.csv'], {}, /s3:\/\/exports\/users\.csv is named by s3:\/\/exports\/users\.csv twice; give each object once/],
    ];
    const dir = servers.tmp.dir;
    writeFileSync(join(dir, 'good.csv'), 'external_id,plan\nu1,pro\n');
    for (const [inputs, env, message] of cases) {
      const run = await track(['upload', 'good.csv', ...inputs, '--url', emulator.url, '--api-key', 'k'], env);
      expect(run.stderr).toMatch(message);
      expect(run.status).toBe(2);
    }
    expect(await emulator.requests({})).toEqual([]);
  });

  it("keeps one user's rows in the order of the parts, then of the rows", async () => {
    const emulator = await servers.emulator();
    await s3.put('exports', 'order/part-1.ndjson', '{"external_id":"same","plan":"first"}\n{"external_id":"same","plan":"second"}\n');
    await s3.put('exports', 'order/part-2.ndjson', '{"external_id":"same","plan":"third"}\n');
    await s3.put('exports', 'order/part-10.ndjson', '{"external_id":"same","plan":"last"}\n');
    const run = await track(['upload', 's3://exports/order/', '--url', emulator.url, '--api-key', 'k', '--max-total', '1', '--concurrency', '8']);
    expect(run.status).toBe(0);
    // key order: part-1, part-10, part-2
    expect(emulator.store.findProfiles('same', 1).profiles[0].custom).toMatchObject({ plan: 'third' });
  });

  it('seeds the emulator from the objects a glob names', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, S3_ENV);
    try {
      const emulator = await servers.emulator({ seed: ['s3://exports/parts/*.ndjson.gz'], storage: { s3Endpoint: s3.endpoint } });
      expect(emulator.store.counts().profiles).toBe(120);
      // an object two seeds name is refused in a seed's words
      const twice = await servers.emulator({ seed: ['s3://exports/parts/*.ndjson.gz', 's3://exports/parts/part-002.ndjson.gz'], storage: { s3Endpoint: s3.endpoint } }).catch((e: unknown) => e as Error);
      expect(twice).toBeInstanceOf(Error);
      expect((twice as Error).message).toMatch(/^seed s3:\/\/exports\/parts\/part-002\.ndjson\.gz is named by s3:\/\/exports\/parts\/\*\.ndjson\.gz and s3:\/\/exports\/parts\/part-002\.ndjson\.gz; give each object once$/);
    } finally {
      for (const key of Object.keys(S3_ENV)) if (!(key in saved)) delete process.env[key];
    }
  });

  it('reads a presigned URL of a CSV and of a Parquet object', async () => {
    const signed = async (key: string) => getSignedUrl(s3.client, new GetObjectCommand({ Bucket: 'exports', Key: key }), { expiresIn: 600 });
    const run = await track(['validate', await signed('users.csv'), await signed('tables/users.parquet'), '--json', '--rejects', 'r.ndjson']);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: 240, rejected: 0, items: { attributes: 240 } });
    // one object by two spellings of its URL (the host's case, `./`, a fragment; the same one signed anew) is named twice
    const url = await signed('users.csv');
    const spelled = new URL(url);
    const respelled = `${spelled.protocol}//${spelled.host.toUpperCase()}${spelled.pathname.replace('/users.csv', '/./%75sers.csv')}${spelled.search}#part`;
    for (const other of [respelled, await signed('users.csv')]) {
      const twice = await track(['validate', url, other]);
      expect(twice.status, twice.stderr).toBe(2);
      expect(twice.stderr).toContain('; give each object once');
    }
  });

  it('follows a redirect to the object (a sharing link, a CDN), for a streamed CSV and a Parquet file read by ranges', async () => {
    const signed = async (key: string) => getSignedUrl(s3.client, new GetObjectCommand({ Bucket: 'exports', Key: key }), { expiresIn: 600 });
    const targets: Record<string, [number, string]> = { '/users.csv': [302, await signed('users.csv')], '/users.parquet': [301, await signed('tables/users.parquet')] };
    const redirector = createServer((request, answer) => {
      const [status, location] = targets[request.url ?? ''] ?? [404, ''];
      answer.writeHead(status, status === 404 ? {} : { location }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
      const run = await track(['validate', `${base}/users.csv`, `${base}/users.parquet`, '--json']);
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toMatchObject({ rows: 240, rejected: 0, files: [{ file: `${base}/users.csv` }, { file: `${base}/users.parquet` }] });
    } finally {
      await new Promise((resolve) => redirector.close(resolve));
    }
  });

  it('resumes an upload from a presigned URL with the same object signed anew, and never writes or shows a signature', async () => {
    const emulator = await servers.emulator();
    const signed = (expiresIn: number) => getSignedUrl(s3.client, new GetObjectCommand({ Bucket: 'exports', Key: 'users.csv' }), { expiresIn });
    const upload = ['upload', '--url', emulator.url, '--api-key', 'k', '--json'];
    const first = await track([...upload, await signed(600)]);
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout).files).toEqual([expect.objectContaining({ file: `${s3.endpoint}/exports/users.csv` })]);
    const sent = (await emulator.requests({})).length;

    const again = await signed(900);
    const resumed = await track([...upload, again, '--resume']);
    expect(resumed.status).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ skipped: 120, items: { attributes: 0 } });
    expect((await emulator.requests({})).length).toBe(sent);
    // without --resume, the re-run guard knows the object signed anew as the one it sent
    const rerun = await track([...upload, again]);
    expect(rerun.status).toBe(2);
    expect(rerun.stderr).toMatch(/--resume|--restart/);

    const journal = readFileSync(join(servers.tmp.dir, `users.csv.http-127.0.0.1-${new URL(emulator.url).port}.journal`), 'utf8');
    for (const text of [first.stdout, first.stderr, resumed.stdout, resumed.stderr, rerun.stderr, journal]) expect(text).not.toMatch(/X-Amz-Signature|X-Amz-Credential/i);
  });
});

describe('reading objects over a failing network', () => {
  let proxy: CuttingProxy;
  beforeAll(async () => {
    proxy = await startCuttingProxy(s3.endpoint);
  });
  afterAll(async () => {
    await proxy?.close();
  });
  const viaProxy = (args: string[]) => track(args, { AWS_ENDPOINT_URL_S3: proxy.url });
  const gets = (key: string): number => proxy.requests.filter((r) => r === `GET /exports/${key}`).length;

  it('takes a broken read up again from the byte it stopped at', async () => {
    await track(['validate', 's3://exports/parts/*.ndjson.gz', '--out', 'whole.ndjson']);
    proxy.requests.length = 0;
    proxy.cut((request) => request.method === 'GET' && request.url?.startsWith(`/exports/${PARTS[1]}`) === true, 200, 1);
    const run = await viaProxy(['validate', 's3://exports/parts/*.ndjson.gz', '--out', 'cut.ndjson']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(gets(PARTS[1])).toBe(2);
    expect(readFileSync(join(servers.tmp.dir, 'cut.ndjson'), 'utf8')).toBe(readFileSync(join(servers.tmp.dir, 'whole.ndjson'), 'utf8'));
  });

  it('stops a CSV or JSON array object the network keeps breaking as a failure (exit 3) naming the cause, as NDJSON', async () => {
    await s3.put('exports', 'broken/users.json', `[\n${USERS.map((u) => JSON.stringify({ external_id: u.external_id, visits: u.visits })).join(',\n')}\n]\n`);
    for (const key of ['users.csv', 'broken/users.json']) {
      // the first read gives 300 bytes (the header, the array's first rows), every try after it none
      proxy.cut((request) => request.method === 'GET' && request.url?.startsWith(`/exports/${key}`) === true, (request) => (request.headers.range === undefined ? 300 : 0), Infinity);
      const run = await viaProxy(['validate', `s3://exports/${key}`]);
      expect(run.stderr).toMatch(new RegExp(`^track: s3://exports/${key}: reading stopped at byte 300 of \\d+; 5 tries failed`, 'm'));
      expect(run.stderr).not.toMatch(/as CSV|not a valid JSON array/);
      expect(run.status).toBe(3);
    }
    proxy.cut(() => false, 0, 0);
  }, 60_000);

  it('ends at once on SIGTERM while a read waits on a silent server, exit 130, its summary written', async () => {
    proxy.cut((request) => request.method === 'GET' && request.url?.startsWith('/exports/users.csv') === true, 0, Infinity, true);
    const before = gets('users.csv');
    try {
      const child = spawn(process.execPath, [BIN, 'upload', '--dry-run', 's3://exports/users.csv', '--summary-file', 'stopped.json'], {
        cwd: servers.tmp.dir,
        env: { ...process.env, ...S3_ENV, AWS_ENDPOINT_URL_S3: proxy.url, HOME: servers.tmp.dir },
        stdio: 'ignore',
      });
      const ended = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      // the header's read is under way, and silent
      while (gets('users.csv') === before) await new Promise((resolve) => setTimeout(resolve, 50));
      const stopped = Date.now();
      child.kill('SIGTERM');
      expect(await ended).toBe(130);
      expect(Date.now() - stopped).toBeLessThan(10_000);
      expect(JSON.parse(readFileSync(join(servers.tmp.dir, 'stopped.json'), 'utf8'))).toMatchObject({ exitStatus: 130, fatal: { name: 'StoppedError', message: 's3://exports/users.csv: stopped while reading it at byte 0 of ' + csvOf(USERS).length } });
    } finally {
      proxy.cut(() => false, 0, 0);
    }
  }, 60_000);

  it('reads an object once for its header and once for its rows: a read the header check left is not taken up again', async () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => `w-${i},Name ${i},${i}`);
    await s3.put('exports', 'wide/users.csv', `external_id,first_name,visits\n${rows.join('\n')}\n`);
    proxy.requests.length = 0;
    const run = await viaProxy(['validate', 's3://exports/wide/users.csv', '--json']);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: 100_000 });
    expect(gets('wide/users.csv')).toBe(2);
  });

  it('names the range and the cause when the network keeps breaking the reads of a Parquet object (exit 3)', async () => {
    for (const passed of [0, 1]) {
      // the first `passed` reads of the object go through (its last 8 bytes), every one after them is cut
      let seen = 0;
      proxy.cut((request) => request.method === 'GET' && request.url?.startsWith('/exports/tables/users.parquet') === true && ++seen > passed, 0, Infinity);
      const run = await viaProxy(['validate', 's3://exports/tables/users.parquet']);
      expect(run.stderr).toMatch(/^track: s3:\/\/exports\/tables\/users\.parquet: reading bytes \d+-\d+: 5 tries failed, the last with /m);
      expect(run.stderr).not.toMatch(/unreachable|as Parquet/);
      expect(run.status).toBe(3);
    }
    proxy.cut(() => false, 0, 0);
  }, 60_000);

  it('stops with exit 3 and its summary when the retries run out, and resumes without reading settled parts again; a changed part is refused', async () => {
    const emulator = await servers.emulator();
    const upload = ['upload', 's3://exports/parts/*.ndjson.gz', '--url', emulator.url, '--api-key', 'k', '--max-total', '10', '--json'];
    proxy.cut((request) => request.method === 'GET' && request.url?.startsWith(`/exports/${PARTS[2]}`) === true, (request) => (request.headers.range === undefined ? 100 : 0), Infinity);
    const failed = await viaProxy(upload);
    expect(failed.status).toBe(3);
    expect(failed.stderr).toMatch(/s3:\/\/exports\/parts\/part-002\.ndjson\.gz: reading stopped at byte \d+ of \d+; 5 tries failed/);
    expect(JSON.parse(failed.stdout)).toMatchObject({ delivery: { items: { attributes: { accepted: 80 } } } });
    proxy.cut(() => false, 0, 0);

    // a part that changed since its rows were sent is refused, named with its ETag
    await s3.put('exports', PARTS[0], gzipSync(ndjsonOf(USERS.slice(0, 39))));
    const changed = await viaProxy([...upload, '--resume']);
    expect(changed.status).toBe(2);
    expect(changed.stderr).toMatch(/part-000\.ndjson\.gz: changed since the journal .* \(ETag .* -> .*\)/);
    await s3.put('exports', PARTS[0], partBytes(0));

    proxy.requests.length = 0;
    const resumed = await viaProxy([...upload, '--resume']);
    // a run slower than 5 s (a loaded machine) says how far it is on a line, as any run without a terminal
    expect(resumed.stderr.replace(/^\S+Z rows read .*\n/gm, '')).toBe('');
    expect(resumed.status).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ skipped: 80, unread: 80, delivery: { items: { attributes: { accepted: 40 } } } });
    expect(JSON.parse(resumed.stdout).notes).toEqual(
      expect.arrayContaining([expect.stringMatching(/part-000\.ndjson\.gz, \S*part-001\.ndjson\.gz: every row was settled by an earlier run; not read again/)]),
    );
    expect([gets(PARTS[0]), gets(PARTS[1]), gets(PARTS[2])]).toEqual([0, 0, 1]);
    expect(emulator.store.counts().profiles).toBe(120);
  }, 60_000);
});

describe('a run killed after some parts', () => {
  it('resumes without reading the parts it settled', async () => {
    const emulator = await servers.emulator();
    const dir = servers.tmp.dir;
    const args = ['upload', 's3://exports/parts/*.ndjson.gz', '--url', emulator.url, '--api-key', 'k', '--max-total', '10', '--rate', '4', '--quiet'];
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: { ...process.env, ...S3_ENV, AWS_ENDPOINT_URL_S3: s3.endpoint, HOME: dir } });
    const journal = join(dir, 'parts.http-127.0.0.1-' + new URL(emulator.url).port + '.journal');
    // killed once the first part is read and every one of its rows settled
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const parsed = await readJournal(journal).catch(() => undefined);
      if (parsed !== undefined && parsed.files.length > 0 && isWhole(parsed.files[0])) break;
      if (child.exitCode !== null) throw new Error('the run ended before it could be killed');
    }
    child.kill('SIGKILL');
    await new Promise((resolve) => child.on('exit', resolve));

    const proxy = await startCuttingProxy(s3.endpoint);
    try {
      const resumed = await runCliAsync([...args.filter((a) => a !== '--quiet'), '--rate', '1000', '--resume', '--json'], {
        cwd: dir,
        env: { ...S3_ENV, AWS_ENDPOINT_URL_S3: proxy.url, HOME: dir },
      });
      expect(resumed.status).toBe(0);
      const summary = JSON.parse(resumed.stdout);
      expect(summary.skipped).toBeGreaterThanOrEqual(PART_ROWS);
      expect(proxy.requests.filter((r) => r === `GET /exports/${PARTS[0]}`)).toEqual([]);
      expect(proxy.requests.filter((r) => r === `GET /exports/${PARTS[2]}`).length).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
    expect(emulator.store.counts().profiles).toBe(120);
  }, 60_000);
});
