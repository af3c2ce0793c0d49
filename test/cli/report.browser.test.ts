// `track upload --report FILE.html` opened in a real headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core): the charts are drawn in the first screen, and their figures are the
// --json summary's.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliAsync as runCli } from '../helpers/cli.js';
import { writeEventsCsv } from '../helpers/events.js';
import { useServers } from '../helpers/servers.js';

const CHROMIUM = process.env.TRACK_CHROMIUM ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present && process.env.CI) throw new Error(`${CHROMIUM} is missing; CI installs Debian's chromium package before the tests`);
if (!present) console.warn(`report browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set TRACK_CHROMIUM)`);

const servers = useServers();
let browser: Browser;

/** Drawn, with a size, inside the first 1200x800 screen. */
async function onFirstScreen(page: Page, selector: string): Promise<void> {
  const element = page.locator(selector).first();
  expect(await element.isVisible(), selector).toBe(true);
  const box = await element.boundingBox();
  expect(box!.width).toBeGreaterThan(100);
  expect(box!.height).toBeGreaterThan(20);
  expect(box!.y + box!.height, selector).toBeLessThanOrEqual(800);
}

const bars = (page: Page, chart: string): Promise<Record<string, number>> =>
  page
    .locator(`svg[data-chart="${chart}"] g.bar`)
    .evaluateAll((gs) => gs.map((g) => (g as unknown as { dataset: Record<string, string> }).dataset))
    .then((sets) => Object.fromEntries(sets.map((d) => [d.label, Number(d.value)])));

describe.skipIf(!present)('the report of an upload in a browser', () => {
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  }, 60_000);
  afterAll(async () => browser?.close());

  it('draws throughput, answers, rejects, data points, waits and retries in the first screen, with the summary\'s figures', async () => {
    const faults = await servers.faultServer();
    // two 429s, a 503 retried, minor errors on every 9th request, and some latency: a run of a few seconds
    faults.script((r) =>
      r.index === 3 || r.index === 4
        ? { kind: 'rate-limit', retryAfter: 1 }
        : r.index === 6
          ? { kind: 'status', status: 503 }
          : r.index % 9 === 0
            ? { kind: 'minor', errors: [{ type: 'name: is refused here', input_array: 'events', index: 0 }] }
            : { kind: 'ok', delayMs: 60 },
    );
    const file = writeEventsCsv(servers.tmp.dir, 2000, 'events.csv', { bad: (i) => i % 50 === 0 });
    const report = join(servers.tmp.dir, 'run.html');
    const r = await runCli(['upload', file, '--url', faults.url, '--api-key', 'k', '--concurrency', '2', '--report', report, '--json', '--quiet']);
    expect(r.status).toBe(1);
    const summary = JSON.parse(r.stdout);
    const html = readFileSync(report, 'utf8');
    // self-contained: nothing from elsewhere, no script
    expect(html).not.toMatch(/<script|src=|href="http/);

    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(pathToFileURL(report).href);
    for (const chart of ['throughput', 'answers', 'rejects', 'data-points', 'waits', 'retries']) await onFirstScreen(page, `svg[data-chart="${chart}"]`);
    const text = async (id: string): Promise<string | null> => page.locator(`#${id}`).textContent();
    const refused = summary.delivery.items.events.rejected;
    expect(await text('figure-rows')).toBe('2,000');
    expect(await text('figure-rejected')).toBe(String(summary.rejected + refused));
    expect(await text('figure-requests')).toBe(String(summary.delivery.requestsSent));
    expect(await text('figure-retries')).toBe(`${summary.delivery.retries}, ${summary.delivery.rateLimited}`);
    expect(await text('figure-exit-status')).toBe('1');
    expect(await bars(page, 'answers')).toEqual(summary.delivery.answers);
    expect(await bars(page, 'rejects')).toEqual({ ...summary.rejectReasons, ...summary.refusedReasons });
    expect(await bars(page, 'data-points')).toEqual({ spent: summary.dataPoints.sent, 'avoided (unchanged)': summary.dataPoints.avoided });
    expect(Object.keys(await bars(page, 'waits'))).toEqual(['429 answers (2)']);
    expect(Object.values(await bars(page, 'retries'))).toEqual([1]);
    // the throughput curve is drawn: a line with points over the run
    const path = await page.locator('svg[data-chart="throughput"] path').first().getAttribute('d');
    expect(path!.split('L').length).toBeGreaterThanOrEqual(2);
    const shot = join(process.env.TRACK_SCREENSHOTS ?? servers.tmp.dir, 'report.png');
    await page.screenshot({ path: shot });
    expect(statSync(shot).size).toBeGreaterThan(5_000);
    await page.close();
  });
});
