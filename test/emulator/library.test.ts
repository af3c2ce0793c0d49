// The library API as a separate package sees it: `import { startEmulator } from 'track-cli'`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

/** A package of its own that depends on track-cli (this checkout): the library as a user imports it. */
function appUsingTrack(): string {
  const app = join(tmp.dir, 'app');
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  symlinkSync(ROOT, join(app, 'node_modules', 'track-cli'), 'dir');
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', type: 'module' }));
  return app;
}

it('starts on a free port with an in-memory database and a generated key, takes requests and closes', () => {
  const app = appUsingTrack();
  writeFileSync(
    join(app, 'seed.js'),
    `import { startEmulator } from 'track-cli';
const emu = await startEmulator({ rateLimit: '2/1h' });
const post = (body) => fetch(emu.url + '/users/track', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + emu.apiKey, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const statuses = [];
for (let i = 0; i < 3; i += 1) statuses.push((await post({ attributes: [{ external_id: 'u' + i, a: i }] })).status);
const exported = await fetch(emu.url + '/users/export/ids', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + emu.apiKey, 'content-type': 'application/json' },
  body: JSON.stringify({ external_ids: ['u0', 'u1', 'u2'] }),
}).then((r) => r.json());
await emu.close();
let refused = false;
try { await fetch(emu.url + '/health'); } catch { refused = true; }
console.log(JSON.stringify({ url: emu.url, key: emu.apiKey, statuses, users: exported.users.length, refused }));
`,
  );
  const r = spawnSync(process.execPath, ['seed.js'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  expect(r.stderr).toBe('');
  const out = JSON.parse(r.stdout);
  expect(out.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(out.url).not.toMatch(/:4000$/);
  expect(out.key).toMatch(/^[0-9a-f]{32}$/);
  expect(out.statuses).toEqual([201, 201, 429]);
  expect(out.users).toBe(2);
  expect(out.refused).toBe(true);
});

it('seeds from files, resets to the seed, reads the request log, and runs a command with withEmulator and execWithEmulator', () => {
  const app = appUsingTrack();
  writeFileSync(
    join(app, 'fixture.js'),
    `import { execWithEmulator, withEmulator } from 'track-cli';
const seed = [${JSON.stringify(join(ROOT, 'fixtures', 'attributes.csv'))}];
const inside = await withEmulator({ seed }, async (emu) => {
  const post = (body) => fetch(emu.url + '/users/track', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + emu.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await post({ attributes: [{ external_id: 'extra' }], events: [{ external_id: 'extra', name: 'e', time: 'never' }] });
  const before = emu.store.counts().profiles;
  const logged = emu.requests({ externalId: 'extra' }).map((r) => [r.status, r.errors.length]);
  const after = emu.reset();
  return { before, logged, after, log: emu.requests().length, url: emu.url };
});
let closed = false;
try { await fetch(inside.url + '/health'); } catch { closed = true; }
const exec = await execWithEmulator('test -n "$TRACK_URL" && test -n "$TRACK_API_KEY" && exit 4', { stdio: 'ignore' });
console.log(JSON.stringify({ ...inside, closed, exec }));
`,
  );
  const r = spawnSync(process.execPath, ['fixture.js'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  expect(r.stderr).toBe('');
  const out = JSON.parse(r.stdout);
  expect(out).toMatchObject({ before: 4, logged: [[201, 1]], after: 3, log: 0, closed: true, exec: { status: 4, code: 4, signal: null } });
});

// Node 20.19 and later load an ES module with require(); 20.18 says to use import() instead
it.skipIf(!(process.features as { require_module?: boolean }).require_module)('is required from CommonJS (a jest setup, say), on a Node that loads ES modules with require()', () => {
  const app = appUsingTrack();
  writeFileSync(
    join(app, 'setup.cjs'),
    `const { withEmulator } = require('track-cli');
withEmulator({}, (emu) => emu.requests().length).then((n) => console.log('logged', n));
`,
  );
  const r = spawnSync(process.execPath, ['setup.cjs'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  expect(r.stderr).toBe('');
  expect(r.stdout).toBe('logged 0\n');
});
