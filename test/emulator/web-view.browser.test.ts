// The web view in a real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core):
// what a person looks for is on screen, not only in the HTML. One browser for every case.
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/server.js';
import { startEmulator } from '../../src/library/fixture.js';
import { ROOT, postJson } from '../helpers/cli.js';

/** The browser's globals the page callbacks use (they run in Chromium; this project's types hold no DOM). */
declare const window: { getComputedStyle(element: unknown): { backgroundColor: string }; document: { body: unknown }; pwned?: number };

const CHROMIUM = process.env.TRACK_CHROMIUM ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present && process.env.CI) {
  // CI installs it (.ci/run): a missing browser there is a broken setup, not a reason to skip
  throw new Error(`${CHROMIUM} is missing; CI installs Debian's chromium package before the tests`);
}
if (!present) console.warn(`web view browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set TRACK_CHROMIUM)`);

const SCREENSHOTS = process.env.TRACK_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'track-web-view-'));
const KEY = 'browser-key';
const EVIL = '<script>window.pwned = 1</script>';

let browser: Browser;
let emulator: Emulator;

async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect(statSync(path).size).toBeGreaterThan(5_000);
}

/** The element is drawn on screen: visible, with a size, inside the first screenful a person sees. */
async function onScreen(page: Page, selector: string, text?: string): Promise<void> {
  const element = text === undefined ? page.locator(selector).first() : page.locator(selector, { hasText: text }).first();
  await expect.poll(() => element.isVisible()).toBe(true);
  const box = await element.boundingBox();
  const viewport = page.viewportSize()!;
  expect(box).not.toBeNull();
  expect(box!.width).toBeGreaterThan(0);
  expect(box!.height).toBeGreaterThan(0);
  expect(box!.y + box!.height).toBeLessThanOrEqual(viewport.height);
}

describe.skipIf(!present)('the web view in a browser', () => {
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    emulator = await startEmulator({ apiKeys: [KEY], seed: [join(ROOT, 'fixtures', 'attributes.csv'), join(ROOT, 'fixtures', 'events.csv')] });
    await postJson(`${emulator.url}/users/track`, KEY, { attributes: [{ external_id: 'evil', note: EVIL }] });
    // a request partly refused: the second event's time is not a time
    await postJson(`${emulator.url}/users/track`, KEY, {
      events: [{ external_id: 'user-003', name: 'logged_in', time: '2024-04-01T08:00:00Z' }, { external_id: 'user-003', name: 'broken', time: 'last tuesday' }],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await emulator?.close();
  });

  it('finds a profile by email with a count, and shows only its row', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`${emulator.url}/_track/`);
    await expect.poll(() => page.locator('#profile-count').textContent()).toMatch(/^4 profiles/);
    await page.fill('#q', 'GRACE@example');
    await page.press('#q', 'Enter');
    await expect.poll(() => page.locator('#profile-count').textContent()).toMatch(/^1 profile matching/);
    await onScreen(page, 'tbody tr', 'user-002');
    expect(await page.locator('tbody tr').count()).toBe(1);
    await screenshot(page, 'profiles-search');
    await page.close();
  });

  it("opens a profile from the list and shows its attributes and events", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`${emulator.url}/_track/?q=user-001`);
    await page.click('a:text-is("user-001")');
    await expect.poll(() => page.locator('#profile-title').textContent()).toBe('Profile user-001');
    await onScreen(page, 'td', 'Ada');
    const events = page.locator('#events + table tbody tr');
    expect(await events.count()).toBe(2);
    await events.filter({ hasText: 'seat_added' }).scrollIntoViewIfNeeded();
    expect(await events.filter({ hasText: 'seat_added' }).isVisible()).toBe(true);
    expect(await events.filter({ hasText: 'trial_started' }).isVisible()).toBe(true);
    await screenshot(page, 'profile');
    await page.close();
  });

  it('highlights a refused item in the request log, and opens the body', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`${emulator.url}/_track/?view=requests`);
    const error = page.locator('li.minor-error').first();
    await onScreen(page, 'li.minor-error');
    expect(await error.textContent()).toMatch(/^events\[1\]: time/);
    // highlighted: a colour of its own, not the page's
    const [errorColour, pageColour] = await Promise.all([
      error.evaluate((el) => window.getComputedStyle(el).backgroundColor),
      page.evaluate(() => window.getComputedStyle(window.document.body).backgroundColor),
    ]);
    expect(errorColour).not.toBe(pageColour);
    expect(errorColour).not.toBe('rgba(0, 0, 0, 0)');
    const row = page.locator('tr.has-minor-errors');
    await row.locator('summary').click();
    await expect.poll(() => row.locator('pre').isVisible()).toBe(true);
    expect(await row.locator('pre').textContent()).toContain('last tuesday');
    await screenshot(page, 'requests');
    await page.close();
  });

  it('shows a <script> in an attribute as text and never runs it', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`${emulator.url}/_track/?q=evil`);
    await page.click('a:text-is("evil")');
    await onScreen(page, 'td', EVIL);
    expect(await page.evaluate(() => window.pwned)).toBeUndefined();
    await page.goto(`${emulator.url}/_track/?view=requests&external_id=evil`);
    await row(page).locator('summary').click();
    expect(await row(page).locator('pre').textContent()).toContain(EVIL);
    expect(await page.evaluate(() => window.pwned)).toBeUndefined();
    await page.close();
  });

  it('draws the run page: charts in the first screen, their bars the counts the emulator holds', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`${emulator.url}/_track/`);
    await page.click('header a:text-is("Run")');
    await expect.poll(() => page.locator('#run-figures').textContent()).toMatch(/requests/);
    for (const chart of ['requests-per-second', 'statuses', 'items', 'minor-errors']) await onScreen(page, `svg[data-chart="${chart}"]`);
    const bars = async (chart: string): Promise<Record<string, number>> =>
      Object.fromEntries(await page.locator(`svg[data-chart="${chart}"] g.bar`).evaluateAll((gs) => gs.map((g) => [(g as unknown as { dataset: Record<string, string> }).dataset.label, Number((g as unknown as { dataset: Record<string, string> }).dataset.value)])));
    const logged = emulator.requests({ limit: 1000 });
    expect(await bars('statuses')).toEqual({ 201: logged.filter((r) => r.status === 201).length });
    expect(Object.values(await bars('minor-errors'))).toEqual([1]);
    expect(Object.keys(await bars('minor-errors'))[0]).toMatch(/^time: /);
    // the figure line names the same counts, with the bars' text drawn on screen
    expect(await page.locator('#run-figures').textContent()).toContain(`${logged.length} requests`);
    await onScreen(page, 'svg[data-chart="statuses"] g.bar text', `${logged.length} requests`);
    await screenshot(page, 'run');
    await page.close();
  });

  it('names one of a thing in the singular: the totals, the profile count, the run figures, the request count', async () => {
    const one = await startEmulator({ apiKeys: [KEY] });
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    try {
      const time = '2024-04-01T08:00:00Z';
      await postJson(`${one.url}/users/track`, KEY, {
        attributes: [{ external_id: 'solo', plan: 'trial' }],
        events: [{ external_id: 'solo', name: 'signed_up', time }],
        purchases: [{ external_id: 'solo', product_id: 'p', currency: 'USD', price: 1, time }],
      });
      await page.goto(`${one.url}/_track/`);
      await onScreen(page, 'header .totals', '1 profile, 1 event, 1 purchase');
      await expect.poll(() => page.locator('#profile-count').textContent()).toBe('1 profile');
      await page.goto(`${one.url}/_track/run`);
      await onScreen(page, 'header .totals', '1 profile, 1 event, 1 purchase');
      await expect.poll(() => page.locator('#run-figures').textContent()).toMatch(/^1 request, 0 answered 429, 3 items processed, 0 minor errors/);
      await page.goto(`${one.url}/_track/?view=requests`);
      await expect.poll(() => page.locator('#request-count').textContent()).toMatch(/^1 request shown/);
    } finally {
      await page.close();
      await one.close();
    }
  });

  it('on a network address asks for a key with a login form, then shows the page without the key in it', async () => {
    const open = await startEmulator({ host: '0.0.0.0', apiKeys: [KEY], seed: [join(ROOT, 'fixtures', 'attributes.csv')] });
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const url = `http://127.0.0.1:${open.port}/_track/`;
      await page.goto(url);
      await onScreen(page, 'input#key');
      await page.fill('#key', 'wrong');
      await page.click('button[type=submit]');
      await onScreen(page, '[role=alert]');
      await page.fill('#key', KEY);
      await page.click('button[type=submit]');
      await expect.poll(() => page.locator('#profile-count').textContent()).toMatch(/^3 profiles/);
      expect(await page.content()).not.toContain(KEY);
      expect((await context.cookies()).map((c) => c.value).join()).not.toContain(KEY);
      await page.goto(`${url}?view=requests`);
      expect(await page.locator('#request-count').isVisible()).toBe(true);
    } finally {
      await context.close();
      await open.close();
    }
  });
});

const row = (page: Page) => page.locator('tr.request').first();
