// Where an input lives, from its name alone: standard input, a local file, an object in S3 (or a
// store that speaks its API) named by s3://bucket/key, a prefix or a glob, or one object at an
// http(s):// URL (a presigned URL included).
import { basename, dirname, join } from 'node:path';

export type Location =
  | { kind: 'stdin' }
  | { kind: 'file'; path: string }
  /** `key` is an object's key, a prefix (empty, or ending in `/`) or a glob; see s3Pattern. */
  | { kind: 's3'; bucket: string; key: string }
  | { kind: 'http'; url: string };

const REMOTE = /^(s3|https?):\/\//i;

/** An input read over the network. */
export const isRemote = (input: string): boolean => REMOTE.test(input);

export function locate(input: string): Location {
  if (input === '-') return { kind: 'stdin' };
  if (/^s3:\/\//i.test(input)) {
    const rest = input.slice(5);
    const slash = rest.indexOf('/');
    return slash === -1 ? { kind: 's3', bucket: rest, key: '' } : { kind: 's3', bucket: rest.slice(0, slash), key: rest.slice(slash + 1) };
  }
  if (/^https?:\/\//i.test(input)) return { kind: 'http', url: input };
  return { kind: 'file', path: input };
}

/** The characters that make an s3:// key a glob. */
const GLOB = /[*?[{]/;

/** What an s3:// key names: one object, every object under a prefix, or the objects a glob matches under its fixed start. */
export function s3Pattern(key: string): { kind: 'object' } | { kind: 'prefix' } | { kind: 'glob'; prefix: string } {
  const glob = GLOB.exec(key);
  if (glob !== null) return { kind: 'glob', prefix: key.slice(0, key.lastIndexOf('/', glob.index) + 1) };
  return key === '' || key.endsWith('/') ? { kind: 'prefix' } : { kind: 'object' };
}

/**
 * The query parameters that sign a URL rather than name what it points at, each set by the one
 * that marks it: S3's presigned URLs (X-Amz-*, with the client's x-id), GCS's (X-Goog-*), the older
 * S3, GCS and CloudFront signatures (Signature), and Azure's SAS tokens (sig).
 */
const SIGNING: ReadonlyArray<[mark: RegExp, names: RegExp]> = [
  [/^x-amz-signature$/i, /^(x-amz-.*|x-id)$/i],
  [/^x-goog-signature$/i, /^x-goog-.*$/i],
  [/^signature$/i, /^(signature|expires|awsaccesskeyid|googleaccessid|key-pair-id|policy)$/i],
  [/^sig$/i, /^(sig|sv|ss|srt|sp|se|st|spr|sr|si|sip|sdd|ses|skoid|sktid|skt|ske|sks|skv|saoid|suoid|scid)$/i],
];

/**
 * An http(s):// URL without the parameters that sign it: what a journal, a summary and a message
 * name the object by. A URL signed anew (the old signature expired) names the same object, and a
 * signature, which grants reading it, is never written or shown.
 */
export function withoutSignature(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const names = [...parsed.searchParams.keys()];
  const unsigned = SIGNING.filter(([mark]) => names.some((name) => mark.test(name))).map(([, signing]) => signing);
  if (unsigned.length === 0) return url;
  for (const name of names) if (unsigned.some((signing) => signing.test(name))) parsed.searchParams.delete(name);
  return parsed.toString();
}

/** The name part of an input (for its format and the files named after it): a URL's path, without its query. */
export function nameOf(input: string): string {
  const where = locate(input);
  if (where.kind === 'http') {
    try {
      return decodeURIComponent(new URL(where.url).pathname);
    } catch {
      return where.url;
    }
  }
  if (where.kind === 's3') return `${where.bucket}/${where.key}`;
  return input;
}

/**
 * The name of the rejects file and journal of a run whose first input is remote, kept in the
 * current folder: the last part of its key or path that is no glob (`s3://b/exports/users/*.gz` ->
 * `users`), or the bucket's name.
 */
export function localName(input: string): string {
  const parts = nameOf(input).split('/').filter((part) => part !== '' && !GLOB.test(part));
  return parts.at(-1) ?? 'input';
}

/**
 * A file named after an input, ending in `suffix`: beside a local file, after its whole name
 * (`users.csv` -> `users.csv<suffix>`), or without its extension (`users<suffix>`, as earlier
 * versions named the rejects file and the journal) when `extension` is false; for a remote input,
 * after its localName in the current folder.
 */
export function nameBeside(input: string, suffix: string, extension = true): string {
  const remote = isRemote(input);
  const name = remote ? localName(input) : basename(input);
  const stem = extension ? name : name.replace(/\.gz$/i, '').replace(/\.[^.]+$/, '');
  return join(remote ? '.' : dirname(input), `${stem}${suffix}`);
}
