// GET /metrics: the Prometheus text format, its counts equal to the request log's, under the key
// rule of /_track/*.
import { describe, expect, it } from 'vitest';
import { postJson, runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

/** `name{labels} value` lines of the exposition, as name+labels -> value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

describe('GET /metrics', () => {
  it('counts requests by route and status as the request log holds them, items by kind, minor errors, 429s and what is stored', async () => {
    const emulator = await servers.emulator({ rateLimit: '1000/1s' });
    const track = `${emulator.url}/users/track`;
    await postJson(track, 'k', { attributes: [{ external_id: 'a', email: 'a@x.io' }, { external_id: 'b', email: 'nope' }] });
    await postJson(track, 'k', { events: [{ external_id: 'a', name: 'e', time: '2024-01-01T00:00:00Z' }], purchases: [{ external_id: 'a', product_id: 'p', currency: 'USD', price: 1, time: '2024-01-01T00:00:00Z' }] });
    await postJson(track, 'k', { events: [{ external_id: 'a', name: 'e', time: '2024-01-01T00:00:00Z' }] }, { 'x-track-fault': '429' });
    await postJson(track, 'k', { events: [{ external_id: 'a', name: 'e', time: '2024-01-01T00:00:00Z' }] }, { 'x-track-fault': '503' });
    await postJson(track, 'wrong', {});
    await postJson(`${emulator.url}/users/nowhere`, 'k', {});
    await fetch(track, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json', 'x-track-fault': 'drop' }, body: '{}' }).catch(() => undefined);
    // neither is counted: /health and the emulator's own routes stand apart, as in the log
    await fetch(`${emulator.url}/health`);
    await fetch(`${emulator.url}/_track/requests`);

    const response = await fetch(`${emulator.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    expect(text).toContain('# TYPE track_emulator_requests_total counter');
    const m = samples(text);

    // by route and status, exactly the request log's
    const log = emulator.requests({ limit: 1000 });
    const fromLog = new Map<string, number>();
    for (const r of log) {
      const route = r.path === '/users/track' || r.path === '/users/export/ids' ? r.path : 'other';
      const key = `track_emulator_requests_total{route="${route}",status="${r.status ?? 'dropped'}"}`;
      fromLog.set(key, (fromLog.get(key) ?? 0) + 1);
    }
    const fromMetrics = new Map([...m].filter(([k]) => k.startsWith('track_emulator_requests_total{')));
    expect(fromMetrics).toEqual(fromLog);
    expect(log).toHaveLength(7);
    expect(fromLog.get('track_emulator_requests_total{route="/users/track",status="201"}')).toBe(2);

    expect(m.get('track_emulator_items_processed_total{kind="attributes"}')).toBe(1);
    expect(m.get('track_emulator_items_processed_total{kind="events"}')).toBe(1);
    expect(m.get('track_emulator_items_processed_total{kind="purchases"}')).toBe(1);
    expect(m.get('track_emulator_minor_errors_total{type="email: is not a valid email address"}')).toBe(1);
    expect(m.get('track_emulator_rate_limited_total')).toBe(1);
    expect(m.get('track_emulator_faults_injected_total{kind="status"}')).toBe(2);
    expect(m.get('track_emulator_faults_injected_total{kind="drop"}')).toBe(1);
    const counts = emulator.store.counts();
    expect(m.get('track_emulator_stored{kind="profiles"}')).toBe(counts.profiles);
    expect(m.get('track_emulator_stored{kind="events"}')).toBe(1);
    expect(m.get('track_emulator_stored{kind="purchases"}')).toBe(1);
    // every request logged was timed; the dropped one too
    const timed = [...m].filter(([k]) => k.startsWith('track_emulator_request_duration_seconds_count')).reduce((n, [, v]) => n + v, 0);
    expect(timed).toBe(7);
    expect(m.get('track_emulator_request_duration_seconds_bucket{le="+Inf",route="/users/track"}')).toBe(6);

    // a reset empties the log and the run page, never a counter
    await fetch(`${emulator.url}/_track/reset`, { method: 'POST' });
    const after = samples(await (await fetch(`${emulator.url}/metrics`)).text());
    expect(after.get('track_emulator_requests_total{route="/users/track",status="201"}')).toBe(2);
    expect(after.get('track_emulator_stored{kind="events"}')).toBe(0);
  });

  it('needs a key on a network address, as /_track/* does, and answers only loopback names on a loopback one', async () => {
    const open = await servers.emulator({ host: '0.0.0.0' });
    const url = `http://127.0.0.1:${open.port}/metrics`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const keyed = await fetch(url, { headers: { authorization: 'Bearer k' } });
    expect(keyed.status).toBe(200);
    expect(await keyed.text()).toContain('track_emulator_requests_total');

    const local = await servers.emulator();
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: local.port, path: '/metrics', headers: { host: 'rebound.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });
});

it('is named in track emulate --help, with the run page', async () => {
  const help = await runCliAsync(['emulate', '--help']);
  expect(help.status).toBe(0);
  expect(help.stdout).toMatch(/GET \/metrics \(Prometheus text format\)/);
  expect(help.stdout).toMatch(/GET \/_track\/run \(charts of the run/);
});
