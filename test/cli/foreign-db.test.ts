// `track cleanup`, as `emulate` and `inspect` (test/emulator/db-file.test.ts), takes only a database of
// the emulator's: the --state file of `track upload --delta`, another program's database and a file
// that is no database are refused, exit 2, naming the file, and left as they were (the state still
// usable).
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp } = useServers();
const digest = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

describe("a --db file that is not the emulator's", () => {
  it('is refused by cleanup (and --dry-run), inspect and emulate, exit 2, naming it; a --state file, another database and garbage are left as they were', async () => {
    const input = join(tmp.dir, 'users.csv');
    writeFileSync(input, 'external_id,plan\nu1,pro\n');
    const state = join(tmp.dir, 'track-state.sqlite');
    // a state file as a dry run cannot make one: a --delta upload against an emulator of its own
    const seeded = await runCliAsync(['emulate', '--port', '0', '--db', ':memory:', '--api-key', 'k', '--quiet', '--exec', `node ${JSON.stringify(join(process.cwd(), 'bin', 'track.js'))} upload ${JSON.stringify(input)} --url "$TRACK_URL" --api-key k --delta --state ${JSON.stringify(state)} --quiet --no-journal`], { cwd: tmp.dir });
    expect(seeded.status, seeded.stderr).toBe(0);
    const other = join(tmp.dir, 'crm.sqlite');
    const db = new Database(other);
    db.exec("CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO contacts (email) VALUES ('a@example.com')");
    db.close();
    const garbage = join(tmp.dir, 'notes.sqlite');
    writeFileSync(garbage, 'not a database at all, but long enough to be read as a header of one............\n'.repeat(4));
    for (const [file, why] of [
      [state, /is an SQLite database of something else \(its tables: .*packs.*\), not the emulator's; it was left as it was/],
      [other, /is an SQLite database of something else \(its tables: contacts\), not the emulator's/],
      [garbage, /is not an SQLite database/],
    ] as const) {
      const before = digest(file);
      for (const args of [['inspect'], ['inspect', '--count'], ['cleanup'], ['cleanup', '--dry-run'], ['emulate', '--port', '0', '--quiet', '--exec', 'true']]) {
        const r = await runCliAsync([...args, '--db', file], { cwd: tmp.dir });
        expect(r.status, `${args.join(' ')} --db ${file}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain(`--db ${file}`);
        expect(r.stderr).toMatch(why);
        expect(digest(file), `${args.join(' ')} --db ${file}`).toBe(before);
      }
    }
    // the state is still whole: it lists its target and user
    const listed = await runCliAsync(['state', '--state', state, '--json'], { cwd: tmp.dir });
    expect(JSON.parse(listed.stdout).targets[0]).toMatchObject({ users: 1 });
  });
});
