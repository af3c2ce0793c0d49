// The run's records, the --state file and the journal, are never written as another of its files: a
// flag that names one (a typo, a copied command line) is refused before anything is written, and the
// record is left as it was; so is --summary-file after a run that stopped before its checks.
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, rmdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();
const { tmp } = servers;

const digest = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** An emulator (in this process) taking the key `k`, the input `users.csv` of these rows, and `track upload` of it to the emulator with these flags and more. */
async function uploadOf(rows: string, ...flags: string[]): Promise<{ input: string; url: string; up: (args: string[]) => ReturnType<typeof runCliAsync> }> {
  const emu = await servers.emulator();
  const input = join(tmp.dir, 'users.csv');
  writeFileSync(input, `external_id,plan\n${rows}`);
  return { input, url: emu.url, up: (args) => runCliAsync(['upload', input, '--url', emu.url, '--api-key', 'k', '--quiet', ...flags, ...args], { cwd: tmp.dir }) };
}

describe('a run file that names the --state file', () => {
  it('is refused, exit 2, naming the flag and the state, before anything is written: upload, dry run and validate', async () => {
    const state = join(tmp.dir, 'state.sqlite');
    const { input, url, up } = await uploadOf('u1,pro\nu2,team\n', '--state', state);
    expect((await up(['--delta'])).status).toBe(0);
    const held = digest(state);
    // another name of the same file is the same file
    const link = join(tmp.dir, 'state-link.sqlite');
    symlinkSync(state, link);
    for (const flag of ['--rejects', '--out', '--events', '--report', '--summary-file', '--journal']) {
      for (const named of [state, link]) {
        const r = await up(['--delta', '--restart', flag, named]);
        expect(r.status, `${flag} ${named}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(`${flag} ${named} is the --state file`);
        expect(digest(state), `${flag} ${named}`).toBe(held);
      }
    }
    for (const flag of ['--out', '--events', '--summary-file', '--rejects']) {
      const dry = await up(['--dedupe-events', '--dry-run', flag, state]);
      expect(dry.status, `--dry-run ${flag}: ${dry.stderr}`).toBe(2);
      expect(dry.stderr).toContain(`${flag} ${state} is the --state file`);
      const check = await runCliAsync(['validate', input, '--delta', '--url', url, '--state', state, flag, state], { cwd: tmp.dir });
      expect(check.status, `validate ${flag}: ${check.stderr}`).toBe(2);
      expect(check.stderr).toContain(`${flag} ${state} is the --state file`);
      expect(digest(state), `dry run ${flag}`).toBe(held);
    }
    // an option mistyped stops the run before its checks: its --summary-file is not written over the state
    const early = await up(['--delta', '--summary-file', state, '--concurrency', '0']);
    expect(early.status).toBe(2);
    expect(early.stderr).toContain(`--summary-file ${state}: not written`);
    expect(digest(state)).toBe(held);
    // the state still knows both users: an unchanged run sends nothing
    const again = await up(['--delta', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ exitStatus: 0, unchanged: 2 });
  });

  it('and the journal: refused, exit 2, naming the flag and the journal, which is left as it was', async () => {
    const journal = join(tmp.dir, 'run.journal');
    const { up } = await uploadOf('u1,pro\n,no-id\n', '--journal', journal);
    expect((await up([])).status).toBe(1);
    const held = digest(journal);
    for (const flag of ['--rejects', '--out', '--events', '--report', '--summary-file']) {
      const r = await up(['--restart', flag, journal]);
      expect(r.status, `${flag}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`${flag} ${journal} is the --journal file ${journal}: writing it would destroy the journal of the run`);
      expect(digest(journal), flag).toBe(held);
    }
    const early = await up(['--summary-file', journal, '--resmue']);
    expect(early.status).toBe(2);
    expect(early.stderr).toContain(`--summary-file ${journal}: not written`);
    expect(digest(journal)).toBe(held);
    // two outputs in one file are refused the same way
    const mixed = await up(['--restart', '--events', join(tmp.dir, 'both.ndjson'), '--summary-file', join(tmp.dir, 'both.ndjson')]);
    expect(mixed.status).toBe(2);
    expect(mixed.stderr).toContain(`--events and --summary-file name the same file ${join(tmp.dir, 'both.ndjson')}`);
  });
});

describe('a run file that names a state file or a journal the run does not use', () => {
  it('is refused, exit 2, and the file left as it was: an upload without --delta beside its state, another run journal, a journal that is a state file', async () => {
    const state = join(tmp.dir, 'track-state.sqlite');
    const { input, up } = await uploadOf('u1,pro\nu2,team\n');
    expect((await up(['--delta', '--journal', join(tmp.dir, 'other.journal')])).status).toBe(0);
    const held = { state: digest(state), journal: digest(join(tmp.dir, 'other.journal')) };
    for (const [name, record] of [[state, 'a SQLite database'], [join(tmp.dir, 'other.journal'), 'a resume journal']] as const) {
      for (const flag of ['--summary-file', '--events', '--report', '--rejects', '--out']) {
        // no --delta: the state is not the run's; a journal of its own, not this one
        const r = await up(['--journal', join(tmp.dir, 'this.journal'), '--restart', flag, name]);
        expect(r.status, `${flag} ${name}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(`${flag} ${name} is ${record}`);
      }
      const check = await runCliAsync(['validate', input, '--summary-file', name], { cwd: tmp.dir });
      expect(check.status, `validate: ${check.stderr}`).toBe(2);
    }
    // nor is the journal a state file: read as a journal, it was damaged, and --restart wrote over it
    for (const how of [[], ['--restart'], ['--resume-or-start']]) {
      const r = await up(['--journal', state, ...how]);
      expect(r.status, `--journal ${how}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`--journal ${state} is a SQLite database`);
    }
    expect(digest(state)).toBe(held.state);
    expect(digest(join(tmp.dir, 'other.journal'))).toBe(held.journal);
  });
});

describe('a run file that names the --map file', () => {
  it('is refused, exit 2, and the map left as it was, also when the run stops before its checks', async () => {
    const map = join(tmp.dir, 'map.json');
    writeFileSync(map, '{"plan":"plan"}\n');
    const { up } = await uploadOf('u1,pro\n', '--no-journal', '--map', map);
    for (const flag of ['--summary-file', '--events', '--report', '--rejects', '--out']) {
      const r = await up([flag, map]);
      expect(r.status, `${flag}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`${flag} ${map} is the --map file ${map}: writing it would destroy the column map the run reads`);
      expect(readFileSync(map, 'utf8'), flag).toBe('{"plan":"plan"}\n');
    }
    const early = await up(['--summary-file', map, '--concurrency', '0']);
    expect(early.status).toBe(2);
    expect(early.stderr).toContain(`--summary-file ${map}: not written`);
    expect(readFileSync(map, 'utf8')).toBe('{"plan":"plan"}\n');
  });
});

describe('an input named twice', () => {
  it('is refused, exit 2, before anything is sent or written: by one name, by another, through a link; upload, dry run and validate', async () => {
    const emu = await servers.emulator();
    const events = join(tmp.dir, 'events.csv');
    writeFileSync(events, 'external_id,name,time\nu1,signup,2026-01-01T00:00:00Z\nu2,signup,2026-01-01T00:00:00Z\n');
    symlinkSync(events, join(tmp.dir, 'events-link.csv'));
    linkSync(events, join(tmp.dir, 'events-hard.csv'));
    writeFileSync(join(tmp.dir, 'other.csv'), 'external_id,name,time\nu3,signup,2026-01-01T00:00:00Z\n');
    const cases: Array<[string[], string]> = [
      [['events.csv', 'events.csv'], 'events.csv is given twice; give each file once'],
      [['events.csv', 'other.csv', './events.csv'], 'events.csv and ./events.csv are the same file; give each file once'],
      [['events.csv', 'events-link.csv'], 'events.csv and events-link.csv are the same file; give each file once'],
      [['events-hard.csv', events], `events-hard.csv and ${events} are the same file; give each file once`],
    ];
    for (const [inputs, message] of cases) {
      for (const command of [['upload', '--url', emu.url, '--api-key', 'k'], ['upload', '--dry-run'], ['validate']]) {
        const r = await runCliAsync([command[0], ...inputs, ...command.slice(1), '--kind', 'events', '--quiet'], { cwd: tmp.dir });
        expect(r.status, `${command.join(' ')} ${inputs.join(' ')}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(message);
      }
    }
    // standard input redirected from one of the files (`< events.csv`), and /dev/stdin beside it
    for (const [inputs, message] of [
      [['events.csv', '-'], 'events.csv and standard input (-) are the same file; give each file once'],
      [['-', '/dev/stdin'], 'standard input (-) and /dev/stdin are the same file; give each file once'],
    ] as const) {
      // (the emulator answers from this process: the CLI runs beside it, not in a call that blocks it)
      const fd = openSync(events, 'r');
      const child = spawn(process.execPath, [BIN, 'upload', ...inputs, '--format', 'csv', '--kind', 'events', '--url', emu.url, '--api-key', 'k', '--quiet'], { cwd: tmp.dir, stdio: [fd, 'ignore', 'pipe'] });
      closeSync(fd);
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [status] = (await once(child, 'close')) as [number | null];
      expect(status, `${inputs.join(' ')}: ${stderr}`).toBe(2);
      expect(stderr).toContain(message);
    }
    // a seed too, in its own words
    const seeded = await runCliAsync(['emulate', '--port', '0', '--seed', 'events.csv', '--seed', './events.csv', '--exec', 'echo never run'], { cwd: tmp.dir });
    expect(seeded.status).toBe(2);
    expect(seeded.stdout).not.toContain('never run');
    expect(seeded.stderr).toContain('--seed events.csv and ./events.csv are the same file; give each file once');
    // what is not a file is refused for what it is, not as given twice
    mkdirSync(join(tmp.dir, 'events-folder'));
    const folder = await runCliAsync(['validate', 'events-folder', 'events-folder/', '--format', 'csv'], { cwd: tmp.dir });
    expect(folder.status).toBe(2);
    expect(folder.stderr).toContain('events-folder: is not a file');
    rmdirSync(join(tmp.dir, 'events-folder'));
    expect(await emu.requests({})).toEqual([]);
    // nothing beside the inputs was written: no journal, no rejects file
    expect(readdirSync(tmp.dir).filter((name) => !name.startsWith('events') && name !== 'other.csv')).toEqual([]);
    // the same rows in two files are two inputs
    writeFileSync(join(tmp.dir, 'copy.csv'), readFileSync(events));
    const both = await runCliAsync(['upload', 'events.csv', 'copy.csv', '--dry-run', '--kind', 'events', '--json'], { cwd: tmp.dir });
    expect(JSON.parse(both.stdout)).toMatchObject({ exitStatus: 0, items: { events: 4 } });
  });
});
