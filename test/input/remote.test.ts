// Objects in storage read through the stores (s3.ts, http-object.ts) against a real S3-compatible
// server on loopback (s3rver, which does not keep to If-Match): an object replaced after it was
// listed is refused when it is read, never read as the object listed.
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { closeRemoteStores, listRemote, remoteBytes, type RemoteInputs, type RemoteSettings } from '../../src/input/remote.js';
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
