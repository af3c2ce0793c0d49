// A messy CRM export through the real CLI into a real emulator: national phones, yes/no, `a;b` lists
// in a `;` file, several date forms, latin-1 bytes, misspelt headers; the values the emulator ends up
// holding, the rejects (NDJSON and CSV) and the warnings, and the rejects fed back once fixed.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, runCliAsync, spawnEmulator, tempDir, type RunningEmulator } from '../helpers/cli.js';

const HEADER = 'externalid;Email Address;Phone;first name;Opted In;Tags;Signed Up;Birthday;zip;Company';
const ROWS = [
  'C-001;ana@example.com;(415) 555-2671;Ana;yes;"vip;beta";2023-02-02 01:15:00;1990-05-02;02134;Caf\xe9 M\xfcller',
  'C-002;bo@example.com;4155552672;Bo;No;beta;03/03/2023 3:15 PM;1985/12/31;94105;Acme',
  'C-003;cy@example.com;+44 20 7946 0958;Cy;Y;;2023-04-04;07/04/1970;10001;Zo\xeb',
  'C-004;di@example.com;123;Di;n;"a; b ;";1679000000;;2001;X',
  'C-005;eve@example.com;415 555 2673;Eve;maybe;x;1679000000123;13/13/2000;;X',
  ';not-an-email;415 555 2674;Fay;yes;;2023-02-02;;;Y',
];
const MAP = {
  externalid: 'external_id',
  'Email Address': 'email',
  Phone: 'phone',
  'first name': 'first_name',
  'Opted In': 'opted_in:boolean',
  Tags: 'tags:array',
  'Signed Up': 'signed_up:time',
  Birthday: 'dob',
  zip: 'zip:string',
};
const FLAGS = ['--encoding', 'latin1', '--default-country', 'US', '--array-separator', ';', '--date-order', 'mdy', '--timezone', 'America/New_York'];

let emulator: RunningEmulator;
let tmp: { dir: string; cleanup: () => void };
beforeAll(async () => {
  tmp = tempDir();
  writeFileSync(join(tmp.dir, 'export.csv'), Buffer.from(`${[HEADER, ...ROWS].join('\r\n')}\r\n`, 'latin1'));
  writeFileSync(join(tmp.dir, 'map.json'), JSON.stringify(MAP));
  emulator = await spawnEmulator(['--db', ':memory:', '--api-key', 'k', '--quiet']);
});
afterAll(async () => {
  emulator.proc.kill('SIGTERM');
  await emulator.exited;
  tmp.cleanup();
});

const users = async (ids: string[]) =>
  ((await postJson(`${emulator.url}/users/export/ids`, 'k', { external_ids: ids })).body.users as Array<Record<string, any>>).sort((a, b) =>
    a.external_id.localeCompare(b.external_id),
  );
const upload = (args: string[]) => runCliAsync(['upload', ...args, '--url', emulator.url, '--api-key', 'k', '--quiet'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });

describe('a CRM export', () => {
  it('a header naming no user says which columns likely do, as --map entries', async () => {
    const result = await runCliAsync(['validate', 'export.csv', '--encoding', 'latin1'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('the header has no column that names the user');
    expect(result.stderr).toContain('column "externalid" looks like external_id: put {"externalid": "external_id"} in a --map file and give --map FILE');
    expect(result.stderr).toContain('column "Email Address" looks like email: put {"Email Address": "email"} in a --map file');
  });

  it('validate warns of the misspelt and mixed-type columns and the delimiter it detected, and reads national U.S. phones as U.S.', async () => {
    writeFileSync(join(tmp.dir, 'part.json'), JSON.stringify({ 'Email Address': 'email', Phone: 'phone' }));
    const result = await runCliAsync(['validate', 'export.csv', '--encoding', 'latin1', '--map', 'part.json'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(result.status).toBe(1);
    expect(result.stdout).toContain('note        export.csv: read with ";" between cells, as its header line uses');
    expect(result.stdout).toContain(`column "externalid" becomes the custom attribute "externalid", and the rows' users are found by email, but looks like external_id; to read it as external_id, put {"externalid": "external_id"} in a --map file`);
    expect(result.stdout).toContain('column "first name" becomes the custom attribute "first name", but looks like first_name');
    expect(result.stdout).toMatch(/column "zip" was guessed as 3 numbers and 1 text, so profiles will hold mixed types; type it: \{"zip": "zip:string"\}/);
    // valid 10-digit U.S. numbers without a country code are read as U.S. (decisions.md): only C-004's 123 is no phone
    expect(result.stdout).toMatch(/^ +1 +phone: is not a valid phone number$/m);
    expect(result.stdout).not.toMatch(/give --default-country/);
  });

  it('--preview shows the first rows as the items they become, before the summary', async () => {
    const result = await runCliAsync(['validate', 'export.csv', '--map', 'map.json', ...FLAGS, '--preview', '1'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    const [preview, summary] = result.stdout.split('validate: ');
    expect(preview).toContain('preview of export.csv:\n  line 2 (attributes) {"external_id":"C-001","email":"ana@example.com","phone":"+14155552671"');
    expect(summary).toMatch(/^1 file, 6 rows/);
    const json = await runCliAsync(['validate', 'export.csv', '--map', 'map.json', ...FLAGS, '--preview', '2', '--json'], { cwd: tmp.dir });
    expect(JSON.parse(json.stdout).preview.map((row: { line: number; item: { tags?: string[] } }) => [row.line, row.item.tags])).toEqual([
      [2, ['vip', 'beta']],
      [3, ['beta']],
    ]);
  });

  it('uploads with the flags: E.164 phones, booleans, arrays, UTC times and dates; bad fields dropped to the rejects file; fixed rejects go back in', async () => {
    const result = await upload(['export.csv', '--map', 'map.json', ...FLAGS, '--drop-invalid-fields', '--rejects', 'rejects.ndjson']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(1); // fields dropped wait in the rejects file
    expect(result.stdout).toMatch(/dropped +3 fields left out of rows sent without them, written to rejects.ndjson/);
    expect(result.stdout).toMatch(/rejected +1 row/);
    const held = await users(['C-001', 'C-002', 'C-003', 'C-004', 'C-005']);
    expect(held.map((u) => [u.external_id, u.phone ?? null, u.custom_attributes.opted_in ?? null, u.custom_attributes.tags ?? null, u.custom_attributes.signed_up, u.dob ?? null])).toEqual([
      ['C-001', '+14155552671', true, ['vip', 'beta'], '2023-02-02T06:15:00.000Z', '1990-05-02'],
      ['C-002', '+14155552672', false, ['beta'], '2023-03-03T20:15:00.000Z', '1985-12-31'],
      ['C-003', '+442079460958', true, null, '2023-04-04T04:00:00.000Z', '1970-07-04'],
      ['C-004', null, false, ['a', 'b'], '2023-03-16T20:53:20.000Z', null],
      ['C-005', '+14155552673', null, ['x'], '2023-03-16T20:53:20.123Z', null],
    ]);
    expect(held[0].custom_attributes.Company).toBe('Café Müller');
    expect(held[0].custom_attributes.zip).toBe('02134');
    expect(held[3].custom_attributes.zip).toBe('2001');

    const rejects = readFileSync(join(tmp.dir, 'rejects.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(rejects.map((r) => [r.line, r.column ?? null, r.value ?? null, r.row, r.errors[0].replace(/, got .*/, '')])).toEqual([
      [5, 'phone', '123', { external_id: 'C-004', phone: '123' }, 'phone (column "Phone"): is not a valid phone number, in US (--default-country) or with its country code'],
      [6, 'opted_in:boolean', 'maybe', { external_id: 'C-005', 'opted_in:boolean': 'maybe' }, 'opted_in (column "Opted In"): must be true or false (also yes, no, y, n, 1, 0; the column is typed boolean)'],
      [6, 'dob', '13/13/2000', { external_id: 'C-005', dob: '13/13/2000' }, 'dob (column "Birthday"): is not a real date read as month/day/year (--date-order mdy)'],
      [7, null, null, expect.objectContaining({ external_id: '', email: 'not-an-email', 'opted_in:boolean': 'yes' }), 'email: is not a valid email address'],
    ]);

    // fixed, without their errors, they go back in (the whole row and the fields alike)
    const fixed = rejects.map(({ errors: _errors, ...record }) => {
      const row = { ...record.row };
      if (row.phone === '123') row.phone = '415 555 2675';
      if (row['opted_in:boolean'] === 'maybe') row['opted_in:boolean'] = 'yes';
      if (row.dob === '13/13/2000') row.dob = '12/13/2000';
      if (row.email === 'not-an-email') Object.assign(row, { email: 'fay@example.com', external_id: 'C-006' });
      return { ...record, row };
    });
    writeFileSync(join(tmp.dir, 'fixed.ndjson'), fixed.map((r) => JSON.stringify(r)).join('\n'));
    const again = await upload(['fixed.ndjson', '--default-country', 'US', '--date-order', 'mdy', '--rejects', 'fixed.rejects.ndjson']);
    expect(again.status, again.stdout).toBe(0);
    const after = await users(['C-004', 'C-005', 'C-006']);
    expect(after.map((u) => [u.external_id, u.phone, u.custom_attributes.opted_in, u.dob ?? null, u.email])).toEqual([
      ['C-004', '+14155552675', false, null, 'di@example.com'],
      ['C-005', '+14155552673', true, '2000-12-13', 'eve@example.com'],
      ['C-006', '+14155552674', true, null, 'fay@example.com'],
    ]);
  });

  it('--rejects-format csv writes the rows under the header with _file, _line, _kind, _column, _errors, and reads them back', async () => {
    const result = await runCliAsync(['validate', 'export.csv', '--encoding', 'latin1', '--rejects-format', 'csv', '--map', 'map.json'], { cwd: tmp.dir });
    expect(result.status).toBe(1);
    const text = readFileSync(join(tmp.dir, 'export.csv.check.rejects.csv'), 'utf8');
    const lines = text.trim().split('\n');
    expect(lines[0]).toBe('external_id,email,phone,first_name,opted_in:boolean,tags:array,signed_up:time,dob,zip:string,Company,_file,_line,_kind,_column,_errors');
    expect(lines[1]).toMatch(/^C-001,ana@example.com,\(415\) 555-2671,Ana,yes,vip;beta,2023-02-02 01:15:00,1990-05-02,02134,Café Müller,export.csv,2,attributes,,"/);
    // fixed in a spreadsheet: here, the flags that read it
    const back = await runCliAsync(['validate', 'export.csv.check.rejects.csv', ...FLAGS.slice(2), '--out', 'back.ndjson', '--rejects', 'back.rejects.ndjson'], { cwd: tmp.dir });
    expect(back.stdout).toMatch(/export.csv.check.rejects.csv +6 rows \(csv, attributes\)/);
    const sent = JSON.parse(readFileSync(join(tmp.dir, 'back.ndjson'), 'utf8').split('\n')[0]).attributes;
    expect(sent[0]).toEqual(expect.objectContaining({ external_id: 'C-001', phone: '+14155552671', tags: ['vip', 'beta'], Company: 'Café Müller' }));
    expect(Object.keys(sent[0])).not.toContain('_file');
  });
});
