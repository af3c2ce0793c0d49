// handle(request) -> response: one fixed sequence per request (decisions.md "Order of checks"):
// route, auth, rate limit, injected faults, content type, size, JSON, validation, apply, respond,
// then record it in the request log. /health and the emulator's own /_track/* stand apart.
import { isUtf8 } from 'node:buffer';
import {
  ALL_REFUSED_MESSAGE,
  ARRAY_NAMES,
  describeLimits,
  fatalBody,
  flagsToAllow,
  validateRequest,
  type ArrayName,
  type BatchLimits,
  type LimitProfileName,
  type MinorError,
} from '../model/index.js';
import { InputError } from '../errors.js';
import { applyRequest } from './apply.js';
import { exportChunks, parseExportQuery } from './export.js';
import { storeFailure } from './store.js';
import { FAULT_HEADER, chooseFault, latencyMs, type Fault, type FaultConfig } from './faults.js';
import { createFixtureRoutes, isFixturePath, METRICS_PATH } from './fixture-routes.js';
import { EmulatorMetrics } from './metrics.js';
import type { StoredSeed } from './options.js';
import { RateLimiter, type RateLimitConfig, type RateVerdict } from './rate-limit.js';
import { RequestLog } from './request-log.js';
import { answered, RunTally } from './run-tally.js';
import type { Store } from './store.js';

/** Minor errors in the order of the items they name (the arrays in ARRAY_NAMES' order); one item's keep theirs. */
const inBodyOrder = (a: MinorError, b: MinorError): number => ARRAY_NAMES.indexOf(a.input_array) - ARRAY_NAMES.indexOf(b.input_array) || a.index - b.index;

export interface EmulatorRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  /** The query string, without its `?`. */
  query?: string;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  body: Buffer;
  /** The body's size as received, when not `body.length` (a body over the limit is not kept). */
  bodyBytes?: number;
  /** The body was longer than the limit and was not read whole. */
  bodyTooLarge?: boolean;
}

export interface EmulatorResponse {
  status: number;
  headers: Record<string, string>;
  body?: unknown;
  /** A body that is not JSON (the web view), sent as it is with the content-type in `headers`. */
  text?: string;
  /** Such a body, made when it is sent (the metrics). */
  render?: () => Promise<string>;
  /** The body as JSON text in pieces, written one at a time with other requests let in between. */
  chunks?: Iterable<string | Buffer>;
  /** Close the connection without answering; `afterCommit` tells whether the request was applied. */
  drop?: 'before-apply' | 'after-commit';
  /** Wait this long before answering (injected latency). */
  delayMs?: number;
}

export interface HandlerConfig {
  store: Store;
  /** API key -> the permissions it holds. */
  keys: ReadonlyMap<string, ReadonlySet<string>>;
  blocklist: ReadonlySet<string>;
  /** The limit profile `limits` comes from, named in the log when a request is over them (mau when not given). */
  limitProfile?: LimitProfileName;
  limits: BatchLimits;
  rateLimit: RateLimitConfig;
  faults: FaultConfig;
  maxBodyBytes: number;
  arrayCap: number;
  /** One line per notable event (faults, 5xx); never given an API key. */
  log?: (line: string) => void;
  /** Requests the request log keeps (default 10,000; 0 keeps none). */
  requestLogSize?: number;
  /** The emulator listens on a non-loopback address: /_track/* needs a key. */
  fixtureKeyRequired?: boolean;
  /** Requests applied at the start and after each reset. */
  seed?: readonly StoredSeed[];
}

export interface FaultCounts {
  status: number;
  drop: number;
  dropAfterCommit: number;
  latency: number;
}

type RouteResult = { status: number; body?: unknown; chunks?: Iterable<string | Buffer> };

interface Route {
  method: string;
  permission: string;
  run: (body: unknown) => RouteResult;
}

/** Limiter key for callers with no valid key: only ever peeked at, never counted. */
const UNKNOWN_CALLER = '\u0000unknown';

function fatal(status: number, message: string, headers: Record<string, string> = {}): EmulatorResponse {
  return { status, headers, body: fatalBody(message) };
}

function rateHeaders(v: RateVerdict): Record<string, string> {
  return {
    'x-ratelimit-limit': String(v.limit),
    'x-ratelimit-remaining': String(v.remaining),
    'x-ratelimit-reset': String(v.reset),
  };
}

function bearerKey(header: string | undefined): string | undefined {
  const m = header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header);
  return m === null ? undefined : m[1];
}

function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const type = value.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** Requests the request log records (and /metrics counts): not /health, /metrics or /_track/*. */
export const isRecorded = (path: string): boolean => path !== '/health' && path !== METRICS_PATH && !isFixturePath(path);

export interface Handler {
  handle(request: EmulatorRequest): EmulatorResponse;
  faults: FaultCounts;
  requestLog: RequestLog;
  /** Every request the log records, counted since the start (GET /metrics). */
  counts: RunTally;
  /** The same since the start or the last reset (the web view's run page). */
  run: RunTally;
  metrics: EmulatorMetrics;
  /** Applies the seed requests; throws an InputError naming the file and line of an item refused. */
  applySeed(): void;
  /** Empties profiles, events, purchases and tokens and the request log, then applies the seed again; returns the profiles after it. */
  reset(): number;
}

/** The rows of a seed request, as `file lines 2-51` (each file once, runs of lines joined). */
function describeRows(seed: StoredSeed): string {
  const byFile = new Map<string, number[]>();
  for (const name of ARRAY_NAMES) for (const { file, line } of seed.origins[name]) byFile.set(file, [...(byFile.get(file) ?? []), line]);
  return [...byFile].map(([file, lines]) => {
    const sorted = [...new Set(lines)].sort((a, b) => a - b);
    const runs: string[] = [];
    for (let i = 0; i < sorted.length; i += 1) {
      let j = i;
      while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j += 1;
      runs.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
      i = j;
    }
    return `${file} line${sorted.length === 1 ? '' : 's'} ${runs.join(', ')}`;
  }).join('; ');
}

export function createHandler(config: HandlerConfig): Handler {
  const limiter = new RateLimiter(config.rateLimit);
  const faults: FaultCounts = { status: 0, drop: 0, dropAfterCommit: 0, latency: 0 };
  const log = config.log ?? (() => {});

  /** The operator's hint for a request over the batch limits: what came, the limit, the flag that allows it. */
  const logOverLimit = (counts: Record<ArrayName, number>): void => {
    const profile = config.limitProfile ?? 'mau';
    const total = counts.attributes + counts.events + counts.purchases;
    const flags = flagsToAllow(counts, profile, config.limits);
    log(
      `refused a request of ${total} items (${ARRAY_NAMES.map((n) => `${n} ${counts[n]}`).join(', ')}): ` +
        `over the batch limits ${describeLimits(profile, config.limits)}` +
        (flags.length === 0 ? '' : `; start the emulator with ${flags.join(' or ')} to allow it`),
    );
  };

  const track = (body: unknown): RouteResult => {
    const verdict = validateRequest(body, { limits: config.limits, blocklist: config.blocklist });
    if (!verdict.ok) {
      if (verdict.overLimit !== undefined) logOverLimit(verdict.overLimit);
      return { status: 400, body: fatalBody(verdict.message) };
    }
    const request = body as Partial<Record<ArrayName, unknown[]>>;
    const total = verdict.counts.attributes + verdict.counts.events + verdict.counts.purchases;
    // decisions.md "Wire format": every item refused, none left to apply
    const allRefused = (errors: MinorError[]): RouteResult => {
      const out: Record<string, unknown> = { message: ALL_REFUSED_MESSAGE };
      for (const name of ARRAY_NAMES) if (request[name] !== undefined) out[`${name}_processed`] = 0;
      out.errors = errors;
      return { status: 400, body: out };
    };
    if (total > 0 && verdict.errors.length === total) return allRefused(verdict.errors);
    const rejected = new Set(verdict.errors.map((e) => `${e.input_array}:${e.index}`));
    const { processed, refused } = config.store.transaction(() =>
      applyRequest(config.store, request, rejected, { arrayCap: config.arrayCap, log }),
    );
    // items refused by what the store holds (an update past 100 KB) join the others, in the body's order
    const errors = refused.length === 0 ? verdict.errors : [...verdict.errors, ...refused].sort(inBodyOrder);
    if (refused.length > 0 && rejected.size + refused.length === total) return allRefused(errors);
    const out: Record<string, unknown> = { message: 'success' };
    for (const [name, count] of Object.entries(processed)) out[`${name}_processed`] = count;
    if (errors.length > 0) out.errors = errors;
    return { status: 201, body: out };
  };

  const exportIds = (body: unknown): RouteResult => {
    const parsed = parseExportQuery(body);
    if (!parsed.ok) return { status: 400, body: fatalBody(parsed.message) };
    return { status: 201, chunks: exportChunks(config.store, parsed.query) };
  };

  const routes: Record<string, Route> = {
    '/users/track': { method: 'POST', permission: 'users.track', run: track },
    '/users/export/ids': { method: 'POST', permission: 'users.export.ids', run: exportIds },
  };

  function injected(fault: Exclude<Fault, { kind: 'drop-after-commit' }>, limitHeaders: Record<string, string>, rate: RateVerdict): EmulatorResponse {
    if (fault.kind === 'drop') {
      faults.drop += 1;
      log('fault: connection dropped before applying');
      return { status: 0, headers: {}, drop: 'before-apply' };
    }
    faults.status += 1;
    log(`fault: answered ${fault.status}`);
    if (fault.status === 429) {
      return fatal(429, 'rate limit exceeded (injected)', { ...limitHeaders, 'retry-after': String(rate.retryAfter) });
    }
    return fatal(fault.status, `injected fault: ${fault.status}`, limitHeaders);
  }

  const requestLog = new RequestLog(config.requestLogSize);

  /** A seed request is applied as /users/track applies a request, with no key or rate limit; any item refused stops it. */
  function applySeed(): void {
    for (const seed of config.seed ?? []) {
      // kept as JSON bytes for the emulator's life, parsed only while it is applied
      const body = JSON.parse(seed.json.toString('utf8')) as Partial<Record<ArrayName, unknown[]>>;
      const result = track(body);
      const answer = result.body as { message: string; errors?: { type: string; input_array: ArrayName; index: number }[] };
      // a fatal answer's errors are its message; minor ones name an item
      const error = typeof answer.errors?.[0] === 'object' ? answer.errors[0] : undefined;
      if (result.status === 201 && error === undefined) continue;
      const origin = error !== undefined ? seed.origins[error.input_array][error.index] : blockedItemOrigin(body, seed);
      if (origin !== undefined) throw new InputError(`seed refused: ${error?.type ?? answer.message}`, origin.file, origin.line);
      // a fatal answer about the request as a whole: name all of its rows
      throw new InputError(`seed refused: ${answer.message} (a request of the seed rows ${describeRows(seed)})`);
    }
  }

  /** The row of the first item naming a blocklisted external_id, if that is what the answer was about. */
  function blockedItemOrigin(body: Partial<Record<ArrayName, unknown[]>>, seed: StoredSeed): { file: string; line: number } | undefined {
    for (const name of ARRAY_NAMES) {
      const at = (body[name] ?? []).findIndex((item) => {
        const id = (item as { external_id?: unknown } | null)?.external_id;
        return typeof id === 'string' && config.blocklist.has(id);
      });
      if (at !== -1) return seed.origins[name][at];
    }
    return undefined;
  }

  function reset(): number {
    return config.store.transaction(() => {
      config.store.reset();
      applySeed();
      requestLog.clear();
      run.clear();
      return config.store.profileCount();
    });
  }

  const counts = new RunTally();
  const run = new RunTally();
  const metrics = new EmulatorMetrics({ tally: counts, faults, store: config.store });
  const fixture = createFixtureRoutes({
    store: config.store,
    requestLog,
    keys: config.keys,
    keyRequired: config.fixtureKeyRequired === true,
    reset,
    run,
    metrics,
    rateLimit: config.rateLimit,
  });

  function handle(request: EmulatorRequest): EmulatorResponse {
    if (request.path === '/health') {
      return request.method === 'GET' || request.method === 'HEAD'
        ? { status: 200, headers: {}, body: { status: 'ok' } }
        : fatal(404, `no route for ${request.method} ${request.path}`);
    }
    if (!isRecorded(request.path)) return fixture(request);
    const parsed: { body?: unknown } = {};
    const response = answer(request, parsed);
    // the log keeps whom the request names from the whole parsed body, before it cuts the text
    requestLog.record(request, response, parsed.body);
    const counted = answered(request.path, response);
    counts.record(counted);
    run.record(counted);
    return response;
  }

  /** The answer to one request; `parsed.body` is set once its body has been parsed as JSON. */
  function answer(request: EmulatorRequest, parsed: { body?: unknown }): EmulatorResponse {
    const key = bearerKey(request.headers.authorization);
    const permissions = key === undefined ? undefined : config.keys.get(key);
    // every /users/* answer describes the caller's limits; an unknown caller sees a fresh window
    // limits are per key and endpoint, as the real service sets one for each endpoint
    const limiterKey = `${permissions === undefined ? UNKNOWN_CALLER : key}\u0000${request.path}`;
    const peekHeaders = (): Record<string, string> => rateHeaders(limiter.peek(limiterKey));
    const route = routes[request.path];
    if (route === undefined || route.method !== request.method) {
      return fatal(404, `no route for ${request.method} ${request.path}`, request.path.startsWith('/users/') ? peekHeaders() : {});
    }
    if (permissions === undefined) {
      const message = key === undefined ? 'missing or malformed Authorization header; expected "Bearer <API key>"' : 'invalid API key';
      return fatal(401, message, peekHeaders());
    }
    if (!permissions.has(route.permission)) return fatal(403, `API key lacks the permission ${route.permission}`, peekHeaders());

    const rate = limiter.take(limiterKey);
    const limitHeaders = rateHeaders(rate);
    if (!rate.allowed) {
      return fatal(429, 'rate limit exceeded; retry after the reset time', { ...limitHeaders, 'retry-after': String(rate.retryAfter) });
    }

    const fault = chooseFault(config.faults, request.headers[FAULT_HEADER]);
    const delayMs = latencyMs(config.faults);
    if (delayMs > 0) faults.latency += 1;
    const respond = (r: EmulatorResponse): EmulatorResponse => ({ ...r, headers: { ...limitHeaders, ...r.headers }, delayMs });
    if (fault !== undefined && fault.kind !== 'drop-after-commit') return respond(injected(fault, limitHeaders, rate));

    if (!isJsonContentType(request.headers['content-type'])) {
      return respond(fatal(415, `Content-Type must be application/json, got ${request.headers['content-type'] ?? 'none'}`));
    }
    if (request.bodyTooLarge) return respond(fatal(413, `request body is larger than ${config.maxBodyBytes} bytes`));
    // JSON text is UTF-8 (RFC 8259): a body that is not is refused whole, as no item can be named
    if (!isUtf8(request.body)) return respond(fatal(400, 'request body is not valid JSON: it is not UTF-8 text'));
    let body: unknown;
    try {
      body = JSON.parse(request.body.toString('utf8'));
      parsed.body = body;
    } catch (error) {
      return respond(fatal(400, `request body is not valid JSON: ${(error as Error).message}`));
    }
    let result: RouteResult;
    try {
      result = route.run(body);
    } catch (error) {
      // nothing of it was applied (its writes were one savepoint); the reason is the client's to read too
      const message = `the emulator cannot apply the request: ${storeFailure(error, config.store.path)}`;
      log(`error: ${request.method} ${request.path}: ${message}`);
      return respond(fatal(500, message));
    }
    if (fault?.kind === 'drop-after-commit') {
      faults.dropAfterCommit += 1;
      log('fault: connection dropped after the request was applied');
      return { status: 0, headers: {}, drop: 'after-commit', delayMs };
    }
    return respond({ status: result.status, headers: {}, body: result.body, chunks: result.chunks });
  }

  return { handle, faults, requestLog, counts, run, metrics, applySeed, reset };
}
