// Damaged files are named and refused: a resumed run whose CSV rejects file does not begin with the
// inputs' header, whose journal is empty, cut short in its first line or names lines its file
// cannot have, stops before sending (exit 2), naming the file and what to do, and changes nothing.
// An input that breaks off partway stops the run once every whole row read before it is sent. A state
// file whose damage only its whole check finds, once the run has begun, stops it before anything is
// sent, and the journal is left as it was.
import { existsSync, openSync, closeSync, readFileSync, writeFileSync, writeSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { writeCrmCsv } from '../helpers/crm.js';
import type { FaultServer } from '../helpers/fault-server.js';
import { useServers } from '../helpers/servers.js';

const { tmp, faultServer } = useServers();

/** A first run stopped by a refused key after the plan rejected some rows: a resume has rows left to send and reject. */
async function stoppedRun(server: FaultServer, extra: string[] = []): Promise<{ file: string; journal: string }> {
  const file = writeCrmCsv(tmp.dir, 2000);
  server.script(() => ({ kind: 'status', status: 401 }));
  const first = await runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--journal', 'j.journal', '--quiet', ...extra], { cwd: tmp.dir });
  expect(first.status, first.stderr).toBe(3);
  server.script(() => undefined);
  server.forget();
  return { file, journal: join(tmp.dir, 'j.journal') };
}

const resume = (server: FaultServer, file: string, extra: string[] = []) =>
  runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--journal', 'j.journal', '--quiet', '--resume', ...extra], { cwd: tmp.dir });

describe('a CSV rejects file that does not begin with the inputs’ header', () => {
  for (const [what, first] of [
    ['garbage', 'xx garbage %%'],
    ['a foreign header', 'email,plan'],
  ] as const) {
    it(`(${what}) is refused by --resume before anything is sent, and left as it was`, async () => {
      const server = await faultServer();
      const csv = ['--rejects-format', 'csv', '--rejects', 'rej.csv'];
      const { file } = await stoppedRun(server, csv);
      const path = join(tmp.dir, 'rej.csv');
      const lines = readFileSync(path, 'utf8').split('\n');
      expect(lines.length).toBeGreaterThan(10);
      const damaged = [first, ...lines.slice(1)].join('\n');
      writeFileSync(path, damaged);
      const r = await resume(server, file, csv);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/track: the rejects file rej\.csv does not begin with the header of these inputs \(it lacks "external_id", .*\): it is another file, or a damaged one.*Move it away \(or give --rejects another file\) and resume again; nothing was sent/);
      expect(server.received).toHaveLength(0);
      expect(readFileSync(path, 'utf8')).toBe(damaged);

      // its own header back in place, the resume goes on and adds whole rows under it
      writeFileSync(path, lines.join('\n'));
      const again = await resume(server, file, csv);
      expect(again.status, again.stderr).toBe(1);
      const added = readFileSync(path, 'utf8').trimEnd().split('\n').slice(lines.length - 1);
      expect(added.length).toBeGreaterThan(0);
      for (const line of added) expect(line).toMatch(/crm\.csv,\d+,attributes,/);
    });
  }
});

describe('a damaged journal', () => {
  for (const [what, damage, message] of [
    ['emptied', () => '', 'is empty'],
    ['cut inside its first line', (text: string) => text.slice(0, 25), 'is cut short inside its first line'],
  ] as const) {
    it(`(${what}) is refused by --resume and by a run without it, before anything is sent`, async () => {
      const server = await faultServer();
      const { file, journal } = await stoppedRun(server);
      writeFileSync(journal, damage(readFileSync(journal, 'utf8')));
      for (const run of [() => resume(server, file), () => runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--journal', 'j.journal', '--quiet'], { cwd: tmp.dir })]) {
        const r = await run();
        expect(r.status).toBe(2);
        expect(r.stderr).toContain(`j.journal: the resume journal ${message}, so it cannot tell which rows were sent; restore it from a copy, or give --restart to send every row again`);
        expect(r.stderr).not.toContain('sent nothing');
      }
      expect(server.received).toHaveLength(0);
      // --restart is the way on, and sends every row
      const restart = await runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--journal', 'j.journal', '--quiet', '--restart', '--drop-invalid-fields'], { cwd: tmp.dir });
      expect(restart.status, restart.stderr).toBe(1);
      expect(server.received.length).toBeGreaterThan(0);
    });
  }

  // 100,000 lines is less than the file's 157 KB: a bound by its bytes let that resume skip all 2,000 rows, send nothing and exit 0
  for (const last of [9007199254740991, 100000]) {
    it(`(a line naming line ${last}, past the end of its file) is refused by --resume before anything is sent`, async () => {
      const server = await faultServer();
      const { file, journal } = await stoppedRun(server);
      writeFileSync(journal, `${readFileSync(journal, 'utf8')}{"file":0,"lines":[[2,${last}]]}\n`);
      const r = await resume(server, file);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`j\\.journal: the resume journal is damaged: it names line ${last} of .*crm\\.csv, which has at most 2,001 lines; restore the journal from a copy, or give --restart`));
      expect(server.received).toHaveLength(0);
    });
  }
});

describe('an input that breaks off partway (a gzip file cut short)', () => {
  it('sends every whole row read before the break, the request still being filled too, then stops (exit 3) naming the file', async () => {
    const server = await faultServer();
    const rows = Array.from({ length: 120 }, (_, i) => `u${i},${i}`);
    const whole = gzipSync(`external_id,visits\n${rows.join('\n')}\n`);
    // the last bytes of the deflate stream and its trailer lost: the rows before the break read whole
    writeFileSync(join(tmp.dir, 'cut.csv.gz'), whole.subarray(0, whole.length - 12));
    const r = await runCliAsync(['upload', 'cut.csv.gz', '--url', server.url, '--api-key', 'k', '--journal', 'cut.journal', '--json'], { cwd: tmp.dir });
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/cut\.csv\.gz: is not valid gzip data/);
    const summary = JSON.parse(r.stdout);
    const sent = server.received.flatMap((request) => request.body?.attributes ?? []);
    // not one row cut by the break: each sent as it is in the file
    expect(sent.length).toBe(summary.rows);
    expect(sent.length).toBeGreaterThan(100);
    sent.forEach((item, i) => expect(item).toEqual({ external_id: `u${i}`, visits: i }));
    expect(summary.delivery.items.attributes.accepted).toBe(summary.rows);
    expect(summary.delivery.requestsAbandoned).toBe(0);
  });
});

describe('a state file whose damage only its whole check finds, once the run has begun', () => {
  /** Fills the page of the table --dedupe-events keeps with bytes no page holds: a --delta run of attributes never reads it, the check does. */
  function damageActivities(path: string): void {
    const db = new Database(path, { readonly: true });
    const page = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'activities'").pluck().get() as number;
    const size = db.pragma('page_size', { simple: true }) as number;
    db.close();
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, (page - 1) * size);
    closeSync(fd);
  }

  it('stops the --delta run before anything is sent (exit 2), leaving the journal of the finished run before it as it was, and starting none', async () => {
    const server = await faultServer();
    const file = join(tmp.dir, 'users.csv');
    writeFileSync(file, `external_id,plan\n${Array.from({ length: 500 }, (_, i) => `u${i},team\n`).join('')}`);
    const run = (journal: string, extra: string[] = []) =>
      runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--delta', '--state', 'st.sqlite', '--journal', journal, '--quiet', ...extra], { cwd: tmp.dir });
    const first = await run('j.journal');
    expect(first.status, first.stderr).toBe(0);
    const journal = readFileSync(join(tmp.dir, 'j.journal'), 'utf8');
    expect(journal).toContain('"complete":true');
    copyFileSync(join(tmp.dir, 'st.sqlite'), join(tmp.dir, 'st.good'));
    damageActivities(join(tmp.dir, 'st.sqlite'));
    server.forget();
    // run again (a --delta run of attributes starts a new journal over a finished one), and resumed
    for (const extra of [[], ['--resume']]) {
      const again = await run('j.journal', extra);
      expect(again.status, again.stderr).toBe(2);
      expect(again.stderr).toMatch(/track: --state st\.sqlite is damaged \(SQLite: .*\): delete it to start a new state/);
      expect(readFileSync(join(tmp.dir, 'j.journal'), 'utf8')).toBe(journal);
    }
    // a run with no journal before it leaves none
    const fresh = await run('k.journal', ['--full']);
    expect(fresh.status, fresh.stderr).toBe(2);
    expect(existsSync(join(tmp.dir, 'k.journal'))).toBe(false);
    expect(server.received).toHaveLength(0);
    // the state put back, the run goes on from the finished one: the journal is started anew
    copyFileSync(join(tmp.dir, 'st.good'), join(tmp.dir, 'st.sqlite'));
    const after = await run('j.journal');
    expect(after.status, after.stderr).toBe(0);
    expect(readFileSync(join(tmp.dir, 'j.journal'), 'utf8')).toContain('"complete":true');
  });
});

describe('a new run that wrote rejects before an input error stopped it, nothing sent', () => {
  it('keeps its journal with the rejects file it wrote (the rejects of the run before are gone): the journal is not put back beside rejects of another run', async () => {
    const server = await faultServer();
    const file = join(tmp.dir, 'users.json');
    const run = () => runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--journal', 'j.journal', '--quiet'], { cwd: tmp.dir });
    writeFileSync(file, '[{"external_id":"a1"},{"external_id":"a2","email":"bad"},{"nope":1}]\n');
    const first = await run();
    expect(first.status, first.stderr).toBe(1);
    const finished = readFileSync(join(tmp.dir, 'j.journal'), 'utf8');
    // the file changed: its first two rows are refused, and it breaks off before a row is sent
    writeFileSync(file, '[{"zz":1},{"zz":2},{"external_id":"a3","x":tru');
    server.forget();
    const again = await run();
    expect(again.status, again.stderr).toBe(2);
    expect(again.stderr).toMatch(/users\.json:1: is not a valid JSON array/);
    expect(server.received).toHaveLength(0);
    const rejects = readFileSync(join(tmp.dir, 'users.json.rejects.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { line: number; row: unknown });
    expect(rejects.map((r) => r.row)).toEqual([{ zz: 1 }, { zz: 2 }]);
    // the journal that stays is this run's, which settled those rows as rejected, not the finished one
    const journal = readFileSync(join(tmp.dir, 'j.journal'), 'utf8');
    expect(journal).not.toBe(finished);
    expect(journal).toContain('"complete":false');
    expect(existsSync(join(tmp.dir, 'j.journal.before.journal'))).toBe(false);
  });
});
