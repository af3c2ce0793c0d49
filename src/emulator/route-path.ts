// The route a request URL names, as the server routes it: shared by the server and the request log's path filter.

/** The path of a request URL without its query string, repeated slashes and a trailing slash. */
export function routePath(url: string): string {
  // nearly every URL is a plain path already
  if (url.length > 1 && url.charCodeAt(url.length - 1) !== 47 /* / */ && !url.includes('?') && !url.includes('//')) return url;
  // a base URL given with a trailing slash yields `//users/track`: treat it as the same route
  return url.split('?')[0].replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1');
}
