import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RejectRecord, TrackRequest } from '../../src/model/index.js';
import { validateRequest } from '../../src/model/validate.js';
import { ndjson, ROOT, track, workdir } from './run-cli.js';

let dir: string;
beforeAll(() => {
  dir = workdir();
});

const items = (requests: TrackRequest[], kind: keyof TrackRequest) => requests.flatMap((r) => (r[kind] ?? []) as Array<Record<string, unknown>>);

describe('track validate and track upload --dry-run', () => {
  it('exit 0 for files whose every row is valid; --out writes each request body on a line; no rejects file is left', () => {
    const result = track(['validate', 'attributes.csv', 'events.csv', 'purchases.csv', 'mixed.ndjson', '--out', 'all.ndjson'], { cwd: dir });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/rejected +none/);
    expect(result.stdout).toMatch(/items +5 attributes, 5 events, 3 purchases/);
    const requests = ndjson<TrackRequest>(join(dir, 'all.ndjson'));
    // user-001's attributes in mixed.ndjson come after their event and purchase: a second request
    expect(requests).toHaveLength(2);
    for (const request of requests) expect(validateRequest(request)).toMatchObject({ ok: true, errors: [] });
    expect([items(requests, 'attributes').length, items(requests, 'events').length, items(requests, 'purchases').length]).toEqual([5, 5, 3]);
    expect(items(requests, 'attributes')[0]).toEqual({
      external_id: 'user-001',
      email: 'ada@example.com',
      first_name: 'Ada',
      zip: '02134',
      lifetime_value: 1204.5,
      vip: true,
      address: { city: 'Boston', country_code: 'US' },
      favorite_colors: ['red', 'blue'],
      last_seen: { $time: '2024-03-07T10:00:00Z' },
    });
    expect(existsSync(join(dir, 'attributes.csv.check.rejects.ndjson'))).toBe(false);
  });

  // the lines of a small file are all written as it closes: a full disk then is a stop too, never "written to" and exit 0
  it.skipIf(!existsSync('/dev/full'))('exit 3, naming the file, when its --out or rejects file cannot take even a few lines (/dev/full)', () => {
    for (const args of [['attributes.csv', '--out', '/dev/full'], ['bad-rows.csv', '--rejects', '/dev/full']]) {
      const result = track(['validate', ...args], { cwd: dir });
      expect(result.status, result.stderr).toBe(3);
      expect(result.stderr).toMatch(/cannot write the (requests|rejects) file \/dev\/full: ENOSPC/);
    }
  });

  it('reads each mapping rule as docs/upload.md shows it', () => {
    const out = (file: string, extra: string[] = []) => {
      const result = track(['upload', '--dry-run', file, '--out', `${file}.out`, ...extra], { cwd: dir });
      expect(result.status, result.stderr + result.stdout).toBe(0);
      return ndjson<TrackRequest>(join(dir, `${file}.out`));
    };
    expect(items(out('inference.csv'), 'attributes')).toEqual([
      {
        external_id: '123456789012345678901',
        phone: '+14155552671',
        a: 0,
        b: 0.99,
        c: -2.5,
        d: 10001,
        e: '02134',
        f: '00000',
        g: '1e5',
        h: '12345678901234567890',
        i: true,
        j: false,
        k: 'TRUE',
      },
    ]);
    expect(items(out('annotations.csv'), 'attributes')).toEqual([
      {
        external_id: 'user-001',
        visits: { inc: 1 },
        badges: { add: ['gold'] },
        old_badges: { remove: ['bronze'] },
        zip: '2134',
        score: 1000,
        age: 42,
        newsletter: true,
        preferences: { theme: 'dark', digest: 'weekly' },
        signed_up: { $time: '2023-11-02T08:00:00Z' },
      },
      { external_id: 'user-002', visits: { inc: -3 }, score: 2.5, newsletter: false },
    ]);
    expect(items(out('empty-and-null.csv'), 'attributes')).toEqual([
      { external_id: 'user-001', first_name: 'Ada', plan: 'pro' },
      { external_id: 'user-002', nickname: null },
    ]);
    expect(items(out('identifiers.csv'), 'attributes')).toEqual([
      { external_id: 'user-001', plan: 'pro' },
      { user_alias: { alias_name: 'anon-7f3a', alias_label: 'web_session' }, plan: 'free' },
      { service_id: 'svc-9001', plan: 'team' },
      { email: 'Someone@Example.com', plan: 'free' },
      { phone: '+1 415 555 2671', plan: 'pro' },
    ]);
    expect(items(out('export.csv', ['--map', 'export.map.json']), 'attributes')).toEqual([
      { external_id: 'C-1001', email: 'ada@example.com', zip: '02134', subscription: { plan: 'pro' } },
      { external_id: 'C-1002', email: 'grace@example.com', zip: '10001', subscription: { plan: 'team' } },
    ]);
    const events = out('events.csv');
    expect(items(events, 'events')[1]).toEqual({
      external_id: 'user-002',
      name: 'trial_started',
      time: '2024-03-07T10:30:00.000Z',
      app_id: 'app-ios-1',
      properties: { plan: 'team', seats: 12, coupon: 'SPRING24' },
    });
    expect(items(out('purchases.csv'), 'purchases')[1]).toEqual({
      external_id: 'user-002',
      product_id: 'sku-0042',
      currency: 'eur',
      price: 0.99,
      time: '2024-03-07T12:00:00Z',
    });
  });

  it('exit 1 with every bad row once in the rejects file, with its line, and every good row once in the requests', () => {
    const result = track(['validate', 'bad-rows.csv', 'bad-lines.ndjson', '--out', 'bad.out.ndjson'], { cwd: dir });
    expect(result.status).toBe(1);
    const rejects = ndjson<RejectRecord>(join(dir, 'bad-rows.csv.check.rejects.ndjson'));
    expect(rejects.map((r) => `${r.file}:${r.line}`)).toEqual([
      'bad-rows.csv:3',
      'bad-rows.csv:4',
      'bad-rows.csv:5',
      'bad-rows.csv:6',
      'bad-rows.csv:7',
      'bad-rows.csv:8',
      'bad-rows.csv:9',
      'bad-rows.csv:10',
      'bad-lines.ndjson:2',
      'bad-lines.ndjson:3',
      'bad-lines.ndjson:4',
      'bad-lines.ndjson:5',
      'bad-lines.ndjson:6',
    ]);
    const byLine = (file: string, line: number) => rejects.find((r) => r.file === file && r.line === line) as RejectRecord;
    expect(byLine('bad-rows.csv', 3)).toEqual({
      file: 'bad-rows.csv',
      line: 3,
      kind: 'attributes',
      row: { external_id: 'user-002', email: 'not-an-email', dob: '1991-05-02', 'visits:inc': '', 'preferences:json': '', plan: 'team' },
      errors: ['email: is not a valid email address, got "not-an-email"'],
    });
    expect(byLine('bad-rows.csv', 4).errors).toEqual([expect.stringMatching(/^dob: must be a real date/)]);
    expect(byLine('bad-rows.csv', 5).errors).toEqual(['visits: must be a whole number (the column is typed inc), got "one"']);
    expect(byLine('bad-rows.csv', 6).errors).toEqual([expect.stringMatching(/^preferences: is not valid JSON/)]);
    expect(byLine('bad-rows.csv', 7)).toMatchObject({ errors: ['row: has 7 cells; the header has 6 columns'], row: { _extra_cells: ['extra'] } });
    expect(byLine('bad-rows.csv', 8)).toMatchObject({ errors: ['row: has 2 cells; the header has 6 columns'] });
    expect(byLine('bad-rows.csv', 9).errors).toEqual(['email: is not a valid email address, got "nobody@"']);
    expect(byLine('bad-rows.csv', 10)).toMatchObject({
      row: { email: 'margaret\n@example.com' },
      errors: ['email: is not a valid email address (it has a line break inside it), got "margaret\\n@example.com"'],
    });
    expect(byLine('bad-lines.ndjson', 2)).toMatchObject({ kind: 'unknown', row: '{"external_id": "user-002", "plan": "team"' });
    expect(byLine('bad-lines.ndjson', 5)).toMatchObject({ kind: 'attributes', row: { plan: 'no identifier' } });
    expect(byLine('bad-lines.ndjson', 6).errors).toEqual([expect.stringMatching(/^currency: /)]);

    const requests = ndjson<TrackRequest>(join(dir, 'bad.out.ndjson'));
    expect(items(requests, 'attributes').map((i) => i.external_id)).toEqual(['user-001', 'user-010', 'user-001', 'user-005', 'user-007']);

    expect(result.stdout).toMatch(/rejected +13 rows, written to bad-rows\.csv\.check\.rejects\.ndjson/);
    expect(result.stdout).toMatch(/ 1 +row: has 7 cells; the header has 6 columns/);
    expect(result.stdout).toMatch(/ 2 +email: is not a valid email address\n/);
    expect(result.stdout).toMatch(/ 1 +email: is not a valid email address \(it has a line break inside it\)\n/);
  });

  it('reads a rejects file back as input once its rows are fixed', () => {
    track(['validate', 'bad-rows.csv', '--rejects', 'round.rejects.ndjson'], { cwd: dir });
    const fixed = ndjson<RejectRecord>(join(dir, 'round.rejects.ndjson'))
      .filter((r) => r.line === 3 || r.line === 5)
      .map((r) => ({ ...r, row: { ...(r.row as object), email: 'fixed@example.com', 'visits:inc': '5' } }));
    writeFileSync(join(dir, 'fixed.ndjson'), fixed.map((r) => JSON.stringify(r)).join('\n'));
    const result = track(['upload', '--dry-run', 'fixed.ndjson', '--out', 'fixed.out.ndjson'], { cwd: dir });
    expect(result.status, result.stdout).toBe(0);
    expect(items(ndjson<TrackRequest>(join(dir, 'fixed.out.ndjson')), 'attributes')).toEqual([
      { external_id: 'user-002', email: 'fixed@example.com', dob: '1991-05-02', visits: { inc: 5 }, plan: 'team' },
      { external_id: 'user-004', email: 'fixed@example.com', visits: { inc: 5 }, plan: 'pro' },
    ]);
  });

  it('counts warnings without rejecting: an SMS gateway email, an item that sets nothing', () => {
    const result = track(['validate', 'warnings.csv', '--json'], { cwd: dir });
    expect(result.status).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ rows: 3, rejected: 0, warnings: 2, items: { attributes: 3 } });
    expect(summary.warningExamples).toEqual([expect.stringMatching(/^warnings\.csv:2: email: is an SMS carrier gateway/), expect.stringMatching(/^warnings\.csv:3: item sets no field/)]);
  });

  it("names a JSON array element in warnings and the preview by the line of the file where it begins, and its row", () => {
    writeFileSync(join(dir, 'warn.json'), '[\n  {"external_id": "u1", "email": "a@example.com"},\n  {"external_id": "u2",\n   "email": "4155552671@vtext.com"},\n  {"external_id": "u3"}\n]\n');
    const result = track(['validate', 'warn.json', '--json'], { cwd: dir });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout).warningExamples).toEqual([
      expect.stringMatching(/^warn\.json:3 \(row 2\): email: is an SMS carrier gateway/),
      expect.stringMatching(/^warn\.json:5 \(row 3\): item sets no field/),
    ]);
    const preview = track(['validate', 'warn.json', '--preview', '2'], { cwd: dir });
    expect(preview.stdout).toMatch(/^ {2}line 2, row 1 \(attributes\) \{"external_id":"u1".*\n {2}line 3, row 2 \(attributes\) \{"external_id":"u2"/m);
  });

  it('reads a pretty-printed .json object whole (a request body saved from an editor), not a line at a time', () => {
    const body = { attributes: [{ external_id: 'u1', plan: 'pro' }, { external_id: 'u2', plan: 'team' }], events: [{ external_id: 'u1', name: 'signup', time: '2024-01-01T00:00:00Z' }] };
    writeFileSync(join(dir, 'body.json'), `${JSON.stringify(body, null, 2)}\n`);
    const result = track(['validate', 'body.json', '--json', '--out', 'body.out.ndjson'], { cwd: dir });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ rows: 1, rejected: 0, items: { attributes: 2, events: 1 } });
    expect(ndjson<TrackRequest>(join(dir, 'body.out.ndjson'))).toEqual([body]);
  });

  it('stops an NDJSON file written out over lines (jq without -c) before reading it, naming --format json, which reads it', () => {
    const rows = [{ external_id: 'u1', properties: { plan: 'pro' } }, { external_id: 'u2' }];
    writeFileSync(join(dir, 'spread.ndjson'), rows.map((row) => JSON.stringify(row, null, 2)).join('\n'));
    const result = track(['validate', 'spread.ndjson'], { cwd: dir });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/spread\.ndjson:1: is JSON written out over lines \(its first line is \{ alone\), not one object a line: read it with --format json/);
    expect(existsSync(join(dir, 'spread.ndjson.check.rejects.ndjson'))).toBe(false);
    const read = track(['validate', 'spread.ndjson', '--format', 'json', '--json'], { cwd: dir });
    expect(JSON.parse(read.stdout)).toMatchObject({ rows: 2, rejected: 0, items: { attributes: 2 } });
  });

  it('gives physical lines after quoted cells that span lines, with CRLF and a byte order mark', () => {
    writeFileSync(join(dir, 'lines.csv'), '\ufeffexternal_id,bio,email\r\nu1,"a\r\nb\r\nc",x@example.com\r\n\r\nu2,"d\r\ne",bad\r\nu3,f,y@example.com\r\n');
    const result = track(['validate', 'lines.csv'], { cwd: dir });
    expect(result.status).toBe(1);
    expect(ndjson<RejectRecord>(join(dir, 'lines.csv.check.rejects.ndjson')).map((r) => r.line)).toEqual([6]);
    expect(track(['validate', 'multiline-crlf.csv'], { cwd: dir }).status).toBe(0);
  });

  it('reads gzip, and standard input with --format', () => {
    writeFileSync(join(dir, 'packed.csv.gz'), gzipSync('external_id,plan\nu1,pro\nu2,\n'));
    expect(track(['validate', 'packed.csv.gz', '--json'], { cwd: dir })).toMatchObject({ status: 0 });
    const piped = track(['upload', '--dry-run', '-', '--format', 'ndjson', '--json'], { cwd: dir, input: '{"external_id":"u1","plan":"pro"}\n{"external_id":7}\n' });
    expect(piped.status).toBe(1);
    expect(JSON.parse(piped.stdout)).toMatchObject({ rows: 2, rejected: 1, rejectsPath: 'stdin.check.rejects.ndjson' });
    expect(ndjson<RejectRecord>(join(dir, 'stdin.check.rejects.ndjson'))).toEqual([
      { file: '-', line: 2, kind: 'attributes', row: { external_id: 7 }, errors: [expect.stringMatching(/^external_id: must be a non-empty string/)] },
    ]);
    const gzStdin = track(['validate', '-', '--format', 'csv', '--json'], { cwd: dir, input: gzipSync('external_id\nu1\n') });
    expect(JSON.parse(gzStdin.stdout)).toMatchObject({ rows: 1 });
  });

  it('takes --kind, --limits and explicit numbers', () => {
    const lines = Array.from({ length: 120 }, (_, i) => JSON.stringify({ external_id: `u${i}`, name: 'opened', time: '2024-03-07T10:00:00Z' })).join('\n');
    writeFileSync(join(dir, 'many.ndjson'), lines);
    const requests = (args: string[]) => JSON.parse(track(['validate', 'many.ndjson', '--json', ...args], { cwd: dir }).stdout).requests as number;
    expect(requests([])).toBe(3);
    expect(requests(['--limits', 'legacy'])).toBe(2);
    expect(requests(['--max-total', '7'])).toBe(18);
    expect(requests(['--limits', 'legacy', '--max-per-array', '100'])).toBe(2);
    const asAttributes = JSON.parse(track(['validate', 'many.ndjson', '--json', '--kind', 'attributes'], { cwd: dir }).stdout);
    expect(asAttributes.items).toEqual({ attributes: 120, events: 0, purchases: 0 });
  });
});

describe('usage errors (exit 2)', () => {
  it.each([
    [['validate'], /missing required argument/],
    [['validate', 'missing.csv'], /missing\.csv: no such file/],
    [['validate', 'attributes.csv', '--limits', 'huge'], /argument 'huge' is invalid/],
    [['validate', 'attributes.csv', '--max-total', '0'], /--max-total: expected a whole number/],
    [['validate', 'notes.txt'], /cannot tell the format/],
    [['validate', '-'], /needs --format/],
    [['validate', 'export.csv', '--map', 'nope.json'], /--map nope\.json: no such file/],
    [['validate', 'export.csv'], /export\.csv:1: the header cannot be used:\n {2}the header has no column that names the user/],
    [['validate', 'attributes.csv', '--rejects', 'attributes.csv'], /--rejects attributes\.csv is also an input file/],
    [['upload', 'attributes.csv'], /give the service URL with --url or TRACK_URL/],
  ])('track %j', (args, message) => {
    const result = track(args as string[], { cwd: dir });
    expect(result.stderr).toMatch(message);
    expect(result.status).toBe(2);
  });
});

describe('a mistake found once the rows are read (standard input: no header before the plan)', () => {
  it.each([['validate'], ['upload', '--dry-run']])('track %s: the summary says what stopped the run, exit 2', (...command) => {
    writeFileSync(join(dir, 'zip-map.json'), '{"zip": "zip"}');
    const result = track([...command, '-', '--format', 'csv', '--map', 'zip-map.json'], { cwd: dir, input: 'external_id,visits\nu1,1\n' });
    expect(result.status).toBe(2);
    expect(result.stdout).toMatch(/^stopped +--map:\n +"zip" is not a column of standard input/m);
    expect(result.stderr).toMatch(/"zip" is not a column of standard input/);
  });
});

describe('a mistake in the flags', () => {
  it.each([
    [['upload', '--dryrun', 'attributes.csv'], "error: unknown option '--dryrun'\n(Did you mean --dry-run?)\n(track upload --help lists every option)\n"],
    [['validate', 'attributes.csv', '--qiet'], "error: unknown option '--qiet'\n(Did you mean --quiet?)\n(track validate --help lists every option)\n"],
    [['validat', 'attributes.csv'], "error: unknown command 'validat'\n(Did you mean validate?)\n(track --help lists every command)\n"],
    // written as a config key or an environment variable is written, in another case, or with a value it takes none of
    [['validate', 'attributes.csv', '--emptyAsNull'], "error: unknown option '--emptyAsNull'\n(Did you mean --empty-as-null?)\n(track validate --help lists every option)\n"],
    [['validate', 'attributes.csv', '--EMPTY_AS_NULL'], "error: unknown option '--EMPTY_AS_NULL'\n(Did you mean --empty-as-null?)\n(track validate --help lists every option)\n"],
    [['upload', '--dry-run=yes', 'attributes.csv'], "error: unknown option '--dry-run=yes'\n(Did you mean --dry-run?)\n(track upload --help lists every option)\n"],
    // an option of a command given before it
    [['--dry-run', 'upload', 'attributes.csv'], "error: unknown option '--dry-run'\n(--dry-run is an option of track upload: give it after the command)\n(track --help lists every command)\n"],
    [['--quiet', 'validate', 'attributes.csv'], "error: unknown option '--quiet'\n(--quiet is an option of track validate: give it after the command)\n(track --help lists every command)\n"],
    [['--quiet'], "error: unknown option '--quiet'\n(--quiet is an option of track emulate, track upload, track validate: give it after the command)\n(track --help lists every command)\n"],
  ])('track %j gives the one-line error, a "did you mean" and the help command, not the whole help', (args, stderr) => {
    const result = track(args, { cwd: dir });
    expect(result.stderr).toBe(stderr);
    expect(result.status).toBe(2);
  });
});

describe("the README's first command", () => {
  it('runs clean: every row valid, no note about its own example files', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const command = /npm ci && npx track (upload --dry-run [^\n`]+)/.exec(readme)?.[1];
    expect(command).toBeDefined();
    const result = track(command!.split(' '), { cwd: ROOT });
    expect(result.status).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/rejected +none/);
    expect(result.stdout).not.toMatch(/^note/m);
    expect(result.stdout).not.toMatch(/^warnings/m);
  });
});
