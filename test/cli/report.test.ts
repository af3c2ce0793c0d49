// The report page as the run's events build it, without a browser: a run of many reasons keeps each
// chart a few bars high (the charts stay side by side in the first screen) and the page small.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProgressEvent } from '../../src/cli/output/run-events.js';
import { htmlReport, perSecond } from '../../src/cli/output/report.js';
import { tempDir } from '../helpers/cli.js';

const dirs: ReturnType<typeof tempDir>[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.cleanup();
});

const time = '2024-05-01T10:00:00.000Z';

/** A report of an upload, started: where its page goes, and the report its events go to. */
function startedReport(): { path: string; report: ReturnType<typeof htmlReport> } {
  const dir = tempDir();
  dirs.push(dir);
  const path = join(dir.dir, 'run.html');
  const report = htmlReport(path);
  report.event({ type: 'start', time, command: 'upload', inputs: [{ file: 'a.csv', bytes: 10 }], target: 'http://127.0.0.1:1', limits: { rate: 10 } });
  return { path, report };
}

/** The bars of one chart of the page: label and value. */
function bars(html: string, chart: string): [string, number][] {
  const svg = new RegExp(`<svg[^>]*data-chart="${chart}"[^>]*>(.*?)</svg>`).exec(html)?.[1] ?? '';
  return [...svg.matchAll(/<g class="bar" data-label="([^"]*)" data-value="([^"]*)">/g)].map((m) => [m[1], Number(m[2])]);
}

describe('the report of a run of many reasons', () => {
  it('draws the largest reasons and the rest as one bar, for rejects and for retries', async () => {
    const { path, report } = startedReport();
    // a server whose 503 message names each request: 5,000 retries, each of its own reason
    for (let i = 0; i < 5_000; i += 1) report.event({ type: 'retry', time, request: i, attempt: 2, reason: `HTTP 503: busy (request id ${i})`, delaySeconds: 0.1 });
    const rejectReasons = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`count_${i}: must be a whole number`, 100 + i]));
    const rejected = Object.values(rejectReasons).reduce((sum, n) => sum + n, 0);
    const summary = {
      command: 'upload',
      rows: 10_000,
      rejected,
      droppedFields: 0,
      requests: 150,
      elapsedMs: 60_000,
      rejectReasons,
      refusedReasons: {},
      dataPoints: { sent: 1000, avoided: 0, planned: 1000 },
      interrupted: false,
      delivery: { requestsSent: 150, attempts: 5150, retries: 5000, rateLimited: 0, answers: { 201: 150, 503: 5000 }, items: {}, stopped: false, aborted: false },
    };
    report.event({ type: 'end', time, exitStatus: 1, summary });
    await report.close!();
    const html = readFileSync(path, 'utf8');

    const rejects = bars(html, 'rejects');
    expect(rejects).toHaveLength(9);
    expect(rejects[0]).toEqual(['count_39: must be a whole number', 139]);
    // the 32 smallest, 100 to 131 rows, added up
    expect(rejects[8]).toEqual(['(32 other reasons)', 3_696]);
    expect(rejects.reduce((sum, [, n]) => sum + n, 0)).toBe(rejected);

    const retries = bars(html, 'retries');
    expect(retries).toHaveLength(9);
    expect(retries.at(-1)![0]).toMatch(/^\(\d+ other reasons\)$/);
    expect(retries.reduce((sum, [, n]) => sum + n, 0)).toBe(5_000);
    // kept apart: the first 100 reasons, 1 retry each; the rest together
    expect(retries[0]).toEqual(['(other reasons)', 4_900]);
    expect(statSync(path).size).toBeLessThan(40_000);
  });
});

describe('the report of a run that stopped short', () => {
  /** The figures table of the page: each row's name and value, as text. */
  const figures = (html: string): Record<string, string> =>
    Object.fromEntries([...html.matchAll(/<tr><th scope="row">([^<]*)<\/th><td id="[^"]*">([^<]*)<\/td><\/tr>/g)].map((m) => [m[1], m[2]]));

  const pageOf = async (summary: Record<string, unknown>, exitStatus: number, signal?: string): Promise<string> => {
    const { path, report } = startedReport();
    if (signal !== undefined) report.event({ type: 'stop', time, signal, action: 'finish' });
    report.event({ type: 'end', time, exitStatus, summary });
    await report.close!();
    return readFileSync(path, 'utf8');
  };
  const base = {
    command: 'upload',
    rejected: 0,
    droppedFields: 0,
    elapsedMs: 3_000,
    rejectReasons: {},
    dataPoints: { sent: 2450, avoided: 0, planned: 3000 },
    journalPath: '/tmp/a.journal',
  };
  const items = (accepted: number) => ({ attributes: { sent: accepted, accepted, rejected: 0 }, events: { sent: 0, accepted: 0, rejected: 0 }, purchases: { sent: 0, accepted: 0, rejected: 0 } });

  it('says the items accepted and the rows left unsettled, with how to send them, after a signal', async () => {
    const delivery = { requestsSent: 49, attempts: 49, retries: 0, rateLimited: 0, items: items(2450), stopped: true, aborted: false };
    const html = await pageOf({ ...base, rows: 3000, requests: 60, interrupted: true, readToEnd: true, rowsUnsettled: 550, delivery }, 130, 'SIGINT');
    expect(figures(html)).toMatchObject({ 'rows read': '3,000', 'items accepted': '2,450', 'rows unsettled': '550: run again with --resume to send them', 'exit status': '130' });
    expect(html).toContain('Stopped by SIGINT.');
  });

  it('says what stopped a run that failed', async () => {
    const fatal = { name: 'DeliveryError', message: 'the server refused the API key (HTTP 401: invalid API key)' };
    const delivery = { requestsSent: 0, attempts: 1, retries: 0, rateLimited: 0, items: items(0), stopped: true, aborted: false, fatal };
    const html = await pageOf({ ...base, journalPath: undefined, rows: 1588, requests: 32, interrupted: false, readToEnd: false, rowsUnsettled: 1588, delivery }, 3);
    expect(figures(html)).toMatchObject({ 'items accepted': '0', 'rows unsettled': '1,588, and the rest of the input not read yet', 'stopped by': fatal.message });
  });

  it('adds nothing of it to a run that went through', async () => {
    const delivery = { requestsSent: 60, attempts: 60, retries: 0, rateLimited: 0, items: items(3000), stopped: false, aborted: false };
    const shown = figures(await pageOf({ ...base, rows: 3000, requests: 60, interrupted: false, readToEnd: true, rowsUnsettled: 0, delivery }, 0));
    expect(Object.keys(shown)).toEqual(['rows read', 'items accepted', 'rejected', 'requests answered', 'retries, 429 answers', 'data points spent, avoided', 'duration', 'exit status']);
  });
});

describe('a report that cannot be written', () => {
  // the run tells it as a warning, which must say which file it was
  it.skipIf(!existsSync('/dev/full'))('fails its close naming --report and the file (a full disk, /dev/full)', async () => {
    const report = htmlReport('/dev/full');
    const time = '2024-05-01T10:00:00.000Z';
    report.event({ type: 'start', time, command: 'upload', inputs: [{ file: 'a.csv', bytes: 10 }], target: 'http://127.0.0.1:1', limits: { rate: 10 } });
    report.event({ type: 'error', time, exitStatus: 2, error: { name: 'UsageError', message: 'stopped' } });
    await expect(report.close!()).rejects.toThrow(/^--report \/dev\/full: cannot be written \(ENOSPC/);
  });
});

describe('the throughput of the report', () => {
  it('is the requests answered per second between successive samples, from 0 at the start', () => {
    const sample = (elapsedSeconds: number, sent: number): ProgressEvent => ({ elapsedSeconds, requests: { sent } }) as ProgressEvent;
    // 10 in the first half second, 20 in the 2 s after, none in the 2 s after that; a sample at the same time adds no point
    const samples = [sample(0.5, 10), sample(2.5, 30), sample(2.5, 30), sample(4.5, 30)];
    expect(perSecond(samples, (p) => p.requests.sent)).toEqual([[0.5, 20], [2.5, 10], [4.5, 0]]);
  });
});
