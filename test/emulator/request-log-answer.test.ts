// GET /_track/requests answers a request at a time: the log holds up to 128 MiB, and a body of control
// characters is written six bytes to one, so as one text the answer took several times the log's
// memory (past the heap here, where the emulator aborted) and held the server while it was made.
import { afterEach, expect, it } from 'vitest';
import { spawnEmulator, type RunningEmulator } from '../helpers/cli.js';

let emu: RunningEmulator | undefined;
afterEach(async () => {
  emu?.proc.kill('SIGTERM');
  await emu?.exited;
  emu = undefined;
});

const REQUESTS = 500;
const BODY = '\u0001'.repeat(64 * 1024);

it('answers 500 logged bodies of 64 KB of control characters (190 MB of JSON) within a 64 MB heap', async () => {
  emu = await spawnEmulator(['--db', ':memory:', '--api-key', 'k', '--quiet'], { env: { NODE_OPTIONS: '--max-old-space-size=64' } });
  const url = emu.url;
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < REQUESTS) {
        next += 1;
        const res = await fetch(`${url}/users/track`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: BODY });
        expect(res.status).toBe(400);
        await res.text();
      }
    }),
  );
  const res = await fetch(`${url}/_track/requests?limit=100000`);
  expect(res.status).toBe(200);
  const answer = (await res.json()) as { requests: { id: number; body: unknown }[]; log: { requests: number } };
  expect(answer.log.requests).toBe(REQUESTS);
  expect(answer.requests.map((r) => r.id)).toEqual(Array.from({ length: REQUESTS }, (_, i) => REQUESTS - i));
  expect(answer.requests.every((r) => r.body === BODY)).toBe(true);
  // the filters answer in the same shape
  const none = (await (await fetch(`${url}/_track/requests?status=201`)).json()) as { requests: unknown[]; log: { requests: number } };
  expect(none).toMatchObject({ requests: [], log: { requests: REQUESTS } });
}, 60_000);
