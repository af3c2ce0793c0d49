// An input that breaks while it is read (a gzip file cut short, a later input gone, a file cut or
// replaced under the run) stops the run (exit 3) naming the file and where it broke, but only once
// every whole row read before the break is sent and answered; its last, partial row is no bad row,
// and a --resume once the file is back sends the rest.
import { readFileSync, renameSync, truncateSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import type { FaultServer } from '../helpers/fault-server.js';
import { useServers } from '../helpers/servers.js';

const { tmp, faultServer } = useServers();

/** A server slow to answer: requests the run has taken wait for a slot when the input breaks. */
const slowServer = async (onRequest: (index: number) => void = () => undefined): Promise<FaultServer> =>
  faultServer((request) => {
    onRequest(request.index);
    return { kind: 'ok', delayMs: 15 };
  });

const sentItems = (server: FaultServer, kind: 'attributes' | 'events') => server.received.flatMap((request) => (request.body?.[kind] ?? []) as Array<Record<string, unknown>>);

const upload = (args: string[]) => runCliAsync(['upload', ...args, '--api-key', 'k', '--json'], { cwd: tmp.dir });

describe('a gzip file cut short', () => {
  it('sends every whole row before the cut, none abandoned, then stops (exit 3) naming the file and the byte', async () => {
    const server = await slowServer();
    const whole = gzipSync(`external_id,plan\n${Array.from({ length: 50_000 }, (_, i) => `gz${i},p\n`).join('')}`);
    const cut = whole.subarray(0, whole.length >> 1);
    writeFileSync(join(tmp.dir, 'cut.csv.gz'), cut);
    // the rows whole in what is left, as a reader that stops at the cut finds them
    const text = gunzipSync(cut, { finishFlush: constants.Z_SYNC_FLUSH }).toString();
    const rows = text.slice(0, text.lastIndexOf('\n')).split('\n').length - 1;

    const r = await upload(['cut.csv.gz', '--url', server.url]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toContain(`cut.csv.gz: is not valid gzip data past byte ${cut.length.toLocaleString('en-US')} of the file (unexpected end of file)`);
    const summary = JSON.parse(r.stdout);
    expect(summary.rows).toBe(rows);
    expect(summary.readToEnd).toBe(false);
    expect(summary.delivery.requestsAbandoned).toBe(0);
    expect(summary.delivery.items.attributes.accepted).toBe(rows);
    const ids = sentItems(server, 'attributes').map((item) => item.external_id);
    expect(new Set(ids)).toEqual(new Set(Array.from({ length: rows }, (_, i) => `gz${i}`)));
    expect(ids).toHaveLength(rows);
  });
});

describe('a later input that is gone when its turn comes', () => {
  it('lets every request of the files before it be sent and answered, then stops naming it', async () => {
    const rows = 20_000;
    writeFileSync(join(tmp.dir, 'a.csv'), `external_id,plan\n${Array.from({ length: rows }, (_, i) => `a${i},p\n`).join('')}`);
    writeFileSync(join(tmp.dir, 'b.csv'), 'external_id,plan\nb1,p\n');
    const server = await slowServer((index) => {
      if (index === 0) unlinkSync(join(tmp.dir, 'b.csv'));
    });
    const r = await upload(['a.csv', 'b.csv', '--url', server.url]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/b\.csv: cannot read it \(ENOENT\)/);
    const summary = JSON.parse(r.stdout);
    expect(summary.delivery.requestsAbandoned).toBe(0);
    expect(summary.delivery.items.attributes.accepted).toBe(rows);
    expect(new Set(sentItems(server, 'attributes').map((item) => item.external_id)).size).toBe(rows);
  });
});

describe('a file cut while it is read', () => {
  const rows = 40_000;
  const csv = `external_id,name,time,properties.n\n${Array.from({ length: rows }, (_, i) => `u${i % 3000},evt,2024-01-01T00:00:00Z,${i}\n`).join('')}`;
  /** A whole second, which the file is given back with: the journal knows a file by its size and modified time. */
  const modified = 1_700_000_000;

  it('is an input error naming it and its sizes, its cut row no bad row; a --resume once it is back sends the rest', async () => {
    const file = join(tmp.dir, 'evt.csv');
    writeFileSync(file, csv);
    utimesSync(file, modified, modified);
    // cut under the run as the first request arrives: the reader is then far from the end
    const server = await slowServer((index) => {
      if (index === 0) truncateSync(file, 100_000);
    });
    const r = await upload(['evt.csv', '--url', server.url]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/evt\.csv: changed while it was read: it was 1,\d{3},\d{3} bytes when opened and 100,000 bytes at the end \(read to byte [\d,]+\); put the file back as it was/);
    const summary = JSON.parse(r.stdout);
    expect(summary.rejected).toBe(0);
    expect(summary.readToEnd).toBe(false);
    expect(summary.rows).toBeGreaterThan(0);
    expect(summary.rows).toBeLessThan(rows);
    expect(summary.delivery.requestsAbandoned).toBe(0);
    expect(summary.delivery.items.events.accepted).toBe(summary.rows);

    writeFileSync(file, csv);
    utimesSync(file, modified, modified);
    const again = await upload(['evt.csv', '--url', server.url, '--resume']);
    expect(again.status, again.stderr).toBe(0);
    const numbers = sentItems(server, 'events').map((item) => (item.properties as { n: number }).n);
    expect(numbers).toHaveLength(rows);
    expect(new Set(numbers).size).toBe(rows);
  });

  it('is an input error when another file takes its name while it is read', async () => {
    const file = join(tmp.dir, 'evt.csv');
    writeFileSync(file, csv);
    writeFileSync(join(tmp.dir, 'other.csv'), 'external_id,name,time\nx,evt,2024-01-01T00:00:00Z\n');
    const server = await slowServer((index) => {
      if (index === 0) renameSync(join(tmp.dir, 'other.csv'), file);
    });
    const r = await upload(['evt.csv', '--url', server.url]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/evt\.csv: changed while it was read: another file took its name \(it was 1,\d{3},\d{3} bytes when opened, the file there now is \d+ bytes\)/);
    const summary = JSON.parse(r.stdout);
    // the file opened was read to its end all the same, and every row of it sent
    expect(summary.rows).toBe(rows);
    expect(summary.delivery.items.events.accepted).toBe(rows);
    expect(readFileSync(file, 'utf8')).toContain('x,evt');
  });
});
