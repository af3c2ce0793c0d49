// The delta state and the API keys it learned each target through, through the real CLI against the
// emulator: two workspaces' keys sharing one URL, a key recorded with `track state --add-key`, a state
// file of format 4 (no key) adopted by the first key, a key the server refused tying nothing, dry runs
// that note a key and never refuse, and the library's upload() refused the same way.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { upload, UsageError, type Emulator } from '../../src/index.js';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator } = useServers();

/** Two keys of two workspaces that share the service's URL (the emulator takes both). */
const STAGING = 'staging-key-7f3a9c1e';
const PROD = 'production-key-b52d04e8';
const fingerprint = (key: string): string => `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;

const twoWorkspaces = (): Promise<Emulator> => emulator({ apiKeys: [STAGING, PROD] });
/** Runs the CLI in the test's folder, with no key from the environment unless given. */
const run = (args: string[], env: Record<string, string> = {}) => runCliAsync(args, { cwd: tmp.dir, env: { TRACK_API_KEY: '', TRACK_URL: '', ...env } });
const up = (key: string, args: string[]) => run(['upload', ...args, '--api-key', key, '--no-journal', '--json']);
const summary = async (key: string, args: string[]) => {
  const r = await up(key, args);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
};
const usersCsv = (name: string, n: number, changed = -1): string => {
  const path = join(tmp.dir, name);
  const rows = Array.from({ length: n }, (_, i) => `u${i},${i === changed ? 'pro' : 'free'}`);
  writeFileSync(path, `external_id,plan\n${rows.join('\n')}\n`);
  return path;
};
const eventsCsv = (name: string): string => {
  const path = join(tmp.dir, name);
  writeFileSync(path, 'external_id,name,time\nu1,login,2024-05-01T10:00:00Z\nu2,login,2024-05-01T11:00:00Z\n');
  return path;
};
const listed = async (state: string) => {
  const r = await run(['state', '--state', state, '--json']);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout).targets as Array<{ url: string; users: number; keys: string[] }>;
};
/** The emulator of the two workspaces, and a file of n users the default state learned through the staging key. */
async function learnedThroughStaging(n: number): Promise<{ emu: Emulator; file: string }> {
  const emu = await twoWorkspaces();
  const file = usersCsv('users.csv', n);
  expect(await summary(STAGING, [file, '--url', emu.url, '--delta'])).toMatchObject({ items: { attributes: n } });
  return { emu, file };
}
/** Every byte the test's folder holds (state files, their logs, rejects), as text. */
const folderText = (): string => readdirSync(tmp.dir).map((name) => readFileSync(join(tmp.dir, name)).toString('latin1')).join('\n');

describe('a state learned through one key, and an upload with another to the same URL', () => {
  it('is refused before anything is posted, exit 2, naming the file, the URL and the fingerprints, never a key; --dedupe-events too', async () => {
    const emu = await twoWorkspaces();
    const file = usersCsv('users.csv', 60);
    expect(await summary(STAGING, [file, '--url', emu.url, '--delta', '--state', 'shared.sqlite'])).toMatchObject({ items: { attributes: 60 } });
    const seen = emu.requests().length;

    const refused = await up(PROD, [file, '--url', emu.url, '--delta', '--state', 'shared.sqlite']);
    expect(refused.status, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`--state shared.sqlite learned ${emu.url}/users/track through another API key (${fingerprint(STAGING)}), not this one (${fingerprint(PROD)})`);
    expect(refused.stderr).toContain(`track state --state shared.sqlite --add-key ${emu.url}/users/track`);
    expect(refused.stderr).toMatch(/another workspace, give this upload its own --state/);
    const events = eventsCsv('events.csv');
    expect(await summary(STAGING, [events, '--url', emu.url, '--dedupe-events', '--state', 'shared.sqlite'])).toMatchObject({ items: { events: 2 } });
    const seenEvents = emu.requests().length;
    const refusedEvents = await up(PROD, [events, '--url', emu.url, '--dedupe-events', '--state', 'shared.sqlite']);
    expect(refusedEvents.status, refusedEvents.stderr).toBe(2);
    expect(refusedEvents.stderr).toContain(`not this one (${fingerprint(PROD)})`);
    expect(emu.requests().length).toBe(seenEvents);
    expect(seenEvents - seen).toBe(1);

    // the other workspace with its own state sends everything
    expect(await summary(PROD, [file, '--url', emu.url, '--delta', '--state', 'production.sqlite'])).toMatchObject({ items: { attributes: 60 }, unchanged: 0 });
    for (const text of [refused.stdout, refused.stderr, refusedEvents.stderr, folderText()]) {
      expect(text).not.toContain(STAGING);
      expect(text).not.toContain(PROD);
    }
  }, 60_000);

  it('goes once `track state --add-key` recorded the key (from --api-key or TRACK_API_KEY), and sends only what changed', async () => {
    const emu = await twoWorkspaces();
    expect(await summary(STAGING, [usersCsv('users.csv', 60), '--url', emu.url, '--delta'])).toMatchObject({ items: { attributes: 60 } });
    const target = `${emu.url}/users/track`;

    // a URL the state does not know is refused, naming the ones it does
    const unknown = await run(['state', '--add-key', 'http://127.0.0.1:9', '--api-key', PROD]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain(`holds nothing of http://127.0.0.1:9/users/track (it knows ${target})`);
    const noKey = await run(['state', '--add-key', emu.url]);
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toMatch(/--add-key records the API key given with --api-key or TRACK_API_KEY/);

    const added = await run(['state', '--add-key', emu.url], { TRACK_API_KEY: PROD });
    expect(added.status, added.stderr).toBe(0);
    expect(added.stdout).toContain(`recorded key ${fingerprint(PROD)} for ${target}`);
    const again = await run(['state', '--add-key', target, '--api-key', PROD]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/already holds key .* nothing to do/);
    expect((await listed('track-state.sqlite'))[0].keys).toEqual([fingerprint(STAGING), fingerprint(PROD)].sort());

    const seen = emu.requests().length;
    const changed = await summary(PROD, [usersCsv('users.csv', 60, 7), '--url', emu.url, '--delta']);
    expect(changed).toMatchObject({ requests: 1, unchanged: 59, items: { attributes: 1 } });
    expect(emu.requests().length).toBe(seen + 1);
    // the first key goes on too
    expect(await summary(STAGING, [usersCsv('users.csv', 60, 7), '--url', emu.url, '--delta'])).toMatchObject({ requests: 0, unchanged: 60 });
  }, 60_000);
});

describe('the refusal and track state --add-key, as a user types them', () => {
  it('quote a state path a shell would split, so that the command pasted records the key; a key no upload can send is said as such, never recorded', async () => {
    const emu = await twoWorkspaces();
    const file = usersCsv('users.csv', 20);
    const state = "it's my state.sqlite";
    expect(await summary(STAGING, [file, '--url', emu.url, '--delta', '--state', state])).toMatchObject({ items: { attributes: 20 } });
    const refused = await up(PROD, [file, '--url', emu.url, '--delta', '--state', state]);
    expect(refused.status, refused.stderr).toBe(2);
    const command = /`track (state [^`]*)`/.exec(refused.stderr)?.[1];
    expect(command).toBe(`state --state 'it'\\''s my state.sqlite' --add-key ${emu.url}/users/track`);
    // as a shell would split it
    const words = [...command!.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replaceAll("'\\''", "'") : m[2]));
    const added = await run(words, { TRACK_API_KEY: PROD });
    expect(added.status, added.stderr).toBe(0);
    expect(await summary(PROD, [file, '--url', emu.url, '--delta', '--state', state])).toMatchObject({ requests: 0, unchanged: 20 });

    // an empty key, or one a header cannot carry: said so, before the state is compared with it
    for (const key of ['', 'clé-secrète']) {
      const bad = await up(key, [file, '--url', emu.url, '--delta', '--state', state]);
      expect(bad.status, bad.stderr).toBe(2);
      expect(bad.stderr).toMatch(key === '' ? /an API key is required/ : /the API key holds characters that cannot be sent in a header/);
      expect(bad.stderr).not.toMatch(/another API key/);
    }
    const unsendable = await run(['state', '--state', state, '--add-key', emu.url, '--api-key', 'clé-secrète']);
    expect(unsendable.status).toBe(2);
    expect(unsendable.stderr).toMatch(/cannot be sent in a header/);
    expect((await listed(state))[0].keys).toEqual([fingerprint(STAGING), fingerprint(PROD)].sort());
  }, 60_000);
});

describe('a state file of format 4, written before keys were kept', () => {
  it('is read by a dry run as it is, adopted by the first key that delivers with it, which says so, and refuses a second key', async () => {
    const emu = await twoWorkspaces();
    const file = usersCsv('users.csv', 60);
    expect(await summary(STAGING, [file, '--url', emu.url, '--delta', '--state', 'old.sqlite'])).toMatchObject({ items: { attributes: 60 } });
    // the file as the version before this one leaves it: the same tables but the keys', format 4
    const db = new Database(join(tmp.dir, 'old.sqlite'));
    db.exec("DROP TABLE target_keys; UPDATE meta SET value = '4' WHERE key = 'format'");
    db.close();
    expect((await listed('old.sqlite'))[0]).toMatchObject({ users: 60, keys: [] });
    const dry = await run(['validate', file, '--delta', '--state', 'old.sqlite', '--url', emu.url, '--json'], { TRACK_API_KEY: PROD });
    expect(dry.status, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ unchanged: 60 });
    const before = `--state old.sqlite learned ${emu.url}/users/track before it kept API keys (an earlier version of track)`;
    expect(JSON.parse(dry.stdout).notes).toContain(
      `${before}: an upload with this key (${fingerprint(PROD)}) would compare with what it holds and tie it to that key; if it learned the target through another workspace's key, give this upload its own --state`,
    );
    expect((await listed('old.sqlite'))[0].keys).toEqual([]);

    // the first key to deliver adopts it, and says so: nothing it held is sent again
    const adopted = await summary(PROD, [usersCsv('users.csv', 60, 3), '--url', emu.url, '--delta', '--state', 'old.sqlite']);
    expect(adopted).toMatchObject({ unchanged: 59, items: { attributes: 1 } });
    expect(adopted.notes.join('\n')).toContain(`${before}: this run compared with what it holds and tied it to this run's key (${fingerprint(PROD)})`);
    expect(adopted.notes.join('\n')).toContain(`\`track state --state old.sqlite --forget ${emu.url}/users/track\``);
    const next = await summary(PROD, [usersCsv('users.csv', 60, 3), '--url', emu.url, '--delta', '--state', 'old.sqlite']);
    expect(next.notes.join('\n')).not.toMatch(/API key/);
    expect((await listed('old.sqlite'))[0].keys).toEqual([fingerprint(PROD)]);
    const format = new Database(join(tmp.dir, 'old.sqlite'), { readonly: true });
    expect(format.prepare("SELECT value FROM meta WHERE key = 'format'").pluck().get()).toBe('5');
    format.close();
    const seen = emu.requests().length;
    const refused = await up(STAGING, [file, '--url', emu.url, '--delta', '--state', 'old.sqlite']);
    expect(refused.status, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`through another API key (${fingerprint(PROD)}), not this one (${fingerprint(STAGING)})`);
    expect(emu.requests().length).toBe(seen);
  }, 60_000);
});

describe('a key the server refused', () => {
  it('ties the target to nothing: the next upload, with the right key, goes and records its own', async () => {
    const emu = await twoWorkspaces();
    const file = usersCsv('users.csv', 10);
    const wrong = await up('mistyped-key-000', [file, '--url', emu.url, '--delta']);
    expect(wrong.status).toBe(3);
    expect(await summary(STAGING, [file, '--url', emu.url, '--delta'])).toMatchObject({ items: { attributes: 10 } });
    expect((await listed('track-state.sqlite'))[0].keys).toEqual([fingerprint(STAGING)]);
  }, 60_000);
});

describe('track state', () => {
  it('lists the fingerprints of each target, never a key, and --forget drops them with the target', async () => {
    const { emu, file } = await learnedThroughStaging(10);
    const list = await run(['state']);
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toContain(`API keys      ${fingerprint(STAGING)}`);
    expect(list.stdout).not.toContain(STAGING);

    const forgot = await run(['state', '--forget', emu.url]);
    expect(forgot.status, forgot.stderr).toBe(0);
    expect(forgot.stdout).toMatch(/forgot .* and the keys it was learned through/);
    // the target comes back under the other key alone: the first one's fingerprint went with it
    expect(await summary(PROD, [file, '--url', emu.url, '--delta'])).toMatchObject({ items: { attributes: 10 }, unchanged: 0 });
    expect(await listed('track-state.sqlite')).toEqual([expect.objectContaining({ users: 10, keys: [fingerprint(PROD)] })]);
    expect(folderText()).not.toContain(PROD);
  }, 60_000);
});

describe('a dry run with a key the state did not learn the target through', () => {
  it('is never refused: it notes that an upload with that key would stop, and says nothing without a key or with a known one', async () => {
    const { emu, file } = await learnedThroughStaging(20);
    const notes = async (args: string[], env: Record<string, string> = {}) => {
      const r = await run([...args, '--json'], env);
      expect(r.status, r.stderr).toBe(0);
      const s = JSON.parse(r.stdout);
      expect(s).toMatchObject({ unchanged: 20 });
      return (s.notes as string[]).join('\n');
    };
    const dryRun = ['upload', file, '--dry-run', '--delta', '--url', emu.url];
    const noted = await notes([...dryRun, '--api-key', PROD]);
    expect(noted).toContain(`learned ${emu.url}/users/track through another API key (${fingerprint(STAGING)}), not this one (${fingerprint(PROD)})`);
    expect(noted).toMatch(/an upload with this key would stop before sending anything/);
    expect(noted).not.toContain(PROD);
    expect(await notes(['validate', file, '--delta', '--url', emu.url], { TRACK_API_KEY: PROD })).toMatch(/an upload with this key would stop/);
    expect(await notes(['validate', file, '--delta', '--url', emu.url])).not.toMatch(/API key/);
    expect(await notes([...dryRun, '--api-key', STAGING])).not.toMatch(/API key/);
  }, 60_000);
});

describe('upload() of the library', () => {
  it('passes its apiKey to the state: another key than the one the state learned the target through is refused, a UsageError, nothing posted', async () => {
    const emu = await twoWorkspaces();
    const inputs = [Array.from({ length: 5 }, (_, i) => ({ external_id: `u${i}`, plan: 'free' }))];
    const state = join(tmp.dir, 'library.sqlite');
    expect(await upload({ inputs, url: emu.url, apiKey: STAGING, delta: true, state, journal: false })).toMatchObject({ items: { attributes: 5 } });
    const seen = emu.requests().length;
    const refused = upload({ inputs, url: emu.url, apiKey: PROD, delta: true, state, journal: false });
    await expect(refused).rejects.toThrow(UsageError);
    await expect(refused).rejects.toThrow(`not this one (${fingerprint(PROD)})`);
    expect(emu.requests().length).toBe(seen);
    const dry = await upload({ inputs, url: emu.url, apiKey: PROD, delta: true, state, dryRun: true });
    expect(dry.notes.join('\n')).toMatch(/an upload with this key would stop before sending anything/);
  }, 60_000);
});
