// Objects in storage read through the stores (s3.ts, http-object.ts) against a real S3-compatible
// server on loopback (s3rver, which does not keep to If-Match): an object replaced after it was
// listed is refused when it is read, never read as the object listed; a server that falls silent
// without closing the connection is given up on, not waited for.
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError, SourceError, StoppedError } from '../../src/errors.js';
import { closeRemoteStores, listRemote, remoteBytes, remoteRange, type RemoteInputs, type RemoteSettings } from '../../src/input/remote.js';
import { startCuttingProxy } from '../helpers/cutting-proxy.js';
import { S3_ENV, startS3, type S3Server } from '../helpers/s3.js';

let s3: S3Server;
let settings: RemoteSettings;
const saved = { ...process.env };

beforeAll(async () => {
  Object.assign(process.env, S3_ENV);
  s3 = await startS3();
  await s3.bucket('objects');
  settings = { s3Endpoint: s3.endpoint, retries: 1, retryBaseMs: 10 };
});
afterAll(async () => {
  await closeRemoteStores();
  await s3?.close();
  for (const key of Object.keys(S3_ENV)) if (!(key in saved)) delete process.env[key];
});

/** Every byte remoteBytes gives of `url`, as text. */
async function read(url: string, remote: RemoteInputs): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of remoteBytes(url, remote)) parts.push(chunk);
  return Buffer.concat(parts).toString('utf8');
}

describe('an object replaced after it was listed', () => {
  const replaced = async (input: (key: string) => Promise<string>, key: string, now: string): Promise<unknown> => {
    await s3.put('objects', key, 'external_id,plan\nu1,pro\nu2,team\n');
    const url = await input(key);
    const [object] = await listRemote(url, settings);
    const remote: RemoteInputs = { settings, objects: { [url]: object } };
    expect(await read(url, remote)).toBe('external_id,plan\nu1,pro\nu2,team\n');
    await s3.put('objects', key, now);
    return read(url, remote).then(
      (text) => text,
      (error: unknown) => error,
    );
  };
  const s3Url = async (key: string): Promise<string> => `s3://objects/${key}`;
  const presigned = (key: string): Promise<string> => getSignedUrl(s3.client, new GetObjectCommand({ Bucket: 'objects', Key: key }), { expiresIn: 600 });

  for (const [name, input] of [
    ['s3://', s3Url],
    ['a presigned https:// URL', presigned],
  ] as const) {
    it(`is refused, shorter or longer, through ${name}`, async () => {
      for (const now of ['external_id,plan\nother,x\n', `external_id,plan\n${'u9,enterprise\n'.repeat(50)}`]) {
        const got = await replaced(input, `changed-${name.length}-${now.length}.csv`, now);
        expect(got).toBeInstanceOf(InputError);
        expect((got as Error).message).toMatch(/changed while this run read it/);
      }
    });
  }
});

describe('a server that falls silent, its connection open', () => {
  it('fails a listing, a read and a range read once its tries run out, naming the silence', async () => {
    await s3.put('objects', 'silent.csv', `external_id\n${'u1\n'.repeat(20_000)}`);
    const proxy = await startCuttingProxy(s3.endpoint);
    const quick: RemoteSettings = { s3Endpoint: proxy.url, retries: 1, retryBaseMs: 10, idleMs: 300 };
    try {
      const url = 's3://objects/silent.csv';
      const [object] = await listRemote(url, quick);
      const remote: RemoteInputs = { settings: quick, objects: { [url]: object } };
      // a first answer stops after its first 100 bytes, any other after its headers, and says nothing more
      proxy.cut(() => true, (request) => (request.headers.range === undefined ? 100 : 0), Infinity, true);
      const started = Date.now();
      await expect(read(url, remote)).rejects.toThrow(/silent\.csv: reading stopped at byte 100 of \d+; 2 tries failed, the last with ETIMEDOUT \(no byte came for 0\.3 s\)/);
      await expect(remoteRange(url, remote, 0, 1000)).rejects.toThrow(/reading bytes 0-999: 2 tries failed, the last with ETIMEDOUT \(no answer for 0\.3 s\)/);
      await expect(listRemote('s3://objects/', quick)).rejects.toThrow(SourceError);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await closeRemoteStores();
      await proxy.close();
    }
  }, 20_000);

  it("ends a listing, a read and a range read at once when the run's stop comes, not after its tries", async () => {
    await s3.put('objects', 'stopped.csv', `external_id\n${'u1\n'.repeat(20_000)}`);
    const proxy = await startCuttingProxy(s3.endpoint);
    try {
      const url = 's3://objects/stopped.csv';
      const [object] = await listRemote(url, { s3Endpoint: proxy.url });
      // 30 s of silence a try, five tries: a stop a quarter of a second in ends each at once
      const stoppedAfter = (ms: number): RemoteSettings => {
        const stop = new AbortController();
        setTimeout(() => stop.abort(), ms);
        return { s3Endpoint: proxy.url, stop: stop.signal };
      };
      proxy.cut(() => true, (request) => (request.headers.range === undefined ? 100 : 0), Infinity, true);
      const started = Date.now();
      const remote = (): RemoteInputs => ({ settings: stoppedAfter(250), objects: { [url]: object } });
      await expect(read(url, remote())).rejects.toThrow(new StoppedError(`${url}: stopped while reading it at byte 100 of ${object.size}`));
      await expect(remoteRange(url, remote(), 0, 1000)).rejects.toThrow(new StoppedError(`${url}: stopped while reading bytes 0-999`));
      await expect(listRemote('s3://objects/', stoppedAfter(250))).rejects.toThrow(new StoppedError('s3://objects/: stopped while listing it'));
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await closeRemoteStores();
      await proxy.close();
    }
  }, 20_000);
});
