// The web view's run page, profile paging and links, in-process over HTTP: what the page says
// equals what the emulator counted.
import { describe, expect, it } from 'vitest';
import { perSecondSeries } from '../../src/emulator/run-page.js';
import { RunTally } from '../../src/emulator/run-tally.js';
import { postJson } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

const page = async (url: string): Promise<{ status: number; csp: string | null; html: string }> => {
  const r = await fetch(url);
  return { status: r.status, csp: r.headers.get('content-security-policy'), html: await r.text() };
};

describe('the run page', () => {
  it('draws requests per second against the limit, statuses, items and minor errors, with the counts the emulator holds', async () => {
    const emulator = await servers.emulator({ rateLimit: '2500/5s' });
    const track = `${emulator.url}/users/track`;
    for (let i = 0; i < 12; i += 1) await postJson(track, 'k', { attributes: [{ external_id: `u${i}`, email: i < 3 ? 'bad' : `u${i}@x.io` }] });
    await postJson(track, 'k', {}, { 'x-track-fault': '429' });
    const { status, csp, html } = await page(`${emulator.url}/_track/run`);
    expect(status).toBe(200);
    expect(csp).toBe("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    expect(html).not.toContain('<script');
    expect(html).toMatch(/id="run-figures"><strong>13<\/strong> requests, <strong>1<\/strong> answered 429, <strong>9<\/strong> items processed, <strong>3<\/strong> minor errors/);
    expect(html).toContain('data-chart="requests-per-second"');
    expect(html).toContain('rate limit 500/s (2,500 per 5 s)');
    // a request whose one item is refused is answered 400
    expect(html).toMatch(/data-label="201" data-value="9"/);
    expect(html).toMatch(/data-label="400" data-value="3"/);
    expect(html).toMatch(/data-label="429" data-value="1"/);
    expect(html).toMatch(/data-label="attributes" data-value="9"/);
    expect(html).toMatch(/data-label="email: is not a valid email address" data-value="3"/);
    // since the last reset
    await fetch(`${emulator.url}/_track/reset`, { method: 'POST' });
    expect((await page(`${emulator.url}/_track/run`)).html).toContain('<strong>0</strong> requests');
  });

  it('is linked from every page', async () => {
    const emulator = await servers.emulator();
    await postJson(`${emulator.url}/users/track`, 'k', { attributes: [{ external_id: 'a' }] });
    const serviceId = emulator.store.allProfiles()[0].serviceId;
    for (const path of ['/_track/', '/_track/?view=requests', `/_track/?profile=${serviceId}`, '/_track/run']) {
      expect((await page(`${emulator.url}${path}`)).html, path).toContain('<a href="/_track/run"');
    }
  });
});

describe('requests per second on the run page', () => {
  const start = 1_700_000_000;
  const answer = (tally: RunTally, ms: number, status: number): void => tally.record({ timeMs: ms, path: '/users/track', status, processed: {}, errors: [] });

  it('is a point a second, a second without requests at 0, the 429s apart', () => {
    const tally = new RunTally();
    for (const ms of [0, 100, 900]) answer(tally, start * 1000 + ms, 201);
    answer(tally, start * 1000 + 2000, 201);
    answer(tally, start * 1000 + 2500, 429);
    expect(perSecondSeries(tally)).toEqual({
      all: [[start, 3], [start + 1, 0], [start + 2, 2]],
      limited: [[start, 0], [start + 1, 0], [start + 2, 1]],
    });
  });

  it('draws a run of more than 600 s in steps of several seconds, at their mean', () => {
    const tally = new RunTally();
    // 1,200 s: one request a second, and one more on every even second (3 every 2 s)
    for (let s = 0; s < 1200; s += 1) {
      answer(tally, (start + s) * 1000, 201);
      if (s % 2 === 0) answer(tally, (start + s) * 1000 + 500, 429);
    }
    const { all, limited } = perSecondSeries(tally);
    expect(all).toHaveLength(600);
    expect(all[1]).toEqual([start + 2, 1.5]);
    expect(new Set(all.map(([, n]) => n))).toEqual(new Set([1.5]));
    expect(new Set(limited.map(([, n]) => n))).toEqual(new Set([0.5]));
  });
});

describe('profiles beyond the first 100', () => {
  it('pages through them, searching, with thousands separators, and links a profile to its requests', async () => {
    const emulator = await servers.emulator();
    const attributes = Array.from({ length: 1234 }, (_, i) => ({ external_id: `user-${String(i).padStart(4, '0')}`, email: `p${i}@x.io` }));
    for (let i = 0; i < attributes.length; i += 50) await postJson(`${emulator.url}/users/track`, 'k', { attributes: attributes.slice(i, i + 50) });
    const first = (await page(`${emulator.url}/_track/`)).html;
    expect(first).toContain('1,234 profiles (1–100 shown)');
    expect(first).toContain('1,234 profiles, 0 events');
    expect(first).toContain('page 1 of 13');
    expect(first).toMatch(/<a rel="next" href="\/_track\/\?page=2">/);
    const last = (await page(`${emulator.url}/_track/?page=13`)).html;
    expect(last).toContain('1,201–1,234 shown');
    expect(last).toContain('user-1233');
    expect(last).not.toContain('user-1199<');
    // a search with more than 100 matches pages too, keeping its words
    const search = (await page(`${emulator.url}/_track/?q=user-1&page=2`)).html;
    expect(search).toContain('234 profiles matching “user-1” (101–200 shown)');
    expect(search).toContain(`href="/_track/?q=user-1&#38;page=1"`);
    expect(search).toContain('user-1100');

    const profile = emulator.store.findProfiles('user-0042', 1).profiles[0];
    const view = (await page(`${emulator.url}/_track/?profile=${profile.serviceId}`)).html;
    const link = /<a id="profile-requests" href="([^"]+)">/.exec(view)?.[1].replace(/&#38;/g, '&');
    expect(link).toBe('/_track/?view=requests&external_id=user-0042');
    const requests = (await page(`${emulator.url}${link}`)).html;
    expect(requests).toContain('1 request shown');
    expect(requests).toContain('user-0042');
  });
});
