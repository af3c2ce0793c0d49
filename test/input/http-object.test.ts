// Objects at http(s):// URLs from the servers people have, read by the real CLI: one that closes the
// connection after each answer (Connection: close, as HTTP/1.0 servers and Python's http.server do),
// read slower than the server sends (gzipped NDJSON: each byte read is ten to parse); one that
// serves no ranges (Python's http.server), whose connection breaks once mid-object; one that gives
// weak ETags and compares If-Match strongly (Django).
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliAsync, tempDir } from '../helpers/cli.js';
import { optional, writeParquet } from '../helpers/parquet.js';

const ROWS = 150_000;
const OBJECTS = ['a', 'b', 'c', 'd'];
const body = gzipSync(Array.from({ length: ROWS }, (_, i) => JSON.stringify({ external_id: `user-${i}`, plan: `plan ${i % 7}`, visits: i })).join('\n') + '\n');

let base: string;
let parquet: Buffer;
/** The Range header of each request to the server that serves no ranges ('' for none). */
let asked: string[] = [];

/**
 * Python's http.server: no ranges, each answer whole, the connection closed after it. The first
 * read of the whole object is cut off halfway.
 */
function noRanges(path: string, range: string, answer: ServerResponse): void {
  const bytes = path.endsWith('.parquet') ? parquet : body;
  answer.writeHead(200, { connection: 'close', 'content-length': bytes.length, 'last-modified': 'Mon, 04 Nov 2024 10:00:00 GMT' });
  asked.push(range);
  if (asked.filter((asking) => asking === '').length === 1 && range === '') answer.write(bytes.subarray(0, bytes.length >> 1), () => answer.destroy());
  else answer.end(bytes);
}

const server = createServer((request, answer) => {
  if (request.url?.startsWith('/plain/') === true) return noRanges(request.url, request.headers.range ?? '', answer);
  const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? '');
  // a weak ETag (Django's, Rails'), which If-Match never matches: its comparison is strong
  const weak = request.url?.startsWith('/weak/') === true;
  const headers = { connection: 'close', etag: weak ? 'W/"v1"' : '"v1"' };
  if (weak && request.headers['if-match'] !== undefined) {
    answer.writeHead(412, headers).end();
    return;
  }
  const bytes = request.url?.endsWith('.parquet') === true ? parquet : body;
  if (range === null) {
    // the rest, with the close, comes while the reader still works through the start
    answer.writeHead(200, { ...headers, 'content-length': bytes.length }).write(bytes.subarray(0, 256 * 1024));
    setTimeout(() => answer.end(bytes.subarray(256 * 1024)), 300);
    return;
  }
  const start = Number(range[1]);
  const end = range[2] === '' ? bytes.length - 1 : Math.min(Number(range[2]), bytes.length - 1);
  answer.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${bytes.length}` });
  answer.end(bytes.subarray(start, end + 1));
});
const folder = tempDir();

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const path = `${folder.dir}/users.parquet`;
  writeParquet(path, [{ name: 'root', num_children: 1 }, optional('external_id', { type: 'BYTE_ARRAY', converted_type: 'UTF8' })], { external_id: ['a', 'b'] });
  parquet = readFileSync(path);
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  folder.cleanup();
});

describe('an object at a URL', () => {
  it('is read whole from a server that closes each connection while the reader holds the body back', async () => {
    const run = await runCliAsync(['validate', ...OBJECTS.map((name) => `${base}/${name}.ndjson.gz`), '--json', '--rejects', 'r.ndjson'], { cwd: folder.dir });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: ROWS * OBJECTS.length, rejected: 0, items: { attributes: ROWS * OBJECTS.length } });
  });

  it('is taken up again from a server that serves no ranges, skipping what was read; a Parquet file there is refused at once (exit 2)', async () => {
    const run = await runCliAsync(['validate', `${base}/plain/a.ndjson.gz`, '--json', '--rejects', 'r.ndjson'], { cwd: folder.dir });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: ROWS, rejected: 0 });
    // the listing's first byte, the read cut off, and the read taken up again
    expect(asked).toEqual(['bytes=0-0', '', expect.stringMatching(/^bytes=[1-9]\d*-$/)]);
    asked = [];
    const started = Date.now();
    const refused = await runCliAsync(['validate', `${base}/plain/users.parquet`], { cwd: folder.dir });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`${base}/plain/users.parquet: the server sends only the whole object, not the parts of it a Parquet file is read by`);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('is read from a server that gives a weak ETag, which If-Match cannot name: the ETag is compared here', async () => {
    const run = await runCliAsync(['validate', `${base}/weak/a.ndjson.gz`, `${base}/weak/users.parquet`, '--json', '--rejects', 'r.ndjson'], { cwd: folder.dir });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: ROWS + 2, rejected: 0 });
  });
});
