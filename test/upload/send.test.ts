// `track upload` end to end: the real CLI against the emulator and a fault-injecting server on port 0.
import { spawn } from 'node:child_process';
import { readFileSync, existsSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/index.js';
import { BIN, ROOT, runCliAsync as runCli, tempDir } from '../helpers/cli.js';
import { range, storedNs, writeEventsCsv } from '../helpers/events.js';
import { startFaultServer, type FaultAction, type FaultServer } from '../helpers/fault-server.js';

let tmp: ReturnType<typeof tempDir>;
let emu: Emulator | undefined;
let faults: FaultServer | undefined;
beforeEach(() => (tmp = tempDir()));
afterEach(async () => {
  await emu?.close();
  await faults?.close();
  emu = faults = undefined;
  tmp.cleanup();
});

const eventsCsv = (rows: number, name = 'events.csv'): string => writeEventsCsv(tmp.dir, rows, name);

/** The journal an upload of `<name>` (`events.csv`) keeps for its target: `<name>.<scheme>-<host>-<port>.journal`. */
function journalOf(name: string, url: string): string {
  const { protocol, hostname, port } = new URL(url);
  return join(tmp.dir, `${name}.${protocol.slice(0, -1)}-${hostname}-${port}.journal`);
}

describe('track upload', () => {
  it('delivers every row once and exits 0, with the key in no output or file', async () => {
    emu = await startEmulator({ apiKeys: ['secret-upload-key'] });
    const file = eventsCsv(230);
    const r = await runCli(['upload', file, '--url', emu.url, '--json'], { env: { TRACK_API_KEY: 'secret-upload-key' } });
    expect(r.stderr).not.toContain('secret-upload-key');
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.delivery.items.events).toMatchObject({ sent: 230, accepted: 230, rejected: 0 });
    expect(storedNs(emu)).toEqual(range(230));
    expect(r.stdout).not.toContain('secret-upload-key');
    const journal = readFileSync(journalOf('events.csv', emu.url), 'utf8');
    expect(journal).not.toContain('secret-upload-key');
  });

  it('takes the URL and key from TRACK_URL and TRACK_API_KEY', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const r = await runCli(['upload', eventsCsv(10), '--quiet'], { env: { TRACK_URL: emu.url, TRACK_API_KEY: 'k' } });
    expect(r.status).toBe(0);
    expect(storedNs(emu)).toEqual(range(10));
  });

  it('writes rows the server refuses to the rejects file with their lines, and exits 1', async () => {
    emu = await startEmulator({ apiKeys: ['k'], blocklist: ['user-3'] });
    const file = eventsCsv(8);
    // one request of 8 events: the blocklisted user makes the server refuse it whole, and its parts
    // leave that user's row alone to be refused
    const r = await runCli(['upload', file, '--url', emu.url, '--api-key', 'k', '--quiet']);
    expect(r.status).toBe(1);
    const rejects = readFileSync(join(tmp.dir, 'events.csv.rejects.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(rejects.map((x) => [x.line, x.errors])).toEqual([[5, ['HTTP 400: provided external_id is blocklisted and not allowed, got "user-3"']]]);
    expect(storedNs(emu)).toEqual([0, 1, 2, 4, 5, 6, 7]);
  });

  it('rides through 429s, 5xx and dropped connections without losing or doubling a row', async () => {
    const script: Record<number, FaultAction> = {
      0: { kind: 'status', status: 503 },
      1: { kind: 'rate-limit', retryAfter: 1 },
      2: { kind: 'destroy', applied: false },
      4: { kind: 'status', status: 500 },
    };
    faults = await startFaultServer((request) => script[request.index]);
    const r = await runCli(['upload', eventsCsv(400), '--url', faults.url, '--api-key', 'k', '--json', '--concurrency', '2']);
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary.delivery.rateLimited).toBe(1);
    expect(summary.delivery.retries).toBeGreaterThanOrEqual(3);
    const ns = faults.appliedItems().map(({ item }) => (item.properties as { n: number }).n).sort((a, b) => a - b);
    expect(ns).toEqual(range(400));
  });

  it('keeps under the emulator rate limit and delivers everything', async () => {
    emu = await startEmulator({ apiKeys: ['k'], rateLimit: '4/1s' });
    const r = await runCli(['upload', eventsCsv(400), '--url', emu.url, '--api-key', 'k', '--json', '--rate', '50']);
    expect(r.status).toBe(0);
    expect(storedNs(emu)).toEqual(range(400));
  });

  it('counts rows of requests whose outcome could not be known, or rejects them with --on-unknown reject', async () => {
    let dropped = 0;
    faults = await startFaultServer(() => (dropped++ < 1 ? { kind: 'destroy', applied: true } : undefined));
    const file = eventsCsv(60);
    const retried = JSON.parse((await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--json', '--concurrency', '1'])).stdout);
    expect(retried.delivery.rowsPossiblyDuplicated).toBe(50);

    dropped = 0;
    faults.forget();
    const r = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--json', '--concurrency', '1', '--on-unknown', 'reject', '--rejects', join(tmp.dir, 'r.ndjson'), '--restart']);
    expect(r.status).toBe(1);
    const rejects = readFileSync(join(tmp.dir, 'r.ndjson'), 'utf8').trim().split('\n');
    expect(rejects).toHaveLength(50);
    expect(faults.received).toHaveLength(2);
    // the rows of no verdict are told apart from those sent: accepted and rejected add up to sent
    const summary = JSON.parse(r.stdout);
    expect(summary.delivery.items.events).toEqual({ sent: 10, accepted: 10, rejected: 50, unknown: 50 });
    dropped = 0;
    faults.forget();
    const events = join(tmp.dir, 'events.ndjson');
    const text = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--concurrency', '1', '--on-unknown', 'reject', '--rejects', join(tmp.dir, 'r.ndjson'), '--restart', '--events', events], { env: { NO_COLOR: '1' } });
    expect(text.stdout).toContain('\nevents      sent 10, accepted 10, rejected 0; 50 more rejected with no verdict (--on-unknown reject)\n');
    // the progress events count the items the server refused: none
    const progress = readFileSync(events, 'utf8').trim().split('\n').map((line) => JSON.parse(line)).filter((e) => e.type === 'progress');
    expect(progress.at(-1).items).toEqual({ sent: 10, accepted: 10, rejected: 0 });
  });

  it('counts a row split over requests left without a verdict once: those rows and the rows not sent add up to the rows unsettled', async () => {
    // lines that each hold a request of 120 events: each is split over three requests of at most 50
    faults = await startFaultServer(() => ({ kind: 'status', status: 500 }));
    const file = join(tmp.dir, 'big.ndjson');
    const line = (l: number) => JSON.stringify({ events: Array.from({ length: 120 }, (_, j) => ({ external_id: `u${l * 120 + j}`, name: 'e', time: '2024-01-01T00:00:00Z' })) });
    writeFileSync(file, `${Array.from({ length: 40 }, (_, l) => line(l)).join('\n')}\n`);
    const r = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--json', '--retries', '0', '--concurrency', '8']);
    expect(r.status).toBe(3);
    const summary = JSON.parse(r.stdout);
    const d = summary.delivery;
    expect(d.requestsAbandoned).toBeGreaterThan(1);
    expect(d.rowsAbandoned).toBeLessThanOrEqual(summary.rowsUnsettled);
    expect(d.rowsAbandoned).toBeLessThanOrEqual(Math.ceil((d.requestsAbandoned * 50) / 120) + 1);
    expect(d.rowsAbandoned + summary.rowsNotSent).toBe(summary.rowsUnsettled);
    expect(summary.rowsUnsettled).toBe(summary.rows);
  });

  it('counts a row split over requests of unknown outcome once, in rowsInUnknownRequests and rowsPossiblyDuplicated', async () => {
    // lines that each hold a request of 120 events, parted into 24 requests of 50 (most rows in two or three); each first post is cut after it was applied
    const seen = new Set<string>();
    faults = await startFaultServer((request) => {
      if (seen.has(request.raw)) return undefined;
      seen.add(request.raw);
      return { kind: 'destroy', applied: true };
    });
    const file = join(tmp.dir, 'big.ndjson');
    const line = (l: number) => JSON.stringify({ events: Array.from({ length: 120 }, (_, j) => ({ external_id: `u${l * 120 + j}`, name: 'e', time: '2024-01-01T00:00:00Z' })) });
    writeFileSync(file, `${Array.from({ length: 10 }, (_, l) => line(l)).join('\n')}\n`);
    const r = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--json', '--concurrency', '4']);
    expect(r.status).toBe(0);
    const d = JSON.parse(r.stdout).delivery;
    expect(d.unknownOutcomes).toBe(24);
    expect(d.rowsInUnknownRequests).toBe(10);
    expect(d.rowsPossiblyDuplicated).toBe(10);
  });

  it('counts a row an earlier run left in doubt once when a resume sends it again split over requests', async () => {
    // the first run's requests are never answered: killed, it leaves every row it posted in doubt
    faults = await startFaultServer(() => ({ kind: 'hang' }));
    const file = join(tmp.dir, 'big.ndjson');
    const line = (l: number) => JSON.stringify({ events: Array.from({ length: 120 }, (_, j) => ({ external_id: `u${l * 120 + j}`, name: 'e', time: '2024-01-01T00:00:00Z' })) });
    writeFileSync(file, `${Array.from({ length: 10 }, (_, l) => line(l)).join('\n')}\n`);
    const journal = join(tmp.dir, 'big.journal');
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', faults.url, '--api-key', 'k', '--concurrency', '30', '--quiet', '--journal', journal], { cwd: tmp.dir });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    while (faults.received.length < 24) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGKILL');
    await exited;
    faults.script(() => undefined);
    const r = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--resume', '--json', '--journal', journal], { cwd: tmp.dir });
    expect(r.status, r.stderr).toBe(0);
    // 24 requests of 50 events, most rows in two or three of them: ten rows
    expect(JSON.parse(r.stdout).delivery.rowsPossiblyDuplicated).toBe(10);
  });

  it('stops on an unknown key with exit 3 and on a missing URL with exit 2', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const bad = await runCli(['upload', eventsCsv(5), '--url', emu.url, '--api-key', 'wrong', '--quiet']);
    expect(bad.status).toBe(3);
    expect(bad.stderr).toMatch(/401/);
    expect(bad.stderr).not.toContain('wrong');
    const usage = await runCli(['upload', eventsCsv(5), '--api-key', 'k'], { env: { TRACK_URL: '' } });
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/--url/);
  });

  it('stops on SIGINT with exit 130 and resumes to deliver each row exactly once', async () => {
    emu = await startEmulator({ apiKeys: ['k'], latency: '40' });
    const file = eventsCsv(2000);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emu.url, '--api-key', 'k', '--concurrency', '2', '--quiet'], { cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // wait until some, not all, rows have landed
    while (emu.store.counts().events < 200) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const partial = emu.store.counts().events;
    expect(partial).toBeLessThan(2000);

    const resumed = await runCli(['upload', file, '--url', emu.url, '--api-key', 'k', '--resume', '--json']);
    expect(resumed.status).toBe(0);
    expect(JSON.parse(resumed.stdout).skipped).toBe(partial);
    expect(storedNs(emu)).toEqual(range(2000));
    expect(stderr).not.toContain('Error:');
  });

  it('lets the parts of a request refused for a blocklisted id be sent and answered on a stop: the resumed run sends none of them again', async () => {
    emu = await startEmulator({ apiKeys: ['k'], blocklist: ['user-3'], latency: '150' });
    // two requests of 50 events; user-3 (rows 3, 43 and 83) makes each be refused whole, then sent in parts
    const file = eventsCsv(100);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emu.url, '--api-key', 'k', '--concurrency', '1', '--quiet'], { cwd: ROOT });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // the first part applied: the stop comes between the parts of the first request
    while (emu.store.counts().events === 0) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGTERM');
    expect(await exited).toBe(130);
    const resumed = await runCli(['upload', file, '--url', emu.url, '--api-key', 'k', '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(1);
    expect(storedNs(emu)).toEqual(range(100).filter((n) => n % 40 !== 3));
  }, 60_000);

  it('journals a request-shaped line only when every one of its items has settled', async () => {
    // four lines of 30 events each: with 50 items a request, lines share requests and one is split
    const file = join(tmp.dir, 'requests.ndjson');
    // the second line's sixth item has no name: refused before sending, while that line is unfinished
    const lines = [0, 1, 2, 3].map((l) =>
      JSON.stringify({
        events: range(30).map((i) => ({ external_id: `u${l}`, ...(l * 30 + i === 35 ? {} : { name: 'e' }), time: '2024-03-07T10:00:00Z', properties: { n: l * 30 + i } })),
      }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    faults = await startFaultServer((request) => (request.index === 1 ? { kind: 'status', status: 401 } : undefined));
    const first = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--quiet', '--concurrency', '1']);
    expect(first.status).toBe(3);
    const firstNs = faults.appliedItems().map(({ item }) => (item.properties as { n: number }).n);
    expect(firstNs).toHaveLength(50);
    const journal = readFileSync(journalOf('requests.ndjson', faults.url), 'utf8');
    // the items of the line the first run left unfinished (20 sent, 1 refused), and of no line it finished
    const items = journal
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { items?: Array<[number, number]> })
      .flatMap((entry) => entry.items ?? []);
    expect(items.filter(([line]) => line === 2).map(([, place]) => place).sort((a, b) => a - b)).toEqual(range(21));
    expect(items.filter(([line]) => line !== 2)).toEqual([]);

    faults.script(() => undefined);
    const resumed = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--json', '--resume', '--concurrency', '1']);
    expect(resumed.status).toBe(0);
    // the summary names both: the line settled whole, and the items of the unfinished one left out
    expect(JSON.parse(resumed.stdout)).toMatchObject({ skipped: 1, skippedItems: 21 });
    const all = faults.appliedItems().map(({ item }) => (item.properties as { n: number }).n);
    // nothing lost, nothing sent twice: the first line, settled whole, is not sent again, nor are the
    // items of the second that the first run delivered before it stopped
    expect(all.sort((a, b) => a - b)).toEqual(range(120).filter((n) => n !== 35));
    // and the refused item is written to the rejects file once, not again by the resumed run
    const rejected = readFileSync(join(tmp.dir, 'requests.ndjson.rejects.ndjson'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(rejected).toMatchObject([{ line: 2, item: 5, kind: 'events' }]);
  });

  it('refuses to resume when the input changed since the journal was written', async () => {
    emu = await startEmulator({ apiKeys: ['k'] });
    const file = eventsCsv(20);
    expect((await runCli(['upload', file, '--url', emu.url, '--api-key', 'k', '--quiet'])).status).toBe(0);
    appendFileSync(file, 'user-1,late,2024-03-07T10:00:00Z,99\n');
    const r = await runCli(['upload', file, '--url', emu.url, '--api-key', 'k', '--resume', '--quiet']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/changed/);
    expect(existsSync(journalOf('events.csv', emu.url))).toBe(true);
  });
});
