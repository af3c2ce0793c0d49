// A real S3-compatible server on loopback for the tests (s3rver, on port 0, its files in a temporary
// folder), with a client of the official SDK to fill it. s3rver stores a streamed upload's
// aws-chunked framing as the object's bytes, so objects are put as whole buffers, which the SDK
// sends plain (with their checksum in a header).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/** The credentials s3rver takes, as the environment of a run that reads from it. */
export const S3_ENV = {
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  AWS_EC2_METADATA_DISABLED: 'true',
} as const;

export interface S3Server {
  endpoint: string;
  port: number;
  client: S3Client;
  bucket(name: string): Promise<void>;
  put(bucket: string, key: string, body: string | Uint8Array): Promise<void>;
  remove(bucket: string, key: string): Promise<void>;
  close(): Promise<void>;
}

export async function startS3(port = 0): Promise<S3Server> {
  // the client's notice that its releases of 2027 will need Node 22 is no finding of these tests
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const directory = mkdtempSync(join(tmpdir(), 'track-s3-'));
  const server = new S3rver({ port, address: '127.0.0.1', silent: true, directory, resetOnClose: true });
  const address = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: S3_ENV.AWS_REGION,
    credentials: { accessKeyId: S3_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: S3_ENV.AWS_SECRET_ACCESS_KEY },
  });
  return {
    endpoint,
    port: address.port,
    client,
    async bucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async put(bucket, key, body) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: typeof body === 'string' ? Buffer.from(body) : body }));
    },
    async remove(bucket, key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
    async close() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
