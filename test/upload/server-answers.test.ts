// How `track upload --delta` takes two answers, through the real CLI: a web front end answering
// 200 with its page to every path (not the endpoint: nothing learned, the run stops), and the
// emulator refusing a request whole for one blocklisted external_id (sent again in parts).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator, faultServer } = useServers();

const write = (name: string, text: string): string => {
  const path = join(tmp.dir, name);
  writeFileSync(path, text);
  return path;
};
const upload = (args: string[]) => runCliAsync(['upload', ...args, '--api-key', 'k', '--delta', '--state', join(tmp.dir, 'st.sqlite'), '--json'], { cwd: tmp.dir });
const summaryOf = (stdout: string) => JSON.parse(stdout) as { delivery: { items: { attributes: Record<string, number> }; requestsInParts: number; warnings: string[] } };

describe('track upload reading the answers', () => {
  it("stops at a web front end's 200 page (exit 3, naming it), learns nothing, and the resumed run sends the row again", async () => {
    const NGINX = '<html><body>Welcome to nginx!</body></html>';
    const faults = await faultServer(() => ({ kind: 'raw', status: 200, body: NGINX, contentType: 'text/html' }));
    const file = write('h.csv', 'external_id,plan\nh1,gold\n');

    const first = await upload([file, '--url', faults.url]);
    expect(first.status, first.stderr).toBe(3);
    expect(first.stderr).toContain(`${faults.url}/users/track answered HTTP 200 (text/html): "${NGINX}"; this does not look like the endpoint: check --url`);
    expect(summaryOf(first.stdout).delivery.items.attributes).toEqual({ sent: 0, accepted: 0, rejected: 0 });

    // the real endpoint behind the right URL: the value was not learned, so it is sent
    faults.script(() => undefined);
    const before = faults.received.length;
    const second = await upload([file, '--url', faults.url, '--resume']);
    expect(second.status, second.stderr).toBe(0);
    expect(faults.received.slice(before).flatMap((r) => r.body?.attributes ?? [])).toEqual([{ external_id: 'h1', plan: 'gold' }]);
  }, 60_000);

  it('rejects only the row of a blocklisted external_id, naming it; the state learns the other 119', async () => {
    const emu = await emulator({ blocklist: ['mb7'] });
    const rows = Array.from({ length: 120 }, (_, i) => `mb${i + 1},gold`);
    const file = write('many.csv', `external_id,plan\n${rows.join('\n')}\n`);

    const first = await upload([file, '--url', emu.url]);
    expect(first.status, first.stderr).toBe(1);
    const summary = summaryOf(first.stdout);
    expect(summary.delivery.items.attributes).toEqual({ sent: 120, accepted: 119, rejected: 1 });
    // the first request of 50 in halves: at most 2·ceil(log2(50)) = 12 parts
    expect(summary.delivery.requestsInParts).toBeGreaterThan(0);
    expect(summary.delivery.requestsInParts).toBeLessThanOrEqual(12);
    expect(summary.delivery.warnings).toEqual([
      `request 0: refused whole for a blocklisted external_id ("mb7"); sent again in ${summary.delivery.requestsInParts} parts, so that only its items are rejected`,
    ]);
    const rejects = readFileSync(join(tmp.dir, 'many.csv.rejects.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(rejects).toEqual([
      { file, line: 8, kind: 'attributes', row: { external_id: 'mb7', plan: 'gold' }, errors: ['HTTP 400: provided external_id is blocklisted and not allowed, got "mb7"'] },
    ]);
    expect(emu.store.counts().profiles).toBe(119);

    // run again: only mb7 is left to send (the state knows the rest), and it is refused again
    const second = await upload([file, '--url', emu.url, '--restart']);
    expect(second.status, second.stderr).toBe(1);
    expect(summaryOf(second.stdout).delivery.items.attributes).toEqual({ sent: 1, accepted: 0, rejected: 1 });
  }, 60_000);

  it('does the same for requests planned in the worker thread (a run without --delta), two ids in two requests', async () => {
    const emu = await emulator({ blocklist: ['mb7', 'mb60'] });
    const rows = Array.from({ length: 120 }, (_, i) => `mb${i + 1},gold`);
    const file = write('many.csv', `external_id,plan\n${rows.join('\n')}\n`);
    const r = await runCliAsync(['upload', file, '--url', emu.url, '--api-key', 'k', '--json'], { cwd: tmp.dir });
    expect(r.status, r.stderr).toBe(1);
    expect(summaryOf(r.stdout).delivery.items.attributes).toEqual({ sent: 120, accepted: 118, rejected: 2 });
    const rejects = readFileSync(join(tmp.dir, 'many.csv.rejects.ndjson'), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(rejects.map((x) => [x.line, x.errors]).sort()).toEqual([
      [61, ['HTTP 400: provided external_id is blocklisted and not allowed, got "mb60"']],
      [8, ['HTTP 400: provided external_id is blocklisted and not allowed, got "mb7"']],
    ]);
    expect(emu.store.counts().profiles).toBe(118);
  }, 60_000);
});
