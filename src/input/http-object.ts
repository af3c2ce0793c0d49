// One object at an http(s):// URL (a presigned URL of S3, GCS or Azure included), read with Node's
// own HTTP client: undici 7 ends the process with an assertion when a server closes the connection
// (Connection: close, HTTP/1.0) while a slow reader holds the body back, which a streamed object
// does. A presigned URL is signed for GET alone, so the object's size and identity come from a GET
// of its first byte, not a HEAD; later reads ask for a range, and If-Match its ETag. Redirects are
// followed.
import { get as httpGet, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { InputError } from '../errors.js';
import { withoutSignature } from './location.js';
import { changedAnswer, totalSize, type ObjectStore, type RemoteObject } from './remote.js';

/** Redirects followed for one read (a web server's, a CDN's, a sharing link's). */
const REDIRECTS = 5;

/** A status the person must act on, as an InputError; any other is the network's, tried again. */
function statusProblem(status: number, url: string): InputError | Error {
  if (status === 401 || status === 403) return new InputError(`access denied (${status}): the URL is not allowed to read it (a presigned URL may have expired)`, url);
  if (status === 404 || status === 410) return new InputError(`no such object (${status})`, url);
  if (status === 412 || status === 416) return new InputError('changed while this run read it (its ETag or size is no longer the one first seen); run again to read it anew', url);
  if (status >= 300 && status < 400) return new InputError(`the server answered ${status}, a redirect that was not followed (more than ${REDIRECTS} in a row, or no Location)`, url);
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return new InputError(`the server refused to give it (${status})`, url);
  return new Error(`the server answered ${status}`);
}

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** Its size from a 206's Content-Range (`bytes 0-0/1234`), or a 200's Content-Length. */
function sizeOf(status: number, headers: IncomingHttpHeaders): number | undefined {
  const length = header(headers, 'content-length');
  return totalSize(status === 206 ? header(headers, 'content-range') : undefined, length === undefined ? undefined : Number(length), status === 206);
}

/** One GET, as its answer's head comes; the body is left to the caller (read it, or `drop` it). */
function getOnce(href: string, headers: Record<string, string>, signal?: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const get = href.toLowerCase().startsWith('https:') ? httpsGet : httpGet;
    get(href, { headers, signal }, resolve).on('error', reject);
  });
}

/** A GET that follows redirects (REDIRECTS at most; after that, the redirect is the answer). */
async function getFollowing(href: string, headers: Record<string, string>, signal?: AbortSignal): Promise<IncomingMessage> {
  let at = href;
  for (let hop = 0; ; hop += 1) {
    const answer = await getOnce(at, headers, signal);
    const location = answer.headers.location;
    const status = answer.statusCode ?? 0;
    if (![301, 302, 303, 307, 308].includes(status) || location === undefined || hop === REDIRECTS) return answer;
    drop(answer);
    at = new URL(location, at).toString();
  }
}

/** The bytes of a body from its `start`th: a read the network broke, taken up again from a server that sends the whole object. */
async function* from(body: AsyncIterable<Buffer>, start: number): AsyncGenerator<Buffer> {
  let skip = start;
  for await (const chunk of body) {
    if (skip >= chunk.length) {
      skip -= chunk.length;
      continue;
    }
    yield skip === 0 ? chunk : chunk.subarray(skip);
    skip = 0;
  }
}

/** An answer whose body is not wanted: its connection is closed, not read to its end. */
const drop = (answer: IncomingMessage): void => void answer.destroy();

export function httpStore(): ObjectStore {
  return {
    async list(href, watch) {
      const url = withoutSignature(href);
      const named = url === href ? {} : { href };
      const answer = await getFollowing(href, { range: 'bytes=0-0' }, watch.signal);
      drop(answer);
      // an empty object cannot give a first byte
      const status = answer.statusCode ?? 0;
      if (status === 416) return [{ url, ...named, size: 0, etag: header(answer.headers, 'etag') ?? '' }];
      if (status !== 200 && status !== 206) throw statusProblem(status, url);
      const size = sizeOf(status, answer.headers);
      if (size === undefined) throw new InputError('the server does not say how large it is (no Content-Length or Content-Range)', url);
      const etag = header(answer.headers, 'etag') ?? header(answer.headers, 'last-modified') ?? '';
      return [{ url, ...named, size, etag }];
    },
    async open(object: RemoteObject, start: number, end?: number, stop?: AbortSignal) {
      const headers: Record<string, string> = {};
      if (start > 0 || end !== undefined) headers.range = `bytes=${start}-${end === undefined ? '' : end - 1}`;
      // a strong ETag is compared by the server; a weak one (which If-Match never matches, its
      // comparison being strong) and a Last-Modified taken for one are compared here
      const isEtag = object.etag.startsWith('"') || object.etag.startsWith('W/');
      if (object.etag.startsWith('"')) headers['if-match'] = object.etag;
      const answer = await getFollowing(object.href ?? object.url, headers, stop);
      const status = answer.statusCode ?? 0;
      // a server that serves no ranges (Python's http.server) sends the whole object
      const whole = status === 200 && headers.range !== undefined;
      if (whole && end !== undefined) {
        drop(answer);
        throw new InputError('the server sends only the whole object, not the parts of it a Parquet file is read by (it answered a Range request with 200); download it and give the file', object.url);
      }
      if (status !== (headers.range === undefined || whole ? 200 : 206)) {
        drop(answer);
        throw statusProblem(status, object.url);
      }
      // a server that does not keep to If-Match sends the object as it is now
      const tag = isEtag ? header(answer.headers, 'etag') : header(answer.headers, 'last-modified');
      const changed = changedAnswer(object, tag, sizeOf(status, answer.headers));
      if (changed !== undefined) {
        drop(answer);
        throw changed;
      }
      return whole ? from(answer, start) : answer;
    },
    close() {
      // Node's global agent closes idle connections by itself
    },
  };
}
