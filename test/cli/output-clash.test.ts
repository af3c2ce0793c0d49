// --summary-file, --events and --report never write over a record of the run (the delta state, the
// journal, the rejects file): such a run is refused (exit 2) and the record left as it was, also
// when the run stops on another usage error first.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator } = useServers();

const bytes = (name: string): Buffer => readFileSync(join(tmp.dir, name));

describe('an output named as a record of the run', () => {
  it('is refused, and the delta state, the journal and the rejects file are left as they were', async () => {
    const emu = await emulator();
    writeFileSync(join(tmp.dir, 'users.csv'), 'external_id,email\nu1,u1@example.com\nu2,bad\n');
    const run = (...more: string[]) => runCliAsync(['upload', 'users.csv', '--url', emu.url, '--api-key', 'k', ...more], { cwd: tmp.dir });
    const first = await run('--delta', '--state', 'st.sqlite');
    expect(first.status, first.stderr).toBe(1);
    const journal = `users.csv.http-127.0.0.1-${new URL(emu.url).port}.journal`;
    const records = { 'st.sqlite': bytes('st.sqlite'), [journal]: bytes(journal), 'users.csv.rejects.ndjson': bytes('users.csv.rejects.ndjson') };
    expect(records['st.sqlite'].subarray(0, 15).toString()).toBe('SQLite format 3');

    for (const flag of ['--summary-file', '--events', '--report']) {
      for (const [record, flagOf] of [['st.sqlite', '--state'], [journal, '--journal'], ['users.csv.rejects.ndjson', '--rejects']]) {
        const r = await run('--resume-or-start', '--delta', '--state', 'st.sqlite', flag, record);
        expect(r.status, `${flag} ${record}: ${r.stderr}`).toBe(2);
        // (the record, as its flag and its name, and the output that would have been written over it)
        const said = r.stderr.split('\n').find((line) => line.includes(flag)) ?? '';
        expect(said, r.stderr).toContain(flagOf);
        expect(said).toContain(record);
        for (const [name, before] of Object.entries(records)) expect(bytes(name).equals(before), `${flag} ${record}: ${name}`).toBe(true);
      }
    }
    // a run stopped by another usage error first writes no summary over the state
    const dry = await runCliAsync(['upload', 'users.csv', '--dry-run', '--delta', '--state', 'st.sqlite', '--summary-file', 'st.sqlite'], { cwd: tmp.dir });
    expect(dry.status).toBe(2);
    const early = await runCliAsync(['upload', 'users.csv', '--url', emu.url, '--shard', '9/4', '--state', 'st.sqlite', '--summary-file', 'st.sqlite'], { cwd: tmp.dir });
    expect(early.status).toBe(2);
    expect(bytes('st.sqlite').equals(records['st.sqlite'])).toBe(true);
  }, 120_000);
});

describe('- as a file a run writes', () => {
  it('is refused but for --out (standard output), exit 2 before anything is read, writing no file named -; ./- names one', async () => {
    writeFileSync(join(tmp.dir, 'users.csv'), 'external_id,email\nu1,u1@example.com\nu2,bad\n');
    for (const [flag, instead] of [['--rejects', ''], ['--events', ', or --progress ndjson'], ['--summary-file', ', or --json'], ['--report', ''], ['--journal', ''], ['--state', '']]) {
      const r = await runCliAsync(['upload', 'users.csv', '--dry-run', flag, '-'], { cwd: tmp.dir });
      expect(r.status, `${flag}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`${flag} -: only --out writes to standard output; give a file path${instead}`);
      expect(existsSync(join(tmp.dir, '-')), flag).toBe(false);
    }
    const named = await runCliAsync(['upload', 'users.csv', '--dry-run', '--rejects', './-'], { cwd: tmp.dir });
    expect(named.status, named.stderr).toBe(1);
    expect(readFileSync(join(tmp.dir, '-'), 'utf8')).toContain('"line":3');
  });
});
