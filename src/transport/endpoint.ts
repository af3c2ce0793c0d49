// The endpoint a --url names, and the target a journal and the delta state are kept for: no network
// code, so a dry run can name a target too.
import { UsageError } from '../errors.js';

const ENDPOINT_PATH = '/users/track';

/** The /users/track URL for a base URL (one that ends in it already is taken as it is); a UsageError names what is wrong with it. */
export function resolveEndpoint(url: string, flag = '--url'): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`${flag} is not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`${flag} must start with http:// or https://, not ${parsed.protocol}`);
  }
  parsed.username = '';
  parsed.password = '';
  parsed.hash = '';
  const base = parsed.pathname.replace(/\/+$/, '');
  parsed.pathname = base.endsWith(ENDPOINT_PATH) ? base : `${base}${ENDPOINT_PATH}`;
  return parsed;
}

/** The target of a base URL, as journals and the delta state name it: the endpoint's origin and path. */
export function targetOf(url: string, flag = '--url'): string {
  const endpoint = resolveEndpoint(url, flag);
  return `${endpoint.origin}${endpoint.pathname}`;
}
