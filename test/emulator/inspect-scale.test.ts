// `track inspect` on a database larger than its memory: the profiles are read and printed one at a
// time, so printing every profile of a big file neither holds them all nor makes one text of them.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/emulator/store.js';
import { BIN, ROOT, runCli, runCliReaderGone, tempDir } from '../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const PROFILES = 2000;
const EVENTS_EACH = 100;

/** A database of 2,000 profiles of 100 events each (32 MB of inspect's JSON), two of them sharing an email. */
function bigDatabase(): string {
  const path = join(tmp.dir, 'big.sqlite');
  const store = new Store(path);
  store.transaction(() => {
    for (let p = 0; p < PROFILES; p += 1) {
      const email = p === 7 || p === 1500 ? 'shared@example.com' : undefined;
      const { id } = store.createProfile({ externalId: `u-${p}`, email });
      store.insertEvents(Array.from({ length: EVENTS_EACH }, (_, i) => ({ profileId: id, name: 'seen', time: '2024-01-01T00:00:00.000Z', appId: null, properties: { i } })));
    }
  });
  store.close();
  return path;
}

/** A heap far smaller than all the profiles and their events, or their JSON, take (the whole needs over 64 MB). */
const SMALL_HEAP = { NODE_OPTIONS: '--max-old-space-size=40' };

/** `track inspect` with its output kept whole (32 MB), in a heap of 40 MB. */
function inspectSmallHeap(args: string[]) {
  const r = spawnSync(process.execPath, [BIN, 'inspect', ...args], { cwd: ROOT, env: { ...process.env, ...SMALL_HEAP }, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}


describe('track inspect on a database larger than its memory', () => {
  it('prints every profile with its events as one JSON array, within a heap that cannot hold them all', () => {
    const db = bigDatabase();
    const all = inspectSmallHeap(['--db', db]);
    expect(all.stderr).toBe('');
    expect(all.status).toBe(0);
    const profiles = JSON.parse(all.stdout) as { external_id: string; events: { properties: { i: number } }[] }[];
    expect(profiles.map((p) => p.external_id)).toEqual(Array.from({ length: PROFILES }, (_, p) => `u-${p}`));
    expect(profiles.every((p) => p.events.length === EVENTS_EACH)).toBe(true);
    // printed as JSON.stringify(profiles, null, 2) would print them
    expect(all.stdout).toBe(`${JSON.stringify(profiles, null, 2)}\n`);

    // an email is found by its index, in the order the profiles were made; --count and --limit agree
    const shared = JSON.parse(inspectSmallHeap(['--db', db, '--email', 'Shared@Example.com']).stdout) as { external_id: string }[];
    expect(shared.map((p) => p.external_id)).toEqual(['u-7', 'u-1500']);
    expect(runCli(['inspect', '--db', db, '--email', 'shared@example.com', '--count']).stdout).toBe('2\n');
    const limited = JSON.parse(runCli(['inspect', '--db', db, '--limit', '3']).stdout) as { external_id: string }[];
    expect(limited.map((p) => p.external_id)).toEqual(['u-0', 'u-1', 'u-2']);
    expect(runCli(['inspect', '--db', db, '--email', 'nobody@example.com']).stdout).toBe('[]\n');
  }, 60_000);

  it('ends quietly, exit 0, when its reader closes the pipe early (| head)', async () => {
    const db = bigDatabase();
    const { status, stderr } = await runCliReaderGone(['inspect', '--db', db]);
    expect(stderr).toBe('');
    expect(status).toBe(0);
  }, 60_000);
});
