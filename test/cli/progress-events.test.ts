// --progress ndjson and --events FILE through the real CLI: every line an event the documented schema
// holds valid, the end event the --json summary itself, waits for the 429s, a stop, and a file that a
// kill -9 leaves with every complete line whole.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT, runCliAsync as runCli } from '../helpers/cli.js';
import { writeEventsCsv } from '../helpers/events.js';
import { checkedLines, type Event } from '../helpers/progress-events.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

/** Rows 0, 7, 14, ... have no event name: refused before sending. */
const badEvery7 = (i: number): boolean => i % 7 === 0;

const ofType = (events: Event[], type: string): Event[] => events.filter((e) => e.type === type);

describe('--progress ndjson', () => {
  it('writes only schema-valid events on stderr, progress every interval, and ends with exactly the --json summary', async () => {
    const faults = await servers.faultServer();
    // the 3rd and 4th requests are answered 429 once each, the 5th 503 once: waits and a retry
    faults.script((r) => (r.index === 2 || r.index === 3 ? { kind: 'rate-limit', retryAfter: 1 } : r.index === 4 ? { kind: 'status', status: 503 } : { kind: 'ok', delayMs: 150 }));
    const file = writeEventsCsv(servers.tmp.dir, 600, 'events.csv', { bad: badEvery7 });
    const r = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--concurrency', '2', '--progress', 'ndjson', '--progress-interval', '1', '--json']);
    expect(r.status).toBe(1);
    const events = checkedLines(r.stderr);
    const summary = JSON.parse(r.stdout);
    expect(events[0].type).toBe('start');
    expect(events[0]).toMatchObject({ command: 'upload', target: faults.url, inputs: [{ file, bytes: readFileSync(file).length }], limits: { maxTotal: 50, rate: 1000, concurrency: 2 } });
    const end = events.at(-1)!;
    expect(end.type).toBe('end');
    expect(end.summary).toEqual(summary);
    expect(end.exitStatus).toBe(1);
    // one wait per 429, naming its request; the retry of the 503
    const waits = ofType(events, 'wait');
    expect(waits.filter((w) => w.reason === 'rate-limited')).toHaveLength(summary.delivery.rateLimited);
    expect(summary.delivery.rateLimited).toBe(2);
    expect(ofType(events, 'retry')).toHaveLength(summary.delivery.retries);
    expect(ofType(events, 'retry')[0]).toMatchObject({ attempt: 2, reason: expect.stringMatching(/503/) });
    // progress at least every second (the run takes a few), the last one the summary's figures
    const progress = ofType(events, 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    const times = events.map((e) => Date.parse(e.time));
    for (let i = 1; i < times.length; i += 1) expect(times[i] - times[i - 1]).toBeLessThan(1_600);
    const last = progress.at(-1)!;
    expect(last).toMatchObject({ rows: summary.rows, rejectedRows: summary.rejected, dataPoints: summary.dataPoints.sent });
    expect(last.requests).toMatchObject({ sent: summary.delivery.requestsSent, retries: summary.delivery.retries, rateLimited: 2 });
    expect(last.answers).toEqual(summary.delivery.answers);
    expect(summary.delivery.answers).toMatchObject({ 201: summary.delivery.requestsSent, 429: 2, 503: 1 });
    expect(last.items.accepted).toBe(summary.delivery.items.events.accepted);
  });

  it("the plain line's rejected counts the rows refused before sending, as the summary does, with the server's refusals", async () => {
    const faults = await servers.faultServer();
    faults.script(() => ({ kind: 'ok', delayMs: 300 }));
    const file = writeEventsCsv(servers.tmp.dir, 600, 'events.csv', { bad: badEvery7 });
    const r = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--concurrency', '1', '--progress-interval', '1', '--json']);
    expect(r.status).toBe(1);
    const summary = JSON.parse(r.stdout);
    expect(summary.rejected).toBe(86);
    const lines = r.stderr.split('\n').filter((line) => /Z rows read /.test(line));
    // every row is read (and its rejects counted) long before the last of the 11 requests is answered
    expect(lines.length, r.stderr).toBeGreaterThanOrEqual(2);
    expect(lines.at(-1)).toMatch(/ rows read 600, sent \d+, accepted \d+, rejected 86, /);
  });

  it('counts as rejected, after --resume, the rows an earlier run rejected as the rows it skips are read (never more than read), ending where the summary does', async () => {
    const emulator = await servers.emulator({ latency: '100' });
    const file = writeEventsCsv(servers.tmp.dir, 3000, 'resumed.csv', { bad: badEvery7 });
    const args = [BIN, 'upload', file, '--url', emulator.url, '--api-key', 'k', '--concurrency', '1'];
    const first = spawn(process.execPath, [...args, '--quiet'], { cwd: ROOT, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => first.on('exit', (code) => resolve(code)));
    while (emulator.store.counts().events < 300) await new Promise((resolve) => setTimeout(resolve, 20));
    first.kill('SIGTERM');
    expect(await exited).toBe(130);
    const r = await runCli([...args.slice(1), '--resume', '--progress', 'ndjson', '--progress-interval', '1', '--json']);
    expect(r.status, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout);
    expect(summary.rejected).toBe(429);
    expect(summary.skippedRejected).toBeGreaterThan(0);
    const progress = ofType(checkedLines(r.stderr), 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    // what the run before rejected is told as the rows it skips are read: never more rejected than read
    for (const event of progress) expect(event.rejectedRows).toBeLessThanOrEqual(event.rows);
    expect(progress.at(-1)).toMatchObject({ rows: 3000, rejectedRows: 429 });
    // a resume of the finished run reads nothing again: its summary counts the rejects, its progress reads none
    const again = await runCli([...args.slice(1), '--resume', '--progress', 'ndjson', '--json']);
    expect(again.status, again.stderr).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ rejected: 429, skippedRejected: 429 });
    const told = ofType(checkedLines(again.stderr), 'progress');
    expect(told.length).toBeGreaterThanOrEqual(1);
    for (const event of told) expect(event).toMatchObject({ rows: 0, rejectedRows: 0 });
  }, 60_000);

  it('tells a stop by its signal, then ends with status 130', async () => {
    const emulator = await servers.emulator({ latency: '60' });
    const file = writeEventsCsv(servers.tmp.dir, 3000);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emulator.url, '--api-key', 'k', '--concurrency', '1', '--progress', 'ndjson'], { cwd: ROOT });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    while (emulator.store.counts().events < 100) await new Promise((resolve) => setTimeout(resolve, 20));
    child.kill('SIGTERM');
    expect(await exited).toBe(130);
    const events = checkedLines(stderr);
    expect(ofType(events, 'stop')).toEqual([expect.objectContaining({ signal: 'SIGTERM', action: 'finish' })]);
    const end = events.at(-1)!;
    expect(end).toMatchObject({ type: 'end', exitStatus: 130, summary: { delivery: { stopped: true } } });
    expect(end.summary.delivery.items.events.accepted).toBe(emulator.store.counts().events);
  });

  it('tells an error found before reading as an error event, and nothing else on stderr', async () => {
    const emulator = await servers.emulator();
    const file = writeEventsCsv(servers.tmp.dir, 10);
    const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--rejects', file, '--progress', 'ndjson']);
    expect(r.status).toBe(2);
    const events = checkedLines(r.stderr);
    expect(events.map((e) => e.type)).toEqual(['start', 'error']);
    expect(events[1]).toMatchObject({ exitStatus: 2, error: { name: 'UsageError', message: expect.stringMatching(/--rejects .* is also an input file/) } });
  });

  it('tells a usage error in the flags, found before the run starts, as an error event alone', async () => {
    const file = writeEventsCsv(servers.tmp.dir, 10);
    const noUrl = await runCli(['upload', file, '--api-key', 'k', '--progress', 'ndjson'], { env: { TRACK_URL: '' } });
    expect(noUrl.status).toBe(2);
    expect(checkedLines(noUrl.stderr)).toEqual([expect.objectContaining({ type: 'error', exitStatus: 2, error: { name: 'UsageError', message: expect.stringMatching(/give the service URL/) } })]);
    const onInput = await runCli(['validate', file, '--events', file, '--progress', 'ndjson']);
    expect(onInput.status).toBe(2);
    expect(checkedLines(onInput.stderr)).toEqual([expect.objectContaining({ type: 'error', error: expect.objectContaining({ message: expect.stringMatching(/--events .* is also an input file/) }) })]);
  });

  it('reports a dry run (validate) the same way', async () => {
    const file = writeEventsCsv(servers.tmp.dir, 120, 'events.csv', { bad: badEvery7 });
    const r = await runCli(['validate', file, '--progress', 'ndjson', '--json']);
    expect(r.status).toBe(1);
    const events = checkedLines(r.stderr);
    expect(events.map((e) => e.type)).toEqual(['start', 'progress', 'end']);
    expect(events[0]).not.toHaveProperty('target');
    const summary = JSON.parse(r.stdout);
    expect(events[1]).toMatchObject({ rows: 120, rejectedRows: 18, requests: { planned: summary.requests, sent: 0 }, dataPoints: summary.dataPoints.planned });
    expect(summary.dataPoints.planned).toBeGreaterThan(0);
    expect(events[2].summary).toEqual(summary);
  });
});

describe('--events FILE', () => {
  it('writes the same events to the file while the human progress stays on stderr', async () => {
    const emulator = await servers.emulator();
    const file = writeEventsCsv(servers.tmp.dir, 200);
    const eventsPath = join(servers.tmp.dir, 'run.events');
    const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--events', eventsPath, '--json']);
    expect(r.status).toBe(0);
    const events = checkedLines(readFileSync(eventsPath, 'utf8'));
    expect(events.map((e) => e.type)).toEqual(['start', 'progress', 'end']);
    expect(events[2].summary).toEqual(JSON.parse(r.stdout));
    // stderr holds no event: the progress there is for people
    expect(r.stderr).not.toMatch(/^\{/m);
  });

  it('is a usage error, before anything is sent, when the file cannot be written', async () => {
    const emulator = await servers.emulator();
    const file = writeEventsCsv(servers.tmp.dir, 5);
    const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--events', join(servers.tmp.dir, 'no', 'such', 'dir', 'x.events')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`cannot write --events ${join(servers.tmp.dir, 'no', 'such', 'dir', 'x.events')}: the folder ${join(servers.tmp.dir, 'no', 'such', 'dir')} does not exist`);
    expect(emulator.requests()).toHaveLength(0);
  });

  it('leaves an earlier events file as it was when another output flag is a usage error', async () => {
    const file = writeEventsCsv(servers.tmp.dir, 5);
    const eventsPath = join(servers.tmp.dir, 'earlier.events');
    writeFileSync(eventsPath, '{"type":"start"}\n');
    const emulator = await servers.emulator();
    for (const bad of [['--report', join(servers.tmp.dir, 'no', 'dir', 'run.html')], ['--metrics-push', 'ftp://127.0.0.1:1']]) {
      const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--events', eventsPath, ...bad]);
      expect(r.status, bad[0]).toBe(2);
      expect(readFileSync(eventsPath, 'utf8'), bad[0]).toBe('{"type":"start"}\n');
    }
  });

  it('refuses an input file, or the --report file, as the events file, leaving the input as it was', async () => {
    const file = writeEventsCsv(servers.tmp.dir, 5);
    const before = readFileSync(file, 'utf8');
    const onInput = await runCli(['validate', file, '--events', file]);
    expect(onInput.status).toBe(2);
    expect(onInput.stderr).toMatch(/--events .*events\.csv is also an input file/);
    expect(readFileSync(file, 'utf8')).toBe(before);
    const emulator = await servers.emulator();
    const report = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--report', file]);
    expect(report.status).toBe(2);
    expect(report.stderr).toMatch(/--report .*events\.csv is also an input file/);
    expect(readFileSync(file, 'utf8')).toBe(before);
    const same = join(servers.tmp.dir, 'run.out');
    const both = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--events', same, '--report', same]);
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/--events and --report name the same file/);
    expect(emulator.requests()).toHaveLength(0);
  });

  it('leaves, after kill -9, a file whose every complete line parses', async () => {
    const emulator = await servers.emulator({ latency: '20' });
    const file = writeEventsCsv(servers.tmp.dir, 20_000);
    const eventsPath = join(servers.tmp.dir, 'killed.events');
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emulator.url, '--api-key', 'k', '--events', eventsPath, '--progress-interval', '1', '--quiet'], { cwd: ROOT });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    // a few progress events are written
    const lines = (): string => (existsSync(eventsPath) ? readFileSync(eventsPath, 'utf8') : '');
    while (lines().split('\n').length < 4) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const text = lines();
    const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1);
    const events = checkedLines(complete);
    expect(events[0].type).toBe('start');
    expect(ofType(events, 'progress').length).toBeGreaterThanOrEqual(2);
    expect(events.some((e) => e.type === 'end')).toBe(false);
  });
});

it('validate takes --events too, and a CSV of 0 rows gives start, progress, end', async () => {
    const file = join(servers.tmp.dir, 'empty.csv');
    writeFileSync(file, 'external_id,name,time\n');
    const eventsPath = join(servers.tmp.dir, 'empty.events');
    const r = await runCli(['validate', file, '--events', eventsPath]);
    expect(r.status).toBe(0);
    const events = checkedLines(readFileSync(eventsPath, 'utf8'));
    expect(events.map((e) => e.type)).toEqual(['start', 'progress', 'end']);
    expect(events[2].summary).toMatchObject({ rows: 0, command: 'validate' });
});
