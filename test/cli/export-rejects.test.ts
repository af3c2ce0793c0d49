// The CRM-export reading through the real CLI: CSV rejects of several kinds fed back, the header
// error's delimiter, --preview of standard input and into a pipe closed early.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliReaderGone, tempDir } from '../helpers/cli.js';

let tmp: { dir: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir();
});
afterAll(() => tmp.cleanup());

const track = (args: string[], input?: string) => runCli(args, { cwd: tmp.dir, input, env: { NO_COLOR: '1' } });

describe('CRM-export reading through the CLI', () => {
  it('a CSV rejects file of attributes and events rows reads each row back as its _kind says', () => {
    writeFileSync(join(tmp.dir, 'at.csv'), 'external_id,email,plan\nu1,bad,gold\n');
    writeFileSync(join(tmp.dir, 'evs.csv'), 'external_id,name,time,properties.n:integer\nu1,login,2023-01-01T00:00:00Z,x\n');
    expect(track(['validate', 'at.csv', 'evs.csv', '--rejects-format', 'csv']).status).toBe(1);
    const text = readFileSync(join(tmp.dir, 'at.csv.check.rejects.csv'), 'utf8');
    expect(text.split('\n')[0]).toBe('external_id,email,plan,name,time,properties.n:integer,_file,_line,_kind,_column,_errors');
    writeFileSync(join(tmp.dir, 'at.csv.check.rejects.csv'), text.replace(',bad,', ',u1@example.com,').replace('Z,x,', 'Z,5,'));
    const back = track(['validate', 'at.csv.check.rejects.csv', '--out', 'back.ndjson']);
    expect(back.status, back.stdout).toBe(0);
    const [request] = readFileSync(join(tmp.dir, 'back.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(request).toEqual({
      attributes: [{ external_id: 'u1', email: 'u1@example.com', plan: 'gold' }],
      events: [{ external_id: 'u1', name: 'login', time: '2023-01-01T00:00:00Z', properties: { n: 5 } }],
    });
    // a _kind that names no kind rejects its row
    writeFileSync(join(tmp.dir, 'odd.csv'), 'external_id,plan,_kind\nu1,gold,people\n');
    const odd = track(['validate', 'odd.csv']);
    expect(odd.stdout).toMatch(/_kind: must be attributes, events or purchases \(or empty\)/);
  });

  it('a header that cannot be used says which delimiter it was read with, or which other one its names hold', () => {
    writeFileSync(join(tmp.dir, 'semi.csv'), 'externalid;Email Address\nC-1;a@example.com\n');
    expect(track(['validate', 'semi.csv']).stderr).toContain('read with ";" between cells, as its header line uses (give --delimiter to choose)');
    writeFileSync(join(tmp.dir, 'company.csv'), 'ID;Company, Inc, Ltd\nC-1;x\n');
    expect(track(['validate', 'company.csv']).stderr).toContain('the header was read with "," between cells and its names hold ";": if that is the delimiter, give --delimiter ";"');
    writeFileSync(join(tmp.dir, 'named.csv'), 'external_id;Company, Inc, Ltd\nC-1;x\n');
    expect(track(['validate', 'named.csv']).status).toBe(0);
  });

  it('--preview reads standard input, and the run still reads all of it', () => {
    const rows = Array.from({ length: 2000 }, (_, i) => `u${i},${i}`).join('\n');
    const result = track(['validate', '-', '--format', 'csv', '--preview', '2'], `external_id,n\n${rows}\n`);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('preview of -:\n  line 2 (attributes) {"external_id":"u0","n":0}\n  line 3 (attributes) {"external_id":"u1","n":1}\n');
    expect(result.stdout).toMatch(/-  2,000 rows \(csv, attributes\)/);
    const one = track(['validate', '-', '--format', 'csv'], 'external_id\nu1\n');
    expect(one.stdout).toContain('estimate    1 request takes under a second');
  });

  it('--preview into a pipe closed early ends quietly, with the run\'s own status', async () => {
    writeFileSync(join(tmp.dir, 'big.csv'), `external_id,n\n${Array.from({ length: 20_000 }, (_, i) => `u${i},${i}`).join('\n')}\n`);
    const { status, stderr } = await runCliReaderGone(['validate', 'big.csv', '--preview', '20000'], { cwd: tmp.dir });
    expect(stderr).toBe('');
    expect(status).toBe(0);
  });
});
