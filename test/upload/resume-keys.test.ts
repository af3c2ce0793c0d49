// A journal and the API key of the run it holds, through the real CLI against the emulator of two
// workspaces sharing one URL: a run under another key does not resume it (it would leave out the
// rows that run settled, which went to the other workspace), unless the delta state ties both keys to
// the target; its own --journal lets it go; the key is kept as its fingerprint, never the key.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/index.js';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator } = useServers();

const STAGING = 'staging-key-7f3a9c1e';
const PROD = 'production-key-b52d04e8';
const fingerprint = (key: string): string => `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;

const run = (args: string[], env: Record<string, string> = {}) => runCliAsync(args, { cwd: tmp.dir, env: { TRACK_API_KEY: '', TRACK_URL: '', ...env } });
const up = (key: string, args: string[]) => run(['upload', ...args, '--api-key', key, '--json']);
const usersCsv = (n: number): string => {
  const path = join(tmp.dir, 'users.csv');
  writeFileSync(path, `external_id,plan\n${Array.from({ length: n }, (_, i) => `u${i},free`).join('\n')}\n`);
  return path;
};
/** The emulator of two workspaces, and a file of n users uploaded whole through the staging key (its journal beside it). */
/** A run that resumed a journal whose every row was settled: it ends well and sends nothing (`seen`: the requests before it). */
function resumedWhole(result: Awaited<ReturnType<typeof up>>, emu: Emulator, seen: number, status = 0): void {
  expect(result.status, result.stderr).toBe(status);
  expect(JSON.parse(result.stdout).notes.join('\n')).toMatch(/every row was settled by an earlier run/);
  expect(emu.requests().length).toBe(seen);
}

async function uploadedThroughStaging(n: number, extra: string[]): Promise<{ emu: Emulator; file: string }> {
  const emu = await emulator({ apiKeys: [STAGING, PROD] });
  const file = usersCsv(n);
  const r = await up(STAGING, [file, '--url', emu.url, ...extra]);
  expect(r.status, r.stderr).toBe(0);
  return { emu, file };
}

describe('a journal of a run under one API key', () => {
  it('is not resumed by a run under another key (--resume, --resume-or-start, with or without a state of its own): exit 2, nothing posted', async () => {
    const { emu, file } = await uploadedThroughStaging(40, ['--delta', '--state', 'staging.sqlite']);
    const journal = readdirJournal();
    expect(readFileSync(join(tmp.dir, journal), 'utf8')).toContain(fingerprint(STAGING));
    expect(readFileSync(join(tmp.dir, journal), 'utf8')).not.toContain(STAGING);
    const seen = emu.requests().length;
    for (const args of [
      ['--delta', '--state', 'production.sqlite', '--resume-or-start'],
      ['--delta', '--state', 'production.sqlite', '--resume'],
      ['--resume-or-start'],
      ['--resume'],
    ]) {
      const r = await up(PROD, [file, '--url', emu.url, ...args]);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`the journal ${join(tmp.dir, journal)} holds an upload to ${emu.url}/users/track under another API key (${fingerprint(STAGING)}), not this one (${fingerprint(PROD)})`);
      expect(r.stderr).toMatch(/give this upload its own --journal/);
      expect(r.stderr).not.toContain(PROD);
    }
    expect(emu.requests().length).toBe(seen);

    // its own journal: every row goes
    const own = await up(PROD, [file, '--url', emu.url, '--delta', '--state', 'production.sqlite', '--journal', 'production.journal', '--resume-or-start']);
    expect(own.status, own.stderr).toBe(0);
    expect(JSON.parse(own.stdout)).toMatchObject({ items: { attributes: 40 } });
  });

  it('is resumed by another key that the delta state ties to the target (track state --add-key), and by its own key', async () => {
    const { emu, file } = await uploadedThroughStaging(30, ['--delta', '--state', 'shared.sqlite']);
    const same = await up(STAGING, [file, '--url', emu.url, '--delta', '--state', 'shared.sqlite', '--resume-or-start']);
    expect(same.status, same.stderr).toBe(0);
    const seen = emu.requests().length;
    // before the key is recorded, the refusal says how
    const refused = await up(PROD, [file, '--url', emu.url, '--delta', '--state', 'shared.sqlite', '--resume']);
    expect(refused.status, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`record it in the state that run learned into with \`track state --state shared.sqlite --add-key ${emu.url}/users/track\` and resume`);
    const added = await run(['state', '--state', 'shared.sqlite', '--add-key', emu.url, '--api-key', PROD]);
    expect(added.status, added.stderr).toBe(0);
    resumedWhole(await up(PROD, [file, '--url', emu.url, '--delta', '--state', 'shared.sqlite', '--resume']), emu, seen);
  });

  it('of a run whose key the server refused, which rejected a row before sending, is started anew by the right key, whose own retries then resume it', async () => {
    const emu = await emulator({ apiKeys: [STAGING, PROD] });
    const file = usersCsv(25);
    writeFileSync(file, readFileSync(file, 'utf8').replace('\nu3,free\n', '\n,free\n'));
    const mistyped = await up('staging-key-mistyped', [file, '--url', emu.url, '--resume-or-start']);
    expect(mistyped.status).toBe(3);
    const journal = join(tmp.dir, readdirJournal());
    // the row without an identifier was settled (rejected) before anything was sent
    expect(readFileSync(journal, 'utf8')).toContain('{"file":0,"lines":[[5,5]]}');
    const right = await up(STAGING, [file, '--url', emu.url, '--resume-or-start']);
    expect(right.status, right.stderr).toBe(1);
    expect(JSON.parse(right.stdout)).toMatchObject({ items: { attributes: 24 } });
    expect(JSON.parse(right.stdout).notes).toContain(
      `the journal ${journal} held a run under another API key (${fingerprint('staging-key-mistyped')}) that sent nothing (the server refused what it sent unapplied): this run started anew`,
    );
    expect(readFileSync(journal, 'utf8').split('\n')[0]).toContain(fingerprint(STAGING));
    expect(readFileSync(join(tmp.dir, 'users.csv.rejects.ndjson'), 'utf8').trim().split('\n')).toHaveLength(1);
    // the scheduler's next retry with the right key resumes the run it holds: nothing is sent again,
    // and the row it rejected still counts (exit 1)
    const seen = emu.requests().length;
    resumedWhole(await up(STAGING, [file, '--url', emu.url, '--resume-or-start']), emu, seen, 1);
  });

  it('of a run whose key the server refused (it settled nothing) is resumed by the right key, which sends every row', async () => {
    const emu = await emulator({ apiKeys: [STAGING, PROD] });
    const file = usersCsv(25);
    const mistyped = await up('staging-key-mistyped', [file, '--url', emu.url, '--resume-or-start']);
    expect(mistyped.status).not.toBe(0);
    expect(mistyped.stderr).toMatch(/refused the API key/);
    expect(readFileSync(join(tmp.dir, readdirJournal()), 'utf8')).toContain(fingerprint('staging-key-mistyped'));
    const right = await up(STAGING, [file, '--url', emu.url, '--resume-or-start']);
    expect(right.status, right.stderr).toBe(0);
    expect(JSON.parse(right.stdout)).toMatchObject({ items: { attributes: 25 } });
  });
});

describe('a journal of a run under another API key, and the re-run guard', () => {
  it('refuses a run without --resume under another key with the ways on that work (its own --journal, --restart), not --resume', async () => {
    const { emu, file } = await uploadedThroughStaging(20, []);
    const journal = join(tmp.dir, readdirJournal());
    const seen = emu.requests().length;
    const r = await up(PROD, [file, '--url', emu.url]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`an upload of ${file} to ${emu.url}/users/track under another API key (${fingerprint(STAGING)}), not this one (${fingerprint(PROD)}), completed on `);
    expect(r.stderr).toContain(`; its journal is ${journal}.\n`);
    expect(r.stderr).toMatch(/if this key is of another workspace, give this upload its own --journal; if it is of the same\nworkspace \(a new key\), give --restart/);
    expect(r.stderr).not.toMatch(/--resume/);
    // a key that cannot be sent is said so, before the journal is compared with it
    for (const key of ['', 'clé-secrète']) {
      const bad = await up(key, [file, '--url', emu.url]);
      expect(bad.status, bad.stderr).toBe(2);
      expect(bad.stderr).toMatch(key === '' ? /an API key is required/ : /the API key holds characters that cannot be sent in a header/);
      expect(bad.stderr).not.toMatch(/another API key/);
    }
    // the way it gives goes
    const own = await up(PROD, [file, '--url', emu.url, '--journal', 'production.journal']);
    expect(own.status, own.stderr).toBe(0);
    expect(JSON.parse(own.stdout)).toMatchObject({ items: { attributes: 20 } });
    expect(emu.requests().length).toBeGreaterThan(seen);
  });
});

describe('a journal of an earlier version, which names no API key', () => {
  it('is resumed by a run with a key, which says so and ties it to that key: a run under another key then does not resume it', async () => {
    const { emu, file } = await uploadedThroughStaging(30, []);
    const journal = join(tmp.dir, readdirJournal());
    // the header as the version before kept it: no key
    const lines = readFileSync(journal, 'utf8').split('\n');
    const header = JSON.parse(lines[0]) as Record<string, unknown>;
    delete header.key;
    writeFileSync(journal, [JSON.stringify(header), ...lines.slice(1)].join('\n'));
    const resumed = await up(STAGING, [file, '--url', emu.url, '--resume']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).notes).toContain(
      `the journal ${journal} was written by an earlier version of track, which kept no API key: this run resumed it and tied it to this run's key (${fingerprint(STAGING)}); ` +
        "if the run it holds was under another workspace's key, this run left out the rows that run settled: send them with its own --journal",
    );
    const seen = emu.requests().length;
    const other = await up(PROD, [file, '--url', emu.url, '--resume']);
    expect(other.status, other.stderr).toBe(2);
    expect(other.stderr).toContain(`under another API key (${fingerprint(STAGING)}), not this one (${fingerprint(PROD)})`);
    expect(emu.requests().length).toBe(seen);
    // its own key goes on resuming it, and says nothing more of it
    const same = await up(STAGING, [file, '--url', emu.url, '--resume']);
    expect(same.status, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout).notes.join('\n')).not.toMatch(/earlier version/);
    expect(readFileSync(journal, 'utf8')).not.toContain(STAGING);
  });
});

/** The one journal the test's folder holds. */
function readdirJournal(): string {
  const found = readdirSync(tmp.dir).filter((name) => name.endsWith('.journal'));
  expect(found).toHaveLength(1);
  return found[0];
}
