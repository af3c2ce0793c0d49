// The emulator's --db is the emulator's file or a new one: an SQLite database of something else (the
// uploader's delta state, say) is refused by `track emulate`, `track inspect` and startEmulator, and
// left exactly as it was; a file that is not a database, a damaged one, or a folder, is named with
// what to do.
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/emulator/store.js';
import { startEmulator, UsageError } from '../../src/index.js';
import { runCli, tempDir } from '../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

/** An SQLite file of another program, as it would be on disk. */
function otherDatabase(): { path: string; bytes: Buffer } {
  const path = join(tmp.dir, 'track-state.sqlite');
  const db = new Database(path);
  db.exec("CREATE TABLE users (target TEXT, user TEXT); INSERT INTO users VALUES ('t', 'u-1')");
  db.close();
  return { path, bytes: readFileSync(path) };
}

describe('a --db that is an SQLite database of something else', () => {
  it('is refused by track inspect and track emulate (exit 2, naming the file and its tables), and left as it was', () => {
    const { path, bytes } = otherDatabase();
    const inspect = runCli(['inspect', '--db', path]);
    expect(inspect.status).toBe(2);
    expect(inspect.stdout).toBe('');
    expect(inspect.stderr).toContain(`--db ${path}: is an SQLite database of something else (its tables: users), not the emulator's; it was left as it was: give the emulator a file of its own`);
    const emulate = runCli(['emulate', '--db', path, '--exec', 'echo never run']);
    expect(emulate.status).toBe(2);
    expect(emulate.stdout).not.toContain('never run');
    expect(emulate.stderr).toContain(`--db ${path}: is an SQLite database of something else`);
    expect(readFileSync(path).equals(bytes)).toBe(true);
  });

  it('is refused by startEmulator in the library\'s words, with no lock left behind', async () => {
    const { path, bytes } = otherDatabase();
    const error = (await startEmulator({ db: path }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(/^db .*track-state\.sqlite: is an SQLite database of something else \(its tables: users\)/);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    // no lock is left: a second try is refused for the same reason, not as a database in use
    const again = (await startEmulator({ db: path }).catch((e: unknown) => e)) as Error;
    expect(again.message).toBe(error.message);
  });
});

describe('a --db that is not a database', () => {
  it('names a file that is not SQLite, and a folder', () => {
    const garbage = join(tmp.dir, 'notes.sqlite');
    writeFileSync(garbage, 'these are my notes, not a database\n'.repeat(200));
    const notDb = runCli(['inspect', '--db', garbage]);
    expect(notDb.status).toBe(2);
    expect(notDb.stderr).toContain(`--db ${garbage}: is not an SQLite database; give the emulator's database file, or a new path for one`);
    expect(readFileSync(garbage, 'utf8')).toBe('these are my notes, not a database\n'.repeat(200));
    const folder = join(tmp.dir, 'a-folder');
    mkdirSync(folder);
    const opened = runCli(['inspect', '--db', folder]);
    expect(opened.status).toBe(2);
    expect(opened.stderr).toContain(`--db ${folder}: cannot be opened as a database file`);
  });

  it('names a path in a folder that does not exist, or under a file, for the emulator as for inspect: exit 2, nothing made', async () => {
    const missing = join(tmp.dir, 'no-such-folder', 'emulator.sqlite');
    const plain = join(tmp.dir, 'plain.txt');
    writeFileSync(plain, 'text\n');
    const underFile = join(plain, 'emulator.sqlite');
    const emulate = runCli(['emulate', '--port', '0', '--db', missing, '--exec', 'echo never run']);
    expect(emulate.status).toBe(2);
    expect(emulate.stdout).not.toContain('never run');
    expect(emulate.stderr).toContain(`--db ${missing}: the folder ${join(tmp.dir, 'no-such-folder')} does not exist; create it, or give a path in a folder that does`);
    const notFolder = runCli(['emulate', '--port', '0', '--db', underFile, '--exec', 'echo never run']);
    expect(notFolder.status).toBe(2);
    expect(notFolder.stderr).toContain(`--db ${underFile}: ${plain} is not a folder`);
    // the folder as the path names it: `x/..` is none when `x` is none
    const through = `${join(tmp.dir, 'no-such-folder')}/../emulator.sqlite`;
    const dotted = runCli(['emulate', '--port', '0', '--db', through, '--exec', 'echo never run']);
    expect(dotted.status).toBe(2);
    expect(dotted.stderr).toContain(`--db ${through}: the folder ${join(tmp.dir, 'no-such-folder')}/.. does not exist`);
    const folderNamed = runCli(['emulate', '--port', '0', '--db', 'no-such-folder/', '--exec', 'echo never run'], { cwd: tmp.dir });
    expect(folderNamed.status).toBe(2);
    expect(folderNamed.stderr).toContain('--db no-such-folder/: names a folder; give the path of a file (no-such-folder/track-emulator.sqlite)');
    for (const command of [['emulate', '--port', '0', '--exec', 'echo never run'], ['inspect']]) {
      const empty = runCli([...command, '--db', '']);
      expect(empty.status, command[0]).toBe(2);
      expect(empty.stderr, command[0]).toContain('--db: an empty path');
    }
    // a database is a file: never standard output or a device
    const device = runCli(['emulate', '--port', '0', '--db', '/dev/null', '--exec', 'echo never run']);
    expect(device.status).toBe(2);
    expect(device.stderr).toContain('--db /dev/null: names standard output or a device; give the path of a file');
    symlinkSync('/dev/null', join(tmp.dir, 'to-null'));
    expect(runCli(['emulate', '--port', '0', '--db', join(tmp.dir, 'to-null'), '--exec', 'echo never run']).stderr).toContain('names standard output or a device');
    for (const command of ['inspect', 'cleanup']) {
      const read = runCli([command, '--db', '/dev/null']);
      expect(read.status, command).toBe(2);
      expect(read.stderr, command).toContain('--db /dev/null: names standard output or a device; give the path of a file');
    }
    const inspected = runCli(['inspect', '--db', missing]);
    expect(inspected.status).toBe(2);
    expect(inspected.stderr).toContain(`${missing}: no emulator database here (the folder ${join(tmp.dir, 'no-such-folder')} does not exist)`);
    expect(runCli(['inspect', '--db', underFile]).stderr).toContain(`${underFile}: no emulator database here (${plain} is not a folder)`);
    expect(runCli(['inspect', '--db', join(tmp.dir, 'none.sqlite')]).stderr).toContain('no emulator database here (start `track emulate --db` with this path first)');
    expect(existsSync(join(tmp.dir, 'no-such-folder'))).toBe(false);
    const error = (await startEmulator({ db: missing }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(/^db .*emulator\.sqlite: the folder .*no-such-folder does not exist/);
  });

  it("names the emulator's own file cut short (a copy that stopped half way), and leaves it as it was", async () => {
    const whole = join(tmp.dir, 'whole.sqlite');
    const store = new Store(whole);
    store.transaction(() => {
      for (let p = 0; p < 2000; p += 1) store.createProfile({ externalId: `u-${p}`, email: `u-${p}@example.com` });
    });
    store.close();
    const cut = join(tmp.dir, 'cut.sqlite');
    writeFileSync(cut, readFileSync(whole).subarray(0, 65536));
    const says = `--db ${cut}: is damaged (SQLite: database disk image is malformed), cut short or written over; restore it from a copy, or give a new path`;
    for (const command of [['inspect', '--count'], ['emulate', '--exec', 'echo never run']]) {
      const r = runCli([...command, '--db', cut]);
      expect(r.status).toBe(2);
      expect(r.stdout).not.toContain('never run');
      expect(r.stderr).toContain(says);
    }
    const error = (await startEmulator({ db: cut }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toContain('cut.sqlite: is damaged');
    expect(readFileSync(cut).equals(readFileSync(whole).subarray(0, 65536))).toBe(true);
  });
});

it("opens the emulator's own file, and an empty SQLite file, as before", async () => {
  const empty = join(tmp.dir, 'empty.sqlite');
  new Database(empty).close();
  const emulator = await startEmulator({ db: empty, apiKeys: ['k'] });
  await fetch(`${emulator.url}/users/track`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: '{"attributes":[{"external_id":"own-1"}]}' });
  await emulator.close();
  const inspect = runCli(['inspect', '--db', empty, '--external-id', 'own-1']);
  expect(inspect.status).toBe(0);
  expect(JSON.parse(inspect.stdout)[0].external_id).toBe('own-1');
});
