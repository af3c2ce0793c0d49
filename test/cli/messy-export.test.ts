// A nightly CRM export as such exports are written (Windows-1252, its own headers, national phones,
// TRUE/FALSE and yes/no/Y/N, `;` lists, empty cells, a broken row) taken through the real CLI into a
// real emulator on port 0: what the header error suggests, a --map naming no column, the notes that
// name annotations, reasons and the encoding note, --empty-as-null night over night, and inspect.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRM_FLAGS, CRM_MAP, crmCompany, crmRow, crmVip, writeCrmExport } from '../helpers/crm-export.js';
import { BIN, postJson, runCliAsync, spawnEmulator, tempDir, type RunningEmulator } from '../helpers/cli.js';

const ROWS = 240;
let emulator: RunningEmulator;
let tmp: { dir: string; cleanup: () => void };
const cli = (args: string[]) => runCliAsync(args, { cwd: tmp.dir, env: { NO_COLOR: '1', TRACK_URL: '', TRACK_API_KEY: '' } });
const upload = (args: string[]) => cli(['upload', ...args, '--url', emulator.url, '--api-key', 'k', '--quiet']);
const requestsLogged = async (): Promise<unknown[]> => ((await (await fetch(`${emulator.url}/_track/requests`)).json()) as { requests: unknown[] }).requests;
const users = async (ids: string[]) =>
  ((await postJson(`${emulator.url}/users/export/ids`, 'k', { external_ids: ids })).body.users as Array<Record<string, any>>).sort((a, b) =>
    a.external_id.localeCompare(b.external_id),
  );

beforeAll(async () => {
  tmp = tempDir();
  writeCrmExport(join(tmp.dir, 'night1.csv'), ROWS, 1);
  writeCrmExport(join(tmp.dir, 'night2.csv'), ROWS, 2);
  writeFileSync(join(tmp.dir, 'map.json'), JSON.stringify(CRM_MAP));
  // the database where inspect looks when given no --db
  emulator = await spawnEmulator(['--db', join(tmp.dir, 'track-emulator.sqlite'), '--api-key', 'k', '--quiet']);
});
afterAll(async () => {
  emulator.proc.kill('SIGTERM');
  await emulator.exited;
  tmp.cleanup();
});

describe('a header that names no user', () => {
  it('suggests the id column as external_id first, then email, then phone, each as a --map line', async () => {
    const result = await cli(['validate', 'night1.csv', '--encoding', 'windows-1252']);
    expect(result.status).toBe(2);
    const fixes = result.stderr.split('\n').filter((line) => line.includes(' looks like '));
    expect(fixes).toEqual([
      '  column "Contact ID" looks like external_id: put {"Contact ID": "external_id"} in a --map file and give --map FILE',
      '  column "E-mail Address" looks like email: put {"E-mail Address": "email"} in a --map file and give --map FILE',
      '  column "Mobile Phone" looks like phone: put {"Mobile Phone": "phone"} in a --map file and give --map FILE',
    ]);
  });
});

describe('a --map naming a column no input has', () => {
  it('is a usage error with "did you mean", before anything is written or sent', async () => {
    writeFileSync(join(tmp.dir, 'typo.json'), JSON.stringify({ ...CRM_MAP, 'E-mail Address': undefined, 'Email Adress': 'email' }));
    const before = (await requestsLogged()).length;
    for (const command of [['validate'], ['upload', '--url', emulator.url, '--api-key', 'k']]) {
      const result = await cli([...command, 'night1.csv', '--map', 'typo.json', ...CRM_FLAGS, '--out', 'typo.out.ndjson', '--rejects', 'typo.rejects.ndjson']);
      expect(result.status).toBe(2);
      expect(result.stderr).toBe('track: --map typo.json:\n  "Email Adress" is not a column of night1.csv; did you mean "E-mail Address"?\n');
      expect(result.stdout).toBe('');
    }
    expect(existsSync(join(tmp.dir, 'typo.out.ndjson'))).toBe(false);
    expect(existsSync(join(tmp.dir, 'typo.rejects.ndjson'))).toBe(false);
    expect(readdirSync(tmp.dir).filter((name) => name.includes('journal'))).toEqual([]);
    expect(await requestsLogged()).toHaveLength(before);
  });

  it('gives way to a header that cannot be read, whose columns no one knows: its encoding is told', async () => {
    // Excel's "Unicode text" (UTF-16LE with its mark) and a Windows-1252 header, each read as UTF-8
    writeFileSync(join(tmp.dir, 'unicode.csv'), Buffer.from('\ufeffCustomer ID\tEmail\r\nC-1\ta@example.com\r\n', 'utf16le'));
    writeFileSync(join(tmp.dir, 'street.csv'), Buffer.from('Customer ID,Straße\r\nC-1,Hauptstraße 1\r\n', 'latin1'));
    writeFileSync(join(tmp.dir, 'customer.json'), JSON.stringify({ 'Customer ID': 'external_id', Email: 'email', Straße: 'street' }));
    const unicode = await cli(['validate', 'unicode.csv', '--map', 'customer.json']);
    expect(unicode.status).toBe(2);
    expect(unicode.stderr).toMatch(/^track: unicode.csv:1: the header cannot be read: .*\n  the file starts with FF FE, the mark of UTF-16LE .*: give --encoding utf-16le\n$/);
    const street = await cli(['validate', 'street.csv', '--map', 'customer.json']);
    expect(street.status).toBe(2);
    expect(street.stderr).toMatch(/^track: street.csv:1: the header cannot be read: column 2: .*\n  0xDF is "ß" in Windows-1252, .*give --encoding windows-1252\n$/);
    // standard input's header too, read by the plan
    const piped = spawnSync(process.execPath, [BIN, 'validate', '-', '--format', 'csv', '--map', 'customer.json'], { cwd: tmp.dir, input: readFileSync(join(tmp.dir, 'unicode.csv')), encoding: 'utf8' });
    expect(piped.status).toBe(2);
    expect(piped.stderr).toContain('the file starts with FF FE, the mark of UTF-16LE');
    expect(piped.stderr).not.toContain('is not a column');
  });

  it('is read as Windows editors save it, with the UTF-8 mark or in UTF-16 (as PowerShell writes with >); a map in another encoding is told', async () => {
    const text = JSON.stringify(CRM_MAP, null, 2).replace(/\n/g, '\r\n');
    writeFileSync(join(tmp.dir, 'bom.json'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    writeFileSync(join(tmp.dir, 'wide.json'), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
    writeFileSync(join(tmp.dir, 'plain.json'), text);
    const plain = await cli(['validate', 'night1.csv', '--map', 'plain.json', ...CRM_FLAGS, '--json']);
    expect(plain.status).toBe(1);
    for (const map of ['bom.json', 'wide.json']) {
      const result = await cli(['validate', 'night1.csv', '--map', map, ...CRM_FLAGS, '--json']);
      expect(result.stderr).toBe('');
      expect({ ...JSON.parse(result.stdout), elapsedMs: 0 }).toEqual({ ...JSON.parse(plain.stdout), elapsedMs: 0 });
    }
    // "Téléphone" as Windows-1252 writes it: the key would be U+FFFD and match nothing
    writeFileSync(join(tmp.dir, 'ansi.json'), Buffer.from('{"Contact ID": "external_id", "T\xe9l\xe9phone": "phone"}', 'latin1'));
    const ansi = await cli(['validate', 'night1.csv', '--map', 'ansi.json', ...CRM_FLAGS]);
    expect(ansi.status).toBe(2);
    expect(ansi.stderr).toBe('track: --map ansi.json: is not UTF-8 (byte 0xE9 at byte offset 32); save it as UTF-8\n');
  });

  it('may name a column that only some of the inputs have', async () => {
    writeFileSync(join(tmp.dir, 'plans.csv'), 'Contact ID,Plan\r\nC-00001,pro\r\n');
    writeFileSync(join(tmp.dir, 'both.json'), JSON.stringify({ ...CRM_MAP, Plan: 'plan' }));
    const result = await cli(['validate', 'night1.csv', 'plans.csv', '--map', 'both.json', ...CRM_FLAGS, '--rejects', 'both.rejects.ndjson', '--json']);
    expect(result.status).toBe(1); // the broken and misspelt rows of the export
    expect(JSON.parse(result.stdout).items.attributes).toBe(ROWS - 2 + 1);
  });
});

describe('the summary of an export read with the default flags', () => {
  it('names the annotation of boolean and list columns, groups reasons by message, and says which encoding the bytes look like', async () => {
    writeFileSync(join(tmp.dir, 'ids.json'), JSON.stringify({ 'Contact ID': 'external_id', 'E-mail Address': 'email' }));
    const result = await cli(['validate', 'night1.csv', '--map', 'ids.json', '--rejects', 'plain.rejects.ndjson']);
    expect(result.status).toBe(1);
    const notes = result.stdout.split('\n').filter((line) => line.startsWith('note'));
    expect(notes).toContainEqual(expect.stringMatching(/column "VIP" was guessed as text, but its \d+ cells are all yes\/no words .* type it: \{"VIP": "VIP:boolean"\} in a --map file/));
    expect(notes).toContainEqual(expect.stringMatching(/column "Opted In \(Y\/N\)" was guessed as text, but .* \{"Opted In \(Y\/N\)": "Opted In \(Y\/N\):boolean"\}/));
    expect(notes).toContainEqual(expect.stringMatching(/column "Tags" holds lists \(\d+ cells hold ";"\), .* \{"Tags": "Tags:array"\} in a --map file, or the header "Tags:array", and give --array-separator ';'$/));
    expect(notes).toContainEqual(expect.stringMatching(/night1.csv: \d+ of 241 rows hold bytes that are not valid UTF-8; they look like Windows-1252, .*"é" \(0xE9\).*: read the file with --encoding windows-1252/));
    // one line per reason with its count, never a line per byte offset (the misspelt emails' rows hold such bytes too)
    const reasons = result.stdout.split('\n').filter((line) => /^ {14} *\d/.test(line));
    expect(reasons.map((line) => line.trim().replace(/^[\d,]+ +/, '')).sort()).toEqual([
      'Company: bytes not valid UTF-8; save the file as UTF-8, or give its encoding with --encoding latin1, windows-1252 or utf-16le',
      'First Name: bytes not valid UTF-8; save the file as UTF-8, or give its encoding with --encoding latin1, windows-1252 or utf-16le',
      'row: has 3 cells; the header has 11 columns',
    ]);
    expect(result.stdout).not.toContain('other reasons');
  });

  it('says the same in an upload: the encoding note, and the grouped reasons', async () => {
    const result = await upload(['night1.csv', '--map', 'ids.json', '--rejects', 'plain-upload.rejects.ndjson', '--json']);
    const summary = JSON.parse(result.stdout);
    expect(summary.notes).toContainEqual(expect.stringMatching(/rows hold bytes that are not valid UTF-8; they look like Windows-1252.*--encoding windows-1252/));
    expect(Object.keys(summary.rejectReasons).filter((reason) => reason.includes('UTF-8'))).toEqual([
      'First Name: bytes not valid UTF-8; save the file as UTF-8, or give its encoding with --encoding latin1, windows-1252 or utf-16le',
      'Company: bytes not valid UTF-8; save the file as UTF-8, or give its encoding with --encoding latin1, windows-1252 or utf-16le',
    ]);
    await postJson(`${emulator.url}/_track/reset`, 'k', {});
  });
});

describe('--empty-as-null, night over night', () => {
  it('clears what the CRM emptied, never an identifier, and counts the nulls as data points', async () => {
    const first = await upload(['night1.csv', '--map', 'map.json', ...CRM_FLAGS, '--rejects', 'n1.rejects.ndjson', '--journal', 'n1.journal']);
    expect(first.status).toBe(1); // the broken row and the misspelt emails
    const ids = ['C-00010', 'C-00011', 'C-00012', 'C-00030'];
    expect((await users(ids)).map((u) => u.custom_attributes.company ?? null)).toEqual(ids.map((id) => crmCompany(Number(id.slice(2)), 1) || null));

    const dry = await cli(['validate', 'night2.csv', '--map', 'map.json', ...CRM_FLAGS, '--rejects', 'n2.rejects.ndjson', '--json']);
    const withNulls = await cli(['validate', 'night2.csv', '--map', 'map.json', ...CRM_FLAGS, '--empty-as-null', '--rejects', 'n2.rejects.ndjson', '--json', '--out', 'n2.out.ndjson']);
    // every empty cell of a valid row but the phone's (an identifier) is one more data point
    let nulls = 0;
    for (let i = 1; i <= ROWS; i += 1) if (i % 97 !== 0) nulls += crmRow(i, 2).filter((cell, column) => cell === '' && column !== 4).length;
    expect(nulls).toBeGreaterThan(50);
    expect(JSON.parse(withNulls.stdout).dataPoints.planned - JSON.parse(dry.stdout).dataPoints.planned).toBe(nulls);
    const sent = readFileSync(join(tmp.dir, 'n2.out.ndjson'), 'utf8').trim().split('\n').flatMap((line) => JSON.parse(line).attributes);
    const byId = (id: string): Record<string, unknown> => sent.find((item: Record<string, unknown>) => item.external_id === id);
    expect(byId('C-00010')).toMatchObject({ company: null, phone: '+13325550010' });
    // C-00014's phone cell is empty: an identifier is never sent as null
    expect(byId('C-00014')).toMatchObject({ tags: null, company: null });
    expect('phone' in byId('C-00014')).toBe(false);

    const second = await upload(['night2.csv', '--map', 'map.json', ...CRM_FLAGS, '--empty-as-null', '--rejects', 'n2.rejects.ndjson', '--journal', 'n2.journal']);
    expect(second.status).toBe(1);
    const after = await users(ids);
    expect(after.map((u) => [u.external_id, u.custom_attributes.company ?? null, u.custom_attributes.vip])).toEqual(
      ids.map((id) => [id, crmCompany(Number(id.slice(2)), 2) || null, crmVip(Number(id.slice(2)), 2)]),
    );
    expect(after[0].phone).toBe('+13325550010'); // C-00010 keeps its phone from night 1
    expect(after[0].custom_attributes.company).toBeUndefined();
  });

  it('never clears a property of an event', async () => {
    writeFileSync(join(tmp.dir, 'logins.csv'), 'external_id,name,time,properties.plan\r\nC-00001,login,2024-01-01T00:00:00Z,\r\n');
    const result = await cli(['validate', 'logins.csv', '--empty-as-null', '--out', 'logins.out.ndjson']);
    expect(result.status).toBe(0);
    expect(JSON.parse(readFileSync(join(tmp.dir, 'logins.out.ndjson'), 'utf8')).events).toEqual([{ external_id: 'C-00001', name: 'login', time: '2024-01-01T00:00:00Z' }]);
  });
});

describe('track inspect', () => {
  it('reads ./track-emulator.sqlite when given no --db, and a national phone as the emulator stores it', async () => {
    const result = await cli(['inspect', '--phone', '(332) 555-0011']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout).map((p: { external_id: string; phone: string }) => [p.external_id, p.phone])).toEqual([['C-00011', '+13325550011']]);
    const none = await cli(['inspect', '--phone', '(332) 555-9999']);
    expect(none.status).toBe(1);
    expect(none.stderr).toBe('track: no profile with phone "(332) 555-9999" in ./track-emulator.sqlite\n');
  });
});

describe('--delta against a target the state knows under another name', () => {
  it('notes the name the state knows the same host by', async () => {
    const port = new URL(emulator.url).port;
    const localhost = `http://localhost:${port}`;
    const first = await cli(['upload', 'night1.csv', '--map', 'map.json', ...CRM_FLAGS, '--delta', '--state', 'state.sqlite', '--url', localhost, '--api-key', 'k', '--quiet', '--rejects', 'd.rejects.ndjson', '--journal', 'd.journal']);
    expect(first.status).toBe(1);
    const other = await cli(['validate', 'night1.csv', '--map', 'map.json', ...CRM_FLAGS, '--delta', '--state', 'state.sqlite', '--url', emulator.url, '--rejects', 'd.rejects.ndjson']);
    expect(other.stdout).toContain(
      `note        --state state.sqlite knows nothing of ${emulator.url}/users/track, but knows ${localhost}/users/track, the same host under another name: this run compares with nothing and sends every value again; if they are one server, give --url ${localhost}`,
    );
    const same = await cli(['validate', 'night1.csv', '--map', 'map.json', ...CRM_FLAGS, '--delta', '--state', 'state.sqlite', '--url', localhost, '--rejects', 'd.rejects.ndjson']);
    expect(same.stdout).not.toContain('another name');
    expect(same.stdout).toMatch(/items +0 attributes/);
  });
});
