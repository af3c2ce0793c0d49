// The package as a script calls it: its errors in the library's own words (a caller who passed
// options reads the names it passed, `port`, `resume`, `maxTotal`, never the command line's flags,
// which the CLI keeps), emulator.requests() checking its query, and what the README offers.
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execWithEmulator, startEmulator, upload, UsageError, withEmulator } from '../../src/index.js';
import { runCli } from '../helpers/cli.js';

/** The error a call rejects with. */
const refusal = (call: () => Promise<unknown>): Promise<Error> =>
  call().then(
    () => {
      throw new Error('expected the call to be refused');
    },
    (error: Error) => error,
  );

/** A flag of the command line anywhere in a message: `--port`, `--resume`. */
const FLAG = /(^|[\s(`'"])--[a-z]/;

describe('startEmulator(), withEmulator() and execWithEmulator()', () => {
  it.each([
    [{ port: 70000 }, /^port: expected 0 to 65535, got 70000$/],
    [{ limits: 'big' }, /^limits: expected mau or legacy/],
    [{ rateLimit: 'fast' }, /^rateLimit: expected requests per window/],
    [{ failRate: 2 }, /^failRate: expected a fraction/],
    [{ failRate: 0.6, dropRate: 0.6 }, /^failRate and dropRate together exceed 1$/],
    [{ maxBodyBytes: 0 }, /^maxBodyBytes: expected a number of bytes/],
    [{ apiKeys: [':users.track'] }, /^apiKeys: the key is empty/],
    [{ requestLog: -1 }, /^requestLog: expected a whole number/],
    [{ batchLimits: { maxTotal: 0 } }, /^batchLimits\.maxTotal: expected a whole number/],
    [{ hourlyLimit: 1.5 }, /^hourlyLimit: expected a whole number/],
    [{ seed: ['/no/such/seed.csv'] }, /^seed \/no\/such\/seed\.csv: no such file/],
    [{ seed: ['-'] }, /^seed: standard input \(-\) cannot be a seed/],
    [{ rateLimt: '1/1s' }, /^startEmulator\(\): unknown option rateLimt$/],
    [{ seed: 'users.csv' }, /^startEmulator\(\): seed is a list of files, such as seed: \['users\.csv'\], got "users\.csv"$/],
  ])('startEmulator(%o) names the option', async (options, message) => {
    const error = await refusal(() => startEmulator(options as never));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toMatch(message);
    expect(error.message).not.toMatch(FLAG);
    expect(error.stack).toContain(error.message);
  });

  it('names port in a port in use, and says port 0 finds a free one', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const error = await refusal(() => startEmulator({ port }));
      expect(error.message).toBe(`port ${port}: 127.0.0.1:${port} is in use (EADDRINUSE); give another port, or port 0 for a free one`);
      const fromWith = await refusal(() => withEmulator({ port }, () => 'never run'));
      expect(fromWith.message).toBe(error.message);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('execWithEmulator() names itself for an empty command and its options for a bad one, running nothing', async () => {
    expect((await refusal(() => execWithEmulator('  '))).message).toBe('execWithEmulator(): expected a command to run, got an empty one');
    expect((await refusal(() => execWithEmulator('true', { latency: 'slow' }))).message).toMatch(/^latency: expected milliseconds/);
    expect((await refusal(() => execWithEmulator('true', { killAfter: 5 } as never))).message).toBe('execWithEmulator(): unknown option killAfter');
  });

  it("leaves the errors of withEmulator's own function as they are", async () => {
    const mine = new UsageError('--my-flag is my own');
    expect(await refusal(() => withEmulator({}, () => Promise.reject(mine)))).toBe(mine);
    expect(mine.message).toBe('--my-flag is my own');
  });
});

describe('upload()', () => {
  const rows = [{ external_id: 'w-1', plan: 'trial' }];

  it.each([
    [{ env: {} }, 'give the service URL with url or TRACK_URL (or use dryRun)'],
    [{ env: { TRACK_URL: 'http://127.0.0.1:9' } }, 'give the API key with apiKey or TRACK_API_KEY (or use dryRun)'],
    [{ url: 'http://127.0.0.1:9', apiKey: 'k', resume: true }, 'resume cannot be used with rows in memory: it cannot be read again'],
    [{ url: 'http://127.0.0.1:9', apiKey: 'k', resume: true, restart: true }, 'give resume or restart, not both'],
    [{ dryRun: true, delimiter: 'ab' }, 'delimiter: expected one of , ; \\t |, got "ab"'],
    [{ dryRun: true, timezone: 'Mars/Base' }, 'timezone: expected an IANA time zone such as Europe/Berlin or UTC, got "Mars/Base"'],
    [{ dryRun: true, full: true }, 'full goes with delta: it sends every attribute and refreshes the state'],
    [{ url: 'ftp://x', apiKey: 'k' }, 'url must start with http:// or https://, not ftp:'],
  ])('upload(%o) with rows in memory names the options', async (options, message) => {
    const error = await refusal(() => upload({ inputs: [rows], ...(options as object) }));
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe(message);
  });

  it('names the journal options, for files', async () => {
    const journal = join(tmpdir(), `track-words-${process.pid}.journal`);
    const error = await refusal(() => upload({ inputs: ['fixtures/attributes.csv'], url: 'http://127.0.0.1:9', apiKey: 'k', resume: true, journal }));
    expect(error.message).toBe(`${journal}: there is no journal to resume from here; check journal, or start without resume`);
  });
});

it('the command line still names its flags', () => {
  const emulate = runCli(['emulate', '--port', '70000']);
  expect(emulate.stderr).toContain('--port: expected 0 to 65535, got 70000');
  const sent = runCli(['upload', 'fixtures/attributes.csv', '--api-key', 'k'], { env: { TRACK_URL: '' } });
  expect(sent.stderr).toContain('give the service URL with --url or TRACK_URL (or use --dry-run)');
});

describe('emulator.requests(query)', () => {
  it('takes a status as a number and an alias as NAME:LABEL, and refuses what GET /_track/requests refuses', async () => {
    await withEmulator({ apiKeys: ['k'] }, async (emulator) => {
      const post = (body: unknown) =>
        fetch(`${emulator.url}/users/track`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: JSON.stringify(body) });
      await post({ attributes: [{ external_id: 'q-1', plan: 'trial' }] });
      await post({ attributes: [{ external_id: 'q-2', plan: 'pro' }, { user_alias: { alias_name: 'crm:eu', alias_label: 'a1' }, plan: 'pro', _update_existing_only: false }] });
      await post({ events: [{ external_id: 'q-2', name: 'opened', time: 'not a time' }] });
      expect(emulator.requests().map((r) => r.status)).toEqual([400, 201, 201]);
      expect(emulator.requests({ status: 201 }).map((r) => r.id)).toEqual([2, 1]);
      expect(emulator.requests({ status: '4XX' }).map((r) => r.id)).toEqual([3]);
      expect(emulator.requests({ alias: 'crm:eu:a1' }).map((r) => r.id)).toEqual([2]);
      expect(emulator.requests({ alias: { alias_name: 'crm:eu', alias_label: 'a1' } }).map((r) => r.id)).toEqual([2]);
      expect(emulator.requests({ alias: 'crm:eu:a2' }).map((r) => r.id)).toEqual([]);
      expect(emulator.requests({ externalId: 'q-2', limit: 1 }).map((r) => r.id)).toEqual([3]);
      // each of these answered every request, none, or a TypeError
      for (const [query, message] of [
        [{ external_id: 'q-1' }, 'requests(): unknown filter external_id (the log\'s filter is externalId); the filters are limit, status, path, externalId, email, phone, alias'],
        [{ status: 'ok' }, `requests(): status: expected a status such as 201, a class such as '4xx', or 'dropped', got "ok"`],
        [{ status: 20 }, `requests(): status: expected a status such as 201, a class such as '4xx', or 'dropped', got 20`],
        [{ limit: 0 }, 'requests(): limit: expected a whole number of at least 1, got 0'],
        [{ limit: '5' }, 'requests(): limit: expected a whole number of at least 1, got "5"'],
        [{ alias: 'crm' }, 'requests(): alias: expected NAME:LABEL, got "crm"'],
        [{ externalId: 7 }, 'requests(): externalId: expected text, got 7'],
        ['4xx', 'requests(): give one object of filters, such as { status: \'4xx\' }, got "4xx"'],
      ] as const) {
        expect(() => emulator.requests(query as never), JSON.stringify(query)).toThrow(new UsageError(message));
      }
    });
  });
});

it("reportDeviceLanguage, which the README offers a library caller, is the package's: a device's locale yields to the endpoint's language", async () => {
  const { reportDeviceLanguage } = await import('../../src/index.js');
  await withEmulator({ apiKeys: ['k'] }, async (emulator) => {
    await fetch(`${emulator.url}/users/track`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ attributes: [{ external_id: 'device' }, { external_id: 'api', language: 'fr' }] }),
    });
    const id = (externalId: string) => emulator.store.profileByExternalId(externalId)!.id;
    expect(reportDeviceLanguage(emulator.store, id('device'), 'de')).toBe(true);
    expect(reportDeviceLanguage(emulator.store, id('api'), 'de')).toBe(false);
    expect(emulator.store.profileByExternalId('device')!.fields.language).toBe('de');
    expect(emulator.store.profileByExternalId('api')!.fields.language).toBe('fr');
  });
});

describe('execWithEmulator() aborted while its command runs', () => {
  it('passes the signal the reason names to the command, and kills a command that ignores it killAfterMs later', async () => {
    const abortOnSpawn = (reason: string) => {
      const controller = new AbortController();
      return { signal: controller.signal, onSpawn: () => setTimeout(() => controller.abort(reason), 200) };
    };
    const began = Date.now();
    expect(await execWithEmulator('sleep 30', { stdio: 'ignore', ...abortOnSpawn('SIGINT') })).toEqual({ status: 130, code: 130, signal: null });
    const kills: string[] = [];
    const stubborn = await execWithEmulator("trap '' TERM; sleep 30 & wait; sleep 30", { stdio: 'ignore', killAfterMs: 300, onKill: (why) => kills.push(why), ...abortOnSpawn('SIGTERM') });
    expect(stubborn).toEqual({ status: 137, code: null, signal: 'SIGKILL' });
    expect(kills).toEqual(['time']);
    expect(Date.now() - began).toBeLessThan(10_000);
  });
});

it('reset() after close() says the emulator is closed; the request log can still be read', async () => {
  const emulator = await startEmulator({ apiKeys: ['k'] });
  await fetch(`${emulator.url}/users/track`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: '{"attributes":[]}' });
  await emulator.close();
  expect(() => emulator.reset()).toThrow(new UsageError('reset(): the emulator is closed (close() was called); start another to reset'));
  expect(emulator.requests().map((r) => r.status)).toEqual([201]);
});

it('leaves a command to run, quoted in backticks, as the command line takes it', async () => {
  const { inLibraryWords, uploadWords } = await import('../../src/library/words.js');
  const error = new UsageError('not this key: record it with `track state --state s.sqlite --add-key https://x` and resume, or give --state another file');
  inLibraryWords(error, uploadWords(['state', 'resume']));
  expect(error.message).toBe('not this key: record it with `track state --state s.sqlite --add-key https://x` and resume, or give state another file');
});
