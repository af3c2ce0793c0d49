// upload() of the library: rows in memory and files, the named errors it throws, the options checked
// as the command line checks them; and the README's seeding script, run from the packed package.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryError, InputError, startEmulator, upload, UsageError, type Emulator } from '../../src/index.js';
import { settledThreads, threadsCountable } from '../helpers/processes.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

let emulator: Emulator;
let dir: string;
beforeAll(async () => {
  emulator = await startEmulator();
  dir = await mkdtemp(join(tmpdir(), 'track-library-'));
});
afterAll(async () => {
  await emulator.close();
  await rm(dir, { recursive: true, force: true });
});

async function exported(id: string): Promise<Record<string, any> | undefined> {
  const answer = await fetch(`${emulator.url}/users/export/ids`, {
    method: 'POST',
    headers: { authorization: `Bearer ${emulator.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ external_ids: [id] }),
  });
  return ((await answer.json()) as { users: Record<string, any>[] }).users[0];
}

describe('upload() with rows in memory', () => {
  it('sends an array and an async generator as one stream, lines counted across them, rejects named by line', async () => {
    async function* events() {
      yield { external_id: 'mem-1', name: 'opened', time: '2026-01-01T00:00:00Z' };
      yield { external_id: 'mem-2', name: 'opened', time: 'yesterday' };
    }
    const rejects = join(dir, 'mem.rejects.ndjson');
    const summary = await upload({ inputs: [[{ external_id: 'mem-1', plan: 'gold' }, { external_id: 'mem-2', email: 'not an email' }], events()], url: emulator.url, apiKey: emulator.apiKey, rejects });
    expect(summary.rows).toBe(4);
    expect(summary.rejected).toBe(2);
    expect(summary.delivery?.items.attributes.accepted).toBe(1);
    expect(summary.delivery?.items.events.accepted).toBe(1);
    const lines = (await readFile(rejects, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { line: number });
    expect(lines.map((r) => r.line)).toEqual([2, 4]);
    expect((await exported('mem-1'))?.custom_attributes.plan).toBe('gold');
  });

  it('takes request-shaped objects, a map given as an object, and a dry run sends nothing', async () => {
    const before = emulator.requests({}).length;
    const dry = await upload({ inputs: [[{ attributes: [{ external_id: 'shape-1', tier: 2 }], events: [{ external_id: 'shape-1', name: 'x', time: '2026-01-01T00:00:00Z' }] }]], dryRun: true });
    expect(dry.rows).toBe(1);
    expect(dry.requests).toBe(1);
    expect(dry.delivery).toBeUndefined();
    expect(emulator.requests({}).length).toBe(before);
    const csv = join(dir, 'mapped.csv');
    await writeFile(csv, 'Customer ID,Zip\nc-1,02134\n');
    const summary = await upload({ inputs: [csv], map: { 'Customer ID': 'external_id', Zip: 'zip:string' }, url: emulator.url, apiKey: emulator.apiKey, journal: false });
    expect(summary.delivery?.items.attributes.accepted).toBe(1);
    expect((await exported('c-1'))?.custom_attributes.zip).toBe('02134');
    // the caller's env is only read
    const env = { TRACK_URL: emulator.url, TRACK_API_KEY: emulator.apiKey };
    expect((await upload({ inputs: [csv], map: { 'Customer ID': 'external_id' }, env, journal: false })).delivery?.items.attributes.accepted).toBe(1);
    expect(env).toEqual({ TRACK_URL: emulator.url, TRACK_API_KEY: emulator.apiKey });
  });
});

describe('upload() of files to an emulator this process started', () => {
  it('keeps no journal beside them (each run a new port, each port a new journal), unless asked for one', async () => {
    const folder = await mkdtemp(join(dir, 'journals-'));
    const csv = join(folder, 'users.csv');
    await writeFile(csv, 'external_id,plan\nj-1,trial\nj-2,pro\n');
    for (let run = 0; run < 2; run += 1) {
      const fresh = await startEmulator();
      try {
        const summary = await upload({ inputs: [csv], url: fresh.url, apiKey: fresh.apiKey });
        expect(summary.delivery?.items.attributes).toEqual({ sent: 2, accepted: 2, rejected: 0 });
        expect(summary.journalPath).toBeUndefined();
      } finally {
        await fresh.close();
      }
    }
    expect(await readdir(folder)).toEqual(['users.csv']);
    const journal = join(folder, 'kept.journal');
    const summary = await upload({ inputs: [csv], url: emulator.url, apiKey: emulator.apiKey, journal });
    expect(summary.journalPath).toBe(journal);
    expect((await readdir(folder)).sort()).toEqual(['kept.journal', 'users.csv']);
  });
});

describe('upload() stopped by its signal', () => {
  it('counts every row read as settled or unsettled, a request-shaped row split over two requests unsettled until all of it is answered', async () => {
    // 300 rows of 3 attributes each, one request of 50 items a second, one in flight: rows cross
    // requests, and the stop comes once two are answered
    const rows = Array.from({ length: 300 }, (_, r) => ({ attributes: [0, 1, 2].map((i) => ({ external_id: `stop-${r}-${i}`, plan: 'team' })) }));
    const stop = new AbortController();
    const track = () => emulator.requests({ path: '/users/track', limit: 10_000 }).filter((r) => JSON.stringify(r.body).includes('"stop-'));
    const poll = setInterval(() => {
      if (track().length >= 2) stop.abort();
    }, 5);
    const summary = await upload({ inputs: [rows], url: emulator.url, apiKey: emulator.apiKey, rate: 1, concurrency: 1, signal: stop.signal }).finally(() => clearInterval(poll));
    expect(summary.interrupted).toBe(true);
    expect(summary.rows).toBeGreaterThan(34);
    // a row is settled when each of its items was accepted
    const arrived = new Set(track().flatMap((r) => (r.body as { attributes: Array<{ external_id: string }> }).attributes.map((a) => a.external_id)));
    const whole = rows.filter((row) => row.attributes.every((a) => arrived.has(a.external_id))).length;
    expect(whole).toBeGreaterThan(0);
    expect(summary.rowsUnsettled).toBe(summary.rows - whole);
    expect(summary.rowsNotSent).toBe(summary.rowsUnsettled! - summary.delivery!.rowsAbandoned);
  }, 30_000);
});

describe('upload() errors', () => {
  it('throws a DeliveryError with the summary on a refused key, and leaves the process running', async () => {
    const error = await upload({ inputs: [[{ external_id: 'k-1', a: 1 }]], url: emulator.url, apiKey: 'wrong-key' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).status).toBe(401);
    expect((error as { summary?: { rows: number } }).summary?.rows).toBe(1);
    // the summary holds the error as its fatal: a script can still write it out as JSON
    const written = JSON.parse(JSON.stringify((error as { summary?: unknown }).summary)) as { rows: number; delivery: { fatal: unknown } };
    expect(written.rows).toBe(1);
    expect(written.delivery.fatal).toEqual({ name: 'DeliveryError', status: 401 });
    expect(process.exitCode ?? 0).toBe(0);
  });

  it.each([
    [{ rate: 0 }, /rate: expected a whole number of at least 1, got "0"/],
    [{ ratee: 3 }, /unknown option ratee/],
    [{ delimiter: 'x' }, /^delimiter: expected one of/],
    [{ limits: 'huge' }, /limits: expected one of mau, legacy/],
    [{ dryRun: 'yes' }, /dryRun is true or false/],
    [{ shard: '5/4' }, /shard/],
    [{ map: { Zip: 'zip:nonsense' } }, /map/],
  ])('refuses %o as the command line refuses its flag', async (bad, message) => {
    await expect(upload({ inputs: [[{ external_id: 'x' }]], dryRun: true, ...(bad as object) })).rejects.toThrow(message);
    await expect(upload({ inputs: [[{ external_id: 'x' }]], dryRun: true, ...(bad as object) })).rejects.toBeInstanceOf(UsageError);
  });

  it.skipIf(!threadsCountable)('lets go of the planning thread it started ahead when a check then refuses the run', async () => {
    const csv = join(dir, 'checked.csv');
    await writeFile(csv, 'external_id,a\nt-1,1\n');
    const before = await settledThreads();
    for (let i = 0; i < 3; i += 1) {
      const refused = upload({ inputs: [csv], url: emulator.url, apiKey: emulator.apiKey, rejects: join(dir, 'no-such-dir', 'r.ndjson') });
      await expect(refused).rejects.toThrow(/no-such-dir/);
    }
    expect(await settledThreads()).toBe(before);
  });

  it("tells a caller's iterable that failed as its input that broke off, with the caller's error as its cause", async () => {
    const down = new Error('connection to the CRM lost');
    async function* crm() {
      yield { external_id: 'crm-1', a: 1 };
      yield { external_id: 'crm-2', a: 1 };
      throw down;
    }
    const error = (await upload({ inputs: [[{ external_id: 'crm-0' }], crm()], url: emulator.url, apiKey: emulator.apiKey }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toBe('upload(): inputs[1] failed after 2 rows: connection to the CRM lost');
    expect(error.cause).toBe(down);
    expect((error as { summary?: { rows: number } }).summary?.rows).toBeLessThanOrEqual(3);
    const broken = { *[Symbol.iterator]() { yield { external_id: 'crm-3' }; throw new TypeError('cursor closed'); } };
    const dry = (await upload({ inputs: [broken], dryRun: true }).catch((e: unknown) => e)) as Error;
    expect(dry).toBeInstanceOf(InputError);
    expect(dry.message).toBe('upload(): inputs[0] failed after 1 row: cursor closed');
  });

  it('refuses mixing paths with rows, standard input, and no inputs', async () => {
    await expect(upload({ inputs: ['a.csv', [{ external_id: 'x' }]], dryRun: true })).rejects.toThrow(/not both/);
    await expect(upload({ inputs: ['-'], dryRun: true })).rejects.toThrow(/standard input/);
    await expect(upload({ inputs: [], dryRun: true })).rejects.toThrow(/give inputs/);
    for (const bad of [null, undefined, 'users.csv', ['users.csv']]) await expect(upload(bad as never)).rejects.toBeInstanceOf(UsageError);
    await expect(upload({ inputs: [[{ n: 1n }]], dryRun: true })).rejects.toThrow(/inputs\[0\], row 1: cannot be written as JSON/);
  });
});

describe('the packed package', () => {
  it("runs the README's seeding script with import from 'track-cli'", async () => {
    // the package as npm would install it: the tarball's files, its dependencies beside it
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], { cwd: ROOT });
    const project = join(dir, 'project');
    const modules = join(project, 'node_modules');
    await run('mkdir', ['-p', join(modules, 'track-cli')]);
    await run('tar', ['-xzf', join(dir, stdout.trim().split('\n').pop()!), '-C', join(modules, 'track-cli'), '--strip-components=1']);
    for (const name of await readdir(join(ROOT, 'node_modules'))) {
      if (name.startsWith('.') || name === 'track-cli') continue;
      await symlink(join(ROOT, 'node_modules', name), join(modules, name));
    }
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf('// seed.mjs');
    expect(start).toBeGreaterThan(0);
    await writeFile(join(project, 'seed.mjs'), readme.slice(start, readme.indexOf('```', start)));
    const seeded = await run(process.execPath, ['seed.mjs'], { cwd: project });
    expect(seeded.stdout).toBe('seeded 240 rows\n');
  }, 120_000);
});
