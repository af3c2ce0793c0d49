// One object at an http(s):// URL (a presigned URL of S3, GCS or Azure included), read with undici.
// A presigned URL is signed for GET alone, so the object's size and identity come from a GET of its
// first byte, not a HEAD; later reads ask for a range, and If-Match its ETag.
import { request, type Dispatcher } from 'undici';
import { InputError } from '../errors.js';
import type { ObjectStore, RemoteObject } from './remote.js';

/** A status the person must act on, as an InputError; any other is the network's, tried again. */
function statusProblem(status: number, url: string): InputError | Error {
  if (status === 401 || status === 403) return new InputError(`access denied (${status}): the URL is not allowed to read it (a presigned URL may have expired)`, url);
  if (status === 404 || status === 410) return new InputError(`no such object (${status})`, url);
  if (status === 412) return new InputError('changed while this run read it (its ETag is no longer the one first seen); run again to read it anew', url);
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return new InputError(`the server refused to give it (${status})`, url);
  return new Error(`the server answered ${status}`);
}

const header = (headers: Dispatcher.ResponseData['headers'], name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** Its size from a 206's Content-Range (`bytes 0-0/1234`), or a 200's Content-Length. */
function sizeOf(status: number, headers: Dispatcher.ResponseData['headers']): number | undefined {
  const total = status === 206 ? /\/(\d+)$/.exec(header(headers, 'content-range') ?? '')?.[1] : header(headers, 'content-length');
  return total === undefined ? undefined : Number(total);
}

export function httpStore(): ObjectStore {
  return {
    async list(url) {
      const answer = await request(url, { method: 'GET', headers: { range: 'bytes=0-0' } });
      await answer.body.dump();
      // an empty object cannot give a first byte
      if (answer.statusCode === 416) return [{ url, size: 0, etag: header(answer.headers, 'etag') ?? '' }];
      if (answer.statusCode !== 200 && answer.statusCode !== 206) throw statusProblem(answer.statusCode, url);
      const size = sizeOf(answer.statusCode, answer.headers);
      if (size === undefined) throw new InputError('the server does not say how large it is (no Content-Length or Content-Range)', url);
      const etag = header(answer.headers, 'etag') ?? header(answer.headers, 'last-modified') ?? '';
      return [{ url, size, etag }];
    },
    async open(object: RemoteObject, start: number, end?: number) {
      const headers: Record<string, string> = {};
      if (start > 0 || end !== undefined) headers.range = `bytes=${start}-${end === undefined ? '' : end - 1}`;
      // an ETag is compared by the server; a Last-Modified taken for one is compared here
      const isEtag = object.etag.startsWith('"') || object.etag.startsWith('W/');
      if (isEtag) headers['if-match'] = object.etag;
      const answer = await request(object.url, { method: 'GET', headers });
      const expected = headers.range === undefined ? 200 : 206;
      const changed = !isEtag && object.etag !== '' && object.etag !== (header(answer.headers, 'last-modified') ?? '');
      if (answer.statusCode !== expected || changed) {
        await answer.body.dump();
        throw changed ? statusProblem(412, object.url) : statusProblem(answer.statusCode, object.url);
      }
      return answer.body;
    },
    close() {
      // undici's global pool closes idle connections by itself
    },
  };
}
