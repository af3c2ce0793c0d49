// The re-run guard against what people do between runs, through the real CLI against an emulator on
// loopback: a shard given another shard's journal, a second run while the first is still sending,
// two files sharing a name but not an extension, an input changed after a kill, a link to a file
// already sent, and a retry of a finished run that rejected rows.
import { spawn } from 'node:child_process';
import { chmodSync, linkSync, mkdirSync, readFileSync, readdirSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/index.js';
import { BIN, runCliAsync as runCli } from '../helpers/cli.js';
import { range, storedNs, writeEventsCsv } from '../helpers/events.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator } = useServers();

const up = (args: string[]) => runCli(['upload', ...args, '--api-key', 'k'], { cwd: tmp.dir });
const journals = () => readdirSync(tmp.dir).filter((name) => name.endsWith('.journal'));

/** Starts an upload in the background and kills it (kill -9) once the emulator holds `events` events; `keep` leaves it running. */
async function killedRun(emu: Emulator, args: string[], events = 300, keep = false) {
  const child = spawn(process.execPath, [BIN, 'upload', ...args, '--api-key', 'k', '--concurrency', '1', '--max-total', '20', '--quiet'], { cwd: tmp.dir, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  while (emu.store.counts().events < events) await new Promise((r) => setTimeout(r, 10));
  if (!keep) {
    child.kill('SIGKILL');
    await exited;
  }
  return { child, exited };
}

describe('a journal of several inputs', () => {
  it('is not resumed by a run that leaves out one whose rows it has not all settled (it would end complete, those rows never sent)', async () => {
    const emu = await emulator();
    const a = writeEventsCsv(tmp.dir, 2000, 'a.csv');
    const b = writeEventsCsv(tmp.dir, 50, 'b.csv');
    await killedRun(emu, [a, b, '--url', emu.url, '--journal', 'ab.journal']);
    for (const how of ['--resume', '--resume-or-start']) {
      const part = await up([a, '--url', emu.url, '--journal', 'ab.journal', how]);
      expect(part.status, `${how}: ${part.stderr}`).toBe(2);
      expect(part.stderr).toContain(`this run leaves out ${b}, whose rows it has not all settled`);
    }
    expect(readFileSync(join(tmp.dir, 'ab.journal'), 'utf8')).not.toContain('"complete":true');
    // the run of both inputs resumes it, and every row of both is stored once
    expect((await up([a, b, '--url', emu.url, '--journal', 'ab.journal', '--resume', '--quiet'])).status).toBe(0);
    expect(storedNs(emu).length).toBeGreaterThanOrEqual(2050);
  }, 60_000);
});

describe('a journal holds one shard', () => {
  it('is resumed by no other shard, nor by a run of every row, and says which shard it holds', async () => {
    const emu = await emulator();
    const file = writeEventsCsv(tmp.dir, 400, 'sk.csv', { users: 400 });
    expect((await up([file, '--url', emu.url, '--shard', '1/2', '--journal', 'jone.journal', '--quiet'])).status).toBe(0);
    const shardOne = storedNs(emu);
    expect(shardOne.length).toBeGreaterThan(100);
    expect(shardOne.length).toBeLessThan(300);
    for (const how of ['--resume', '--resume-or-start', undefined]) {
      const other = await up([file, '--url', emu.url, '--shard', '2/2', '--journal', 'jone.journal', ...(how === undefined ? [] : [how])]);
      expect(other.status, `${how}: ${other.stderr}`).toBe(2);
      expect(other.stderr).toContain('jone.journal');
      expect(other.stderr).toMatch(/--shard 1\/2.*--shard 2\/2/s);
    }
    const every = await up([file, '--url', emu.url, '--journal', 'jone.journal', '--resume']);
    expect(every.status).toBe(2);
    expect(every.stderr).toMatch(/--shard 1\/2.*every row/s);
    expect(storedNs(emu)).toEqual(shardOne);
    // the shard's own run resumes it
    expect(JSON.parse((await up([file, '--url', emu.url, '--shard', '1/2', '--journal', 'jone.journal', '--resume', '--json'])).stdout).requests).toBe(0);
  });

  it('of an earlier version, which names no shard, still resumes for a run of every row; a shard is refused it under another name', async () => {
    const emu = await emulator();
    const file = writeEventsCsv(tmp.dir, 100, 'old.csv');
    expect((await up([file, '--url', emu.url, '--journal', 'old.journal', '--quiet'])).status).toBe(0);
    // a journal of every row is no shard's
    const shardOfEvery = await up([file, '--url', emu.url, '--shard', '1/2', '--journal', 'old.journal', '--resume']);
    expect(shardOfEvery.status).toBe(2);
    expect(shardOfEvery.stderr).toMatch(/old\.journal holds the upload of every row \(no --shard\), not of this run's --shard 1\/2/);
    const path = join(tmp.dir, 'old.journal');
    const [head, ...rest] = readFileSync(path, 'utf8').split('\n');
    const { shard, ...earlier } = JSON.parse(head) as Record<string, unknown>;
    expect(shard).toBeNull();
    writeFileSync(path, [JSON.stringify(earlier), ...rest].join('\n'));
    const sharded = await up([file, '--url', emu.url, '--shard', '1/2', '--journal', 'old.journal', '--resume']);
    expect(sharded.status).toBe(2);
    expect(sharded.stderr).toMatch(/old\.journal.*earlier version.*shard/s);
    const resumed = await up([file, '--url', emu.url, '--journal', 'old.journal', '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ skipped: 100, requests: 0 });
    expect(storedNs(emu)).toEqual(range(100));
  });
});

describe('one run at a time on a journal', () => {
  it('refuses a second run while the first is sending, naming its process, and takes over the lock of a killed one', async () => {
    const emu = await emulator({ latency: '20' });
    const file = writeEventsCsv(tmp.dir, 2000, 'ev3.csv');
    const { child, exited } = await killedRun(emu, [file, '--url', emu.url], 40, true);
    for (const how of [['--resume'], [], ['--resume-or-start'], ['--restart']]) {
      const second = await up([file, '--url', emu.url, ...how]);
      expect(second.status, `${how.join(' ')}: ${second.stderr}`).toBe(2);
      expect(second.stderr).toContain(`ev3.csv.http-127.0.0.1-${new URL(emu.url).port}.journal`);
      expect(second.stderr).toContain(`pid ${child.pid}`);
      expect(second.stderr).toMatch(/wait for it to end/);
      expect(second.stderr).not.toMatch(/interrupted/);
    }
    // a dry run keeps no journal, and takes no lock
    expect((await runCli(['validate', file, '--quiet'], { cwd: tmp.dir })).status).toBe(0);
    expect((await up([file, '--dry-run', '--quiet'])).status).toBe(0);
    child.kill('SIGKILL');
    await exited;
    const resumed = await up([file, '--url', emu.url, '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    const ns = storedNs(emu);
    expect(new Set(ns).size).toBe(2000);
    // only rows the killed run left in flight are stored twice, and the resumed run counts them
    const twice = JSON.parse(resumed.stdout).rowsPossiblyDuplicated;
    expect(twice).toBeLessThan(400);
    expect(ns.length).toBeLessThanOrEqual(2000 + twice);
  });
});

/** A --resume of the run killedRun() killed: it reads that run's journal, and every row is stored, twice only if counted so. */
async function resumesKilledRun(emu: Emulator, file: string): Promise<void> {
  const resumed = await up([file, '--url', emu.url, '--resume', '--json']);
  expect(resumed.status, resumed.stderr).toBe(0);
  // rows the killed run settled are left out, and rows it left in flight counted
  const { skipped, rowsPossiblyDuplicated } = JSON.parse(resumed.stdout);
  expect(skipped + rowsPossiblyDuplicated).toBeGreaterThan(0);
  expect(new Set(storedNs(emu)).size).toBe(1000);
  expect(storedNs(emu).length).toBeLessThanOrEqual(1000 + rowsPossiblyDuplicated);
}

describe('journals of other files', () => {
  it('users.csv and users.ndjson keep journals of their own', async () => {
    const emu = await emulator({ latency: '10' });
    const csv = writeEventsCsv(tmp.dir, 1000, 'people.csv');
    await killedRun(emu, [csv, '--url', emu.url]);
    writeFileSync(join(tmp.dir, 'people.ndjson'), '{"external_id":"jn1","plan":"x"}\n');
    const ndjson = await up(['people.ndjson', '--url', emu.url, '--json']);
    expect(ndjson.status, ndjson.stderr).toBe(0);
    expect(JSON.stringify(JSON.parse(ndjson.stdout).notes ?? [])).not.toMatch(/replaced/);
    expect(journals().sort()).toEqual([expect.stringMatching(/^people\.csv\.http-/), expect.stringMatching(/^people\.ndjson\.http-/)]);
    await resumesKilledRun(emu, csv);
  });

  it('an earlier version’s journal, named without the extension, is resumed for the same files', async () => {
    const emu = await emulator({ latency: '10' });
    const csv = writeEventsCsv(tmp.dir, 1000, 'people.csv');
    await killedRun(emu, [csv, '--url', emu.url]);
    const [name] = journals();
    renameSync(join(tmp.dir, name), join(tmp.dir, name.replace('people.csv.', 'people.')));
    const plain = await up([csv, '--url', emu.url]);
    expect(plain.status).toBe(2);
    expect(plain.stderr).toContain(`its journal is ${join(tmp.dir, name.replace('people.csv.', 'people.'))}`);
    await resumesKilledRun(emu, csv);
  });

  it('an unfinished journal is not replaced by a run of other files, and --resume of other files is refused', async () => {
    const emu = await emulator({ latency: '10' });
    const qa = writeEventsCsv(tmp.dir, 1000, 'qa.csv');
    const qb = writeEventsCsv(tmp.dir, 50, 'qb.csv');
    await killedRun(emu, [qa, '--url', emu.url, '--journal', 'J']);
    const before = readFileSync(join(tmp.dir, 'J'), 'utf8');
    const stored = storedNs(emu).length;
    const other = await up([qb, '--url', emu.url, '--journal', 'J']);
    expect(other.status).toBe(2);
    expect(other.stderr).toMatch(/the journal J .*qa\.csv.*was interrupted/s);
    expect(other.stderr).toMatch(/--journal.*--restart/s);
    const resumed = await up([qb, '--url', emu.url, '--journal', 'J', '--resume']);
    expect(resumed.status).toBe(2);
    expect(resumed.stderr).toMatch(/holds no upload of .*qb\.csv/);
    expect(readFileSync(join(tmp.dir, 'J'), 'utf8')).toBe(before);
    expect(storedNs(emu)).toHaveLength(stored);
    // said what to do, it goes
    expect((await up([qb, '--url', emu.url, '--journal', 'J', '--restart', '--quiet'])).status).toBe(0);
  });
});

describe('an input changed after a run that did not finish', () => {
  it('is refused by a plain run too, which says --restart may send rows twice', async () => {
    const emu = await emulator({ latency: '10' });
    const file = writeEventsCsv(tmp.dir, 1000, 'evr.csv');
    await killedRun(emu, [file, '--url', emu.url]);
    const stored = storedNs(emu).length;
    const later = new Date(Date.now() + 5000);
    utimesSync(file, later, later);
    for (const how of [['--resume'], ['--resume-or-start'], []]) {
      const r = await up([file, '--url', emu.url, ...how]);
      expect(r.status, how.join(' ')).toBe(2);
    }
    const plain = await up([file, '--url', emu.url]);
    expect(plain.stderr).toMatch(/changed since/);
    expect(plain.stderr).toMatch(/--restart.*twice/s);
    expect(storedNs(emu)).toHaveLength(stored);
  });
});

describe('a link to a file already sent', () => {
  it('is refused as the file itself is', async () => {
    const emu = await emulator();
    mkdirSync(join(tmp.dir, 'a'));
    const file = writeEventsCsv(join(tmp.dir, 'a'), 50, 'x.csv');
    expect((await up([file, '--url', emu.url, '--quiet'])).status).toBe(0);
    symlinkSync(join('a', 'x.csv'), join(tmp.dir, 'lx.csv'));
    const linked = await up(['lx.csv', '--url', emu.url]);
    expect(linked.status).toBe(2);
    expect(linked.stderr).toMatch(/its journal is .*a\/x\.csv\.http-/);
    expect(storedNs(emu)).toEqual(range(50));
    const resumed = await up(['lx.csv', '--url', emu.url, '--resume', '--journal', linked.stderr.match(/its journal is (\S+?\.journal)/)![1], '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ skipped: 50, requests: 0 });
  });
});

describe('a retry of a finished run that rejected rows', () => {
  it('exits 1 again and names the rejects file', async () => {
    const emu = await emulator();
    const file = writeEventsCsv(tmp.dir, 40, 'm3.csv', { bad: (i) => i % 10 === 3 });
    const args = [file, '--url', emu.url, '--resume-or-start', '--summary-file', 's3.json'];
    const first = await up(args);
    expect(first.status).toBe(1);
    for (const extra of [[], ['--json']]) {
      const again = await up([...args, ...extra]);
      expect(again.status).toBe(1);
      const summary = JSON.parse(readFileSync(join(tmp.dir, 's3.json'), 'utf8'));
      expect(summary).toMatchObject({ exitStatus: 1, rejected: 4, rejectsPath: expect.stringContaining('m3') });
      if (extra.length === 0) expect(again.stderr + again.stdout).toMatch(/rejected +4 rows by an earlier run, written to .*m3/);
    }
    expect(storedNs(emu)).toHaveLength(36);
  });
});

describe('a run killed while it replaces the journal before', () => {
  it('leaves that journal in place until its own holds its head: the next run is refused as before, and one the user deleted stays deleted', async () => {
    const emu = await emulator();
    const file = writeEventsCsv(tmp.dir, 40, 'kept.csv');
    const journal = join(tmp.dir, 'kept.journal');
    expect((await up([file, '--url', emu.url, '--journal', 'kept.journal', '--quiet'])).status).toBe(0);
    const stored = storedNs(emu).length;
    const finished = readFileSync(journal, 'utf8');
    const refused = await up([file, '--url', emu.url, '--journal', 'kept.journal']);
    expect(refused.status).toBe(2);
    // a run with --restart killed after keeping the journal aside, or after writing its own head beside it: the journal is the one before
    linkSync(journal, `${journal}.before.journal`);
    writeFileSync(`${journal}.99999.partial`, '{"track":"journal"}\n');
    const again = await up([file, '--url', emu.url, '--journal', 'kept.journal']);
    expect(again.status, again.stderr).toBe(2);
    expect(again.stderr).toBe(refused.stderr);
    expect(readFileSync(journal, 'utf8')).toBe(finished);
    expect(storedNs(emu)).toHaveLength(stored);
    // the journal deleted on purpose beside what a killed run left: a new run, every row sent
    rmSync(journal);
    expect((await up([file, '--url', emu.url, '--journal', 'kept.journal', '--quiet'])).status).toBe(0);
    expect(storedNs(emu)).toHaveLength(stored * 2);
    expect(readFileSync(journal, 'utf8')).toContain('"complete":true');
    // what the killed run left beside it is gone
    expect(readdirSync(tmp.dir).filter((name) => name.startsWith('kept.journal'))).toEqual(['kept.journal']);
  });

  it('takes the journal kept aside for a second name of its own, and refuses a journal of a name the user gave it too (a hard link): exit 2, nothing sent', async () => {
    const emu = await emulator();
    const file = writeEventsCsv(tmp.dir, 20, 'named.csv');
    const journal = join(tmp.dir, 'named.journal');
    expect((await up([file, '--url', emu.url, '--journal', 'named.journal', '--quiet'])).status).toBe(0);
    const stored = storedNs(emu).length;
    // a restart killed between keeping the journal aside and replacing it: the journal has two names, both the program's
    linkSync(journal, `${journal}.before.journal`);
    // and one of the user's
    linkSync(journal, join(tmp.dir, 'other.journal'));
    // (every name counted in what it says; through the user's name, the one kept aside is another name too)
    for (const name of ['named.journal', 'other.journal']) {
      const refused = await up([file, '--url', emu.url, '--journal', name, '--restart']);
      expect(refused.status, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(`${realpathSync(tmp.dir)}/${name} has 3 names (hard links), and the lock that keeps a second run off the journal is kept beside one of them only`);
    }
    expect(storedNs(emu)).toHaveLength(stored);
    // the user's name removed: the restart goes on, as over any journal kept aside
    rmSync(join(tmp.dir, 'other.journal'));
    const restarted = await up([file, '--url', emu.url, '--journal', 'named.journal', '--restart', '--quiet']);
    expect(restarted.status, restarted.stderr).toBe(0);
    expect(storedNs(emu)).toHaveLength(stored * 2);
    expect(readdirSync(tmp.dir).filter((name) => name.startsWith('named.journal'))).toEqual(['named.journal']);
  });

  it('leaves no file of its own beside the journal once a --restart replaced it, nor touches one of like name; the journal keeps its mode', async () => {
    const emu = await emulator();
    const file = writeEventsCsv(tmp.dir, 20, 'swap.csv');
    const journal = join(tmp.dir, 'swap.journal');
    expect((await up([file, '--url', emu.url, '--journal', 'swap.journal', '--quiet'])).status).toBe(0);
    const finished = readFileSync(journal, 'utf8');
    chmodSync(journal, 0o600);
    // a person's file (or another run's journal) under a name like those the run writes beside its journal
    writeFileSync(`${journal}.new`, 'a file of its own\n');
    const restarted = await up([file, '--url', emu.url, '--journal', 'swap.journal', '--restart', '--quiet']);
    expect(restarted.status, restarted.stderr).toBe(0);
    expect(readFileSync(journal, 'utf8')).not.toBe(finished);
    expect(statSync(journal).mode & 0o777).toBe(0o600);
    expect(readFileSync(`${journal}.new`, 'utf8')).toBe('a file of its own\n');
    expect(readdirSync(tmp.dir).filter((name) => name.startsWith('swap.journal')).sort()).toEqual(['swap.journal', 'swap.journal.new']);
  });
});
