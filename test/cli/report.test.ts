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

/** The bars of one chart of the page: label and value. */
function bars(html: string, chart: string): [string, number][] {
  const svg = new RegExp(`<svg[^>]*data-chart="${chart}"[^>]*>(.*?)</svg>`).exec(html)?.[1] ?? '';
  return [...svg.matchAll(/<g class="bar" data-label="([^"]*)" data-value="([^"]*)">/g)].map((m) => [m[1], Number(m[2])]);
}

describe('the report of a run of many reasons', () => {
  it('draws the largest reasons and the rest as one bar, for rejects and for retries', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const path = join(dir.dir, 'run.html');
    const report = htmlReport(path);
    const time = '2024-05-01T10:00:00.000Z';
    report.event({ type: 'start', time, command: 'upload', inputs: [{ file: 'a.csv', bytes: 10 }], target: 'http://127.0.0.1:1', limits: { rate: 10 } });
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
