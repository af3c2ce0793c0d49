// A stop is seen: against a server that never answers, the first Ctrl-C (or SIGINT, SIGTERM) says
// at once what the run waits for, on a terminal's spinner and in the log lines written without one;
// a second one aborts. Each request has a time limit (--request-timeout): past it, its outcome is
// unknown, and its rows are sent again or rejected as --on-unknown says.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { writeCrmCsv } from '../helpers/crm.js';
import { hasPython, runInTerminal } from '../helpers/pty.js';
import { useServers } from '../helpers/servers.js';
import { ndjson } from './run-cli.js';

const { tmp, faultServer } = useServers();
const STOPPING = 'stopping: 8 requests in flight, waiting for their answers (at most 30 s each, --request-timeout); Ctrl-C again to abort';

const waitFor = async (what: () => boolean, ms: number): Promise<boolean> => {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (what()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return what();
};

describe.skipIf(!hasPython)('Ctrl-C in a terminal, against a server that never answers', () => {
  it('says at once what the run waits for, the spinner stops counting down, and a second Ctrl-C aborts', async () => {
    const server = await faultServer(() => ({ kind: 'hang' }));
    const file = writeCrmCsv(tmp.dir, 2000);
    // the second Ctrl-C is typed only once the stop line is on the screen: without it the run would
    // wait out the 30 s time limit and be killed at the deadline
    const run = await runInTerminal([process.execPath, BIN, 'upload', file, '--drop-invalid-fields', '--request-timeout', '30'], {
      cwd: tmp.dir,
      env: { TRACK_URL: server.url, TRACK_API_KEY: 'k', NO_COLOR: '1' },
      ctrlCAfter: ['rows read ([2-9][0-9]{2}|[0-9],[0-9]{3}).*ETA', 'stopping: '],
      deadlineMs: 20_000,
    });
    expect(run.killed, run.out).toBe(false);
    expect(run.ctrlC, run.out).toBe(2);
    expect(run.status, run.out).toBe(130);
    // no request was answered: those the server took are the ones in flight when the stop came
    const inFlight = server.received.length;
    expect(inFlight).toBeGreaterThan(0);
    const line = inFlight === 1 ? STOPPING.replace('8 requests', '1 request').replace('their answers', 'its answer') : STOPPING.replace('8', String(inFlight));
    expect(run.out).toContain(line);
    // every spinner frame drawn after the stop says it, and none counts down to an end
    const afterStop = run.out.slice(run.out.indexOf(line) + line.length);
    expect(afterStop).not.toMatch(/ETA/);
    expect(afterStop).toMatch(/stopping: [1-8] requests? in flight; Ctrl-C again to abort \| rows read [\d,]+, sent 0, accepted 0, rejected [\d,]+/);
  }, 60_000);
});

describe('a stop without a terminal, against a server that never answers', () => {
  it('says at once what the run waits for, and so do the log lines after it; a second SIGINT aborts', async () => {
    const server = await faultServer(() => ({ kind: 'hang' }));
    const file = writeCrmCsv(tmp.dir, 2000);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--drop-invalid-fields', '--request-timeout', '30', '--url', server.url, '--api-key', 'k'], {
      cwd: tmp.dir,
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    expect(await waitFor(() => server.received.length === 8, 15_000)).toBe(true);
    child.kill('SIGINT');
    const signalled = Date.now();
    expect(await waitFor(() => stderr.includes(STOPPING), 5_000), stderr).toBe(true);
    const toldAfter = Date.now() - signalled;
    // the progress line written every 5 s says it too, with no ETA
    expect(await waitFor(() => /Z stopping: 8 requests in flight.*\| rows read [\d,]+, sent 0, accepted 0, rejected [\d,]+\n/.test(stderr), 8_000), stderr).toBe(true);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(toldAfter).toBeLessThan(2_000);
    expect(stderr.slice(stderr.indexOf(STOPPING))).not.toMatch(/ETA/);
    expect(stdout).toMatch(/ {14}8 {2}cut off after it was sent \(a second Ctrl-C or signal\)/);
    expect(stdout).toMatch(/unsettled +\d+ requests \([\d,]+ rows\) tried and left without a verdict(?:, and [\d,]+ rows read and not sent yet)?: run again with --resume/);
    expect(stdout).toMatch(/interrupted by a signal \(Ctrl-C, SIGTERM, SIGHUP\) after [\d,]+ rows of the input were read: [\d,]+ rows unsettled/);
  }, 60_000);
});

describe('--request-timeout', () => {
  it('past it, a request’s outcome is unknown: sent again (and counted), then given up', async () => {
    const server = await faultServer(() => ({ kind: 'hang' }));
    const file = plainCsv(100);
    const started = Date.now();
    const r = await runJson([file, '--url', server.url, '--request-timeout', '0.5', '--retries', '1', '--concurrency', '1']);
    expect(r.status).toBe(3);
    expect(Date.now() - started).toBeLessThan(15_000);
    const d = r.summary.delivery;
    expect(d.fatal.message).toBe(`gave up on ${server.url}/users/track after 1 retry: no answer within 0.5 s, the --request-timeout`);
    expect(d.unknownOutcomes).toBe(2);
    expect(d.rowsPossiblyDuplicated).toBe(50);
    // the first request, then the same again
    expect(server.received.map((q) => q.raw)).toEqual([server.received[0].raw, server.received[0].raw]);
  }, 30_000);

  it('with --on-unknown reject, its rows go to the rejects file unsent again', async () => {
    const server = await faultServer(() => ({ kind: 'hang' }));
    const file = plainCsv(40);
    const r = await runJson([file, '--url', server.url, '--request-timeout', '0.5', '--on-unknown', 'reject', '--rejects', 'r.ndjson']);
    expect(r.status).toBe(1);
    expect(server.received).toHaveLength(1);
    const rejects = ndjson<{ line: number; errors: string[] }>(join(tmp.dir, 'r.ndjson'));
    expect(rejects).toHaveLength(40);
    expect(rejects[0].errors).toEqual(['outcome unknown (no answer within 0.5 s, the --request-timeout); not sent again']);
  }, 30_000);

  it('is a number of seconds above 0', async () => {
    const r = await runJson(['x.csv', '--url', 'http://127.0.0.1:9', '--request-timeout', '0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--request-timeout: expected seconds above 0 (at most 86400), got "0"');
  });
});

/** `rows` valid attribute rows, one user each. */
function plainCsv(rows: number): string {
  const path = join(tmp.dir, 'plain.csv');
  writeFileSync(path, `external_id,score\n${Array.from({ length: rows }, (_, i) => `u${i},${i}`).join('\n')}\n`);
  return path;
}

async function runJson(args: string[]): Promise<{ status: number | null; summary: any; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'upload', ...args, '--api-key', 'k', '--json'], { cwd: tmp.dir });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { status, summary: stdout === '' ? undefined : JSON.parse(stdout), stderr };
}
