// Objects in S3, or in a store that speaks its API (MinIO, R2, GCS's interoperability endpoint)
// through --s3-endpoint, read with the official client. Credentials and region come from the
// standard AWS chain; a prefix lists every object under it and a glob those its pattern matches,
// in key order. Loaded only when an s3:// input is given: the client takes a while to load.
import type { GetObjectCommandOutput, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import picomatch from 'picomatch';
import { InputError } from '../errors.js';
import { locate, s3Pattern } from './location.js';
import { changedAnswer, totalSize, type IdleWatch, type ObjectStore, type RemoteObject, type RemoteSettings } from './remote.js';

/** Where the standard chain looks for credentials, for the message when it finds none. */
const CREDENTIAL_SOURCES =
  'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary ones), the profile AWS_PROFILE names ' +
  '(else "default") in ~/.aws/credentials and ~/.aws/config (SSO and credential_process included), AWS_WEB_IDENTITY_TOKEN_FILE, ' +
  'and a container or instance role';

/** A client of the store: the region from the chain (AWS_REGION, the profile), else us-east-1 and S3's redirects to the bucket's. */
async function client(settings: RemoteSettings): Promise<S3Client> {
  const { S3Client } = await import('@aws-sdk/client-s3');
  const endpoint = settings.s3Endpoint;
  const common = {
    // the retries are remote.ts's, which takes a broken read up again where it stopped
    maxAttempts: 1,
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestChecksumCalculation: 'WHEN_REQUIRED',
    ...(endpoint === undefined ? { followRegionRedirects: true } : { endpoint, forcePathStyle: true }),
  } as const;
  const probe = new S3Client(common);
  const region = await probe.config.region().catch(() => undefined);
  if (region !== undefined) return probe;
  probe.destroy();
  return new S3Client({ ...common, region: 'us-east-1' });
}

const quoted = (text: string): string => JSON.stringify(text);

/** An error of the store as a person acts on it (an InputError); any other is the network's, tried again. */
function problem(error: unknown, url: string, bucket: string): unknown {
  const e = error as Partial<S3ServiceException> & { name?: string; message?: string; Code?: string };
  const name = e.name ?? '';
  const status = e.$metadata?.httpStatusCode;
  if (name === 'CredentialsProviderError' || /could not load credentials/i.test(e.message ?? '')) {
    return new InputError(`no AWS credentials were found to read it; looked for ${CREDENTIAL_SOURCES}`, url);
  }
  if (status === 403 || ['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AllAccessDisabled', 'ExpiredToken', 'InvalidToken'].includes(name)) {
    const why = ['Forbidden', 'Unknown', ''].includes(name) ? '' : ` ${name}`;
    return new InputError(`access denied (403${why}): the credentials found cannot read it (they need s3:ListBucket on the bucket and s3:GetObject on its objects)`, url);
  }
  if (name === 'NoSuchBucket') return new InputError(`the bucket ${quoted(bucket)} does not exist`, url);
  if (name === 'PermanentRedirect' || status === 301) return new InputError(`the bucket ${quoted(bucket)} is in another region than the one set (AWS_REGION, the profile's region)`, url);
  // a range past the end: the object is shorter than listed
  if (name === 'PreconditionFailed' || status === 412 || name === 'InvalidRange' || status === 416) {
    return new InputError('changed while this run read it (its ETag or size is no longer the one listed); run again to read it anew', url);
  }
  if (name === 'InvalidBucketName') return new InputError(`${quoted(bucket)} is not a valid bucket name`, url);
  if (name === 'NoSuchKey' || (status === 404 && name !== 'NotFound')) return new InputError('no such object', url);
  return error;
}

export async function s3Store(settings: RemoteSettings): Promise<ObjectStore> {
  const s3 = await client(settings);
  const { GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command } = await import('@aws-sdk/client-s3');

  /** Why a HEAD found nothing (it has no body to say): no bucket, or no such object. */
  const missing = async (url: string, bucket: string, key: string, watch: IdleWatch): Promise<InputError> => {
    try {
      watch.run();
      await s3.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal: watch.signal });
    } catch (error) {
      const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NotFound' || e.name === 'NoSuchBucket' || e.$metadata?.httpStatusCode === 404) {
        return new InputError(`the bucket ${quoted(bucket)} does not exist`, url);
      }
    }
    return new InputError(`no such object (to read every object under it as a prefix, end it with /: s3://${bucket}/${key}/)`, url);
  };

  const head = async (url: string, bucket: string, key: string, watch: IdleWatch): Promise<RemoteObject[]> => {
    try {
      const found = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: watch.signal });
      return [{ url, size: found.ContentLength ?? 0, etag: found.ETag ?? '' }];
    } catch (error) {
      const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404) throw await missing(url, bucket, key, watch);
      throw problem(error, url, bucket);
    }
  };

  /** Every object under `prefix` that `matches` takes, in key order (folder markers left out). */
  const listed = async (url: string, bucket: string, prefix: string, matches: (key: string) => boolean, watch: IdleWatch): Promise<RemoteObject[]> => {
    const objects: Array<RemoteObject & { key: string }> = [];
    let token: string | undefined;
    do {
      let page;
      try {
        watch.run();
        page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: watch.signal });
      } catch (error) {
        throw problem(error, url, bucket);
      }
      for (const entry of page.Contents ?? []) {
        const key = entry.Key ?? '';
        if (key.endsWith('/') || !matches(key)) continue;
        objects.push({ key, url: `s3://${bucket}/${key}`, size: entry.Size ?? 0, etag: entry.ETag ?? '' });
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    // S3 lists in the byte order of UTF-8 keys; so does this, whatever a compatible store does
    objects.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
    if (objects.length === 0) {
      throw new InputError(matches(prefix) ? `no object is under this prefix` : 'no object matches this glob', url);
    }
    return objects.map(({ url, size, etag }) => ({ url, size, etag }));
  };

  return {
    async list(input, watch) {
      const where = locate(input);
      if (where.kind !== 's3') throw new Error(`unreachable: ${input} is no s3:// URL`);
      const { bucket, key } = where;
      if (bucket === '') throw new InputError('names no bucket (s3://bucket/key)', input);
      const pattern = s3Pattern(key);
      if (pattern.kind === 'object') return head(input, bucket, key, watch);
      if (pattern.kind === 'prefix') return listed(input, bucket, key, () => true, watch);
      const isMatch = picomatch(key, { dot: true });
      return listed(input, bucket, pattern.prefix, isMatch, watch);
    },
    async open(object, start, end, stop) {
      const where = locate(object.url) as { bucket: string; key: string };
      const range = start === 0 && end === undefined ? undefined : `bytes=${start}-${end === undefined ? '' : end - 1}`;
      let got: GetObjectCommandOutput;
      try {
        got = await s3.send(
          new GetObjectCommand({ Bucket: where.bucket, Key: where.key, Range: range, IfMatch: object.etag === '' ? undefined : object.etag }),
          { abortSignal: stop },
        );
      } catch (error) {
        throw problem(error, object.url, where.bucket);
      }
      const changed = changedAnswer(object, got.ETag, totalSize(got.ContentRange, got.ContentLength, range !== undefined));
      if (changed !== undefined) {
        (got.Body as { destroy?: () => void } | undefined)?.destroy?.();
        throw changed;
      }
      return got.Body as AsyncIterable<Uint8Array>;
    },
    close() {
      s3.destroy();
    },
  };
}
