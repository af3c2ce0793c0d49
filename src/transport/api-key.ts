// An API key as the delta state and the resume journal keep it: its fingerprint, never the key (a
// run under another key may be another workspace's, which shares the URL); and whether a key can be
// sent at all, said before a state or a journal is compared with it.
import { createHash } from 'node:crypto';
import { UsageError } from '../errors.js';

/** What is kept of an API key: `sha256:` and the first 16 hex digits of its SHA-256. */
export function keyFingerprint(key: string): string {
  return `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
}

/** A key that cannot be sent is a usage error, said without echoing the key. */
export function checkApiKey(apiKey: string): void {
  if (apiKey.length === 0) throw new UsageError('an API key is required (--api-key or TRACK_API_KEY)');
  // undici would refuse such a header with a message of its own
  if (/[^\x20-\x7e]/.test(apiKey)) throw new UsageError('the API key holds characters that cannot be sent in a header');
}
