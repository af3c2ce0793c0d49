// The emulator's own endpoints under /_track/: the request log, reset, and the web view, for tests
// and for the person at the machine; and GET /metrics. On a loopback address they take no key; on
// any other address they take one of the emulator's keys (Bearer, or a session the login form opens).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { fatalBody } from '../model/index.js';
import type { EmulatorRequest, EmulatorResponse } from './handler.js';
import { METRICS_CONTENT_TYPE, type EmulatorMetrics } from './metrics.js';
import type { RateLimitConfig } from './rate-limit.js';
import { LOG_BYTES, userFilters, type LoggedRequest, type RequestLog } from './request-log.js';
import { limitParam, limitProblem, QUERY_FILTERS, statusProblem } from './request-log-query.js';
import { runPage } from './run-page.js';
import type { RunTally } from './run-tally.js';
import type { Store } from './store.js';
import { loginPage, notFoundPage, renderPage } from './web-view.js';

/** GET /_track/requests's query parameters (request-log-query.ts has the library's names of them). */
const REQUEST_FILTERS = ['limit', ...QUERY_FILTERS];

export const FIXTURE_PREFIX = '/_track';
/** Prometheus scrapes it here, under the same key rule as /_track/*. */
export const METRICS_PATH = '/metrics';
const SESSION_COOKIE = 'track_session';
/** No script, no frames, nothing from another host; forms post to this emulator only. */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

export interface FixtureConfig {
  store: Store;
  requestLog: RequestLog;
  keys: ReadonlyMap<string, unknown>;
  /** The emulator listens on a non-loopback address: /_track/* needs a key. */
  keyRequired: boolean;
  /** Empties the data and the request log, and applies the seed again; returns the profiles after it. */
  reset: () => number;
  /** The answers since the start or the last reset, for the run page. */
  run: RunTally;
  metrics: EmulatorMetrics;
  rateLimit: RateLimitConfig;
}

/** 127.0.0.0/8, ::1 and localhost: only this machine can reach them. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

export const isFixturePath = (path: string): boolean => path === FIXTURE_PREFIX || path.startsWith(`${FIXTURE_PREFIX}/`);

const jsonAnswer = (status: number, body: unknown, headers: Record<string, string> = {}): EmulatorResponse => ({ status, headers, body });
const fatal = (status: number, message: string): EmulatorResponse => jsonAnswer(status, fatalBody(message));
const page = (status: number, html: string, headers: Record<string, string> = {}): EmulatorResponse => ({ status, headers: { ...PAGE_HEADERS, ...headers }, text: html });

function cookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** A browser's request sent from a page of another site (a form posting here): refused, so no site can reset the emulator. */
function crossSite(request: EmulatorRequest): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return true;
  const origin = request.headers.origin;
  if (origin === undefined || origin === 'null') return origin === 'null';
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

/**
 * A keyless emulator answers only to its loopback names: a site that points a name of its own at
 * 127.0.0.1 (DNS rebinding) cannot read the log through a person's browser.
 */
function foreignHost(request: EmulatorRequest): boolean {
  const host = request.headers.host;
  if (host === undefined) return false;
  try {
    return !isLoopbackHost(new URL(`http://${host}`).hostname);
  } catch {
    return true;
  }
}

/**
 * GET /_track/requests's answer, `{"requests":[...],"log":{...}}`, a request at a time: the log holds
 * 128 MiB, and as one text (a body of control characters written six bytes each) it took seconds of
 * the server's time and several times that memory, or was past the longest string there can be.
 */
function* requestsJson(found: Iterable<LoggedRequest>, log: Record<string, number>): Generator<string> {
  yield '{"requests":[';
  let first = true;
  for (const request of found) {
    yield `${first ? '' : ','}${JSON.stringify(request)}`;
    first = false;
  }
  yield `],"log":${JSON.stringify(log)}}`;
}

export function createFixtureRoutes(config: FixtureConfig): (request: EmulatorRequest) => EmulatorResponse {
  const { store, requestLog } = config;
  const sessions = new Set<string>();
  const keyList = [...config.keys.keys()].map((k) => Buffer.from(k));
  const isKey = (key: string | undefined): boolean => {
    if (key === undefined) return false;
    const given = Buffer.from(key);
    return keyList.some((k) => k.length === given.length && timingSafeEqual(k, given));
  };
  const authorized = (request: EmulatorRequest): boolean => {
    if (!config.keyRequired) return true;
    const bearer = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
    const session = cookie(request.headers.cookie, SESSION_COOKIE);
    return isKey(bearer) || (session !== undefined && sessions.has(session));
  };

  const login = (request: EmulatorRequest): EmulatorResponse => {
    const key = new URLSearchParams(request.body.toString('utf8')).get('key') ?? undefined;
    if (!isKey(key)) return page(401, loginPage(true));
    const session = randomBytes(24).toString('base64url');
    sessions.add(session);
    return {
      status: 303,
      headers: { location: `${FIXTURE_PREFIX}/`, 'set-cookie': `${SESSION_COOKIE}=${session}; Path=${FIXTURE_PREFIX}; HttpOnly; SameSite=Strict` },
      text: '',
    };
  };

  const requests = (request: EmulatorRequest, params: URLSearchParams): EmulatorResponse => {
    if (request.method === 'DELETE') return jsonAnswer(200, { message: 'cleared', cleared: requestLog.clear() });
    // a filter misspelt would answer every request, as though it matched them; one given twice, as though the second were not
    const names = [...params.keys()];
    const unknown = names.find((name) => !REQUEST_FILTERS.includes(name));
    if (unknown !== undefined) {
      const hint = unknown === 'externalId' ? ' (the filter is external_id)' : '';
      return fatal(400, `unknown query parameter ${JSON.stringify(unknown)}${hint}; the filters are ${REQUEST_FILTERS.join(', ')}`);
    }
    const twice = names.find((name, i) => names.indexOf(name) !== i);
    if (twice !== undefined) return fatal(400, `${twice}: given more than once; give each filter once`);
    const limit = limitParam(params.get('limit'), 100);
    if (limit === undefined) return fatal(400, limitProblem(params.get('limit')));
    const status = params.get('status') ?? undefined;
    const wrongStatus = statusProblem(status);
    if (wrongStatus !== undefined) return fatal(400, wrongStatus);
    const users = userFilters(params);
    if (typeof users === 'string') return fatal(400, users);
    const found = requestLog.select({ limit, status, path: params.get('path') ?? undefined, ...users });
    // what the log holds in all, as it counts its memory
    const log = { requests: requestLog.length, bytes: requestLog.bytes, max_bytes: LOG_BYTES };
    return { status: 200, headers: {}, chunks: requestsJson(found, log) };
  };

  const routes: Record<string, Partial<Record<string, (request: EmulatorRequest, params: URLSearchParams) => EmulatorResponse>>> = {
    [FIXTURE_PREFIX]: {
      GET: (_request, params) => {
        const html = renderPage(store, requestLog, params);
        return html === undefined ? page(404, notFoundPage(`No profile has the service_id ${params.get('profile')}.`)) : page(200, html);
      },
    },
    [`${FIXTURE_PREFIX}/run`]: { GET: () => page(200, runPage(store, config.run, config.rateLimit)) },
    [`${FIXTURE_PREFIX}/requests`]: { GET: requests, DELETE: requests },
    [METRICS_PATH]: { GET: () => ({ status: 200, headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' }, render: () => config.metrics.text() }) },
    [`${FIXTURE_PREFIX}/reset`]: { POST: () => jsonAnswer(200, { message: 'reset', profiles: config.reset() }) },
  };

  return (request) => {
    const params = new URLSearchParams(request.query ?? '');
    // the server drops a trailing slash; a caller in-process may not have
    const path = request.path.endsWith('/') ? request.path.slice(0, -1) : request.path;
    const isPage = path === FIXTURE_PREFIX || path === `${FIXTURE_PREFIX}/run`;
    if (request.method !== 'GET' && request.method !== 'HEAD' && crossSite(request)) {
      return fatal(403, 'a request from a page of another site is refused');
    }
    if (!config.keyRequired && foreignHost(request)) {
      return fatal(403, `this emulator listens on a loopback address and answers ${FIXTURE_PREFIX}/* only to its loopback names, not to "${request.headers.host}"`);
    }
    if (path === `${FIXTURE_PREFIX}/login`) {
      return request.method === 'POST' ? login(request) : page(200, loginPage(false));
    }
    const route = routes[path];
    const run = route?.[request.method === 'HEAD' ? 'GET' : request.method];
    if (run === undefined) return fatal(404, `no route for ${request.method} ${request.path}`);
    if (!authorized(request)) {
      return isPage
        ? page(401, loginPage(false))
        : fatal(401, `this emulator listens on a network address: ${FIXTURE_PREFIX}/* needs one of its API keys ("Authorization: Bearer <API key>")`);
    }
    return run(request, params);
  };
}
