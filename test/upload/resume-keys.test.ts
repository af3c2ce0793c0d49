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
    const resumed = await up(PROD, [file, '--url', emu.url, '--delta', '--state', 'shared.sqlite', '--resume']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).notes.join('\n')).toMatch(/every row was settled by an earlier run/);
    expect(emu.requests().length).toBe(seen);
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

/** The one journal the test's folder holds. */
function readdirJournal(): string {
  const found = readdirSync(tmp.dir).filter((name) => name.endsWith('.journal'));
  expect(found).toHaveLength(1);
  return found[0];
}
