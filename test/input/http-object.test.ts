// Objects at http(s):// URLs from the servers people have: one that closes the connection after each
// answer (Connection: close, as HTTP/1.0 servers and Python's http.server do), read by the real CLI
// slower than the server sends them (gzipped NDJSON: each byte read is ten to parse).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliAsync, tempDir } from '../helpers/cli.js';

const ROWS = 150_000;
const OBJECTS = ['a', 'b', 'c', 'd'];
const body = gzipSync(Array.from({ length: ROWS }, (_, i) => JSON.stringify({ external_id: `user-${i}`, plan: `plan ${i % 7}`, visits: i })).join('\n') + '\n');

let base: string;
const server = createServer((request, answer) => {
  const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? '');
  const headers = { connection: 'close', etag: '"v1"' };
  if (range === null) {
    // the rest, with the close, comes while the reader still works through the start
    answer.writeHead(200, { ...headers, 'content-length': body.length }).write(body.subarray(0, 256 * 1024));
    setTimeout(() => answer.end(body.subarray(256 * 1024)), 300);
    return;
  }
  const start = Number(range[1]);
  const end = range[2] === '' ? body.length - 1 : Math.min(Number(range[2]), body.length - 1);
  answer.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${body.length}` });
  answer.end(body.subarray(start, end + 1));
});
const folder = tempDir();

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
});
