// Posts request bodies to {base_url}/users/track through one keep-alive undici Pool, and tells
// apart "no answer, and the request never left" from "no answer after it was sent" (spec 4, 5).
import { setFlagsFromString } from 'node:v8';
import { Pool, type Dispatcher } from 'undici';
import { checkApiKey } from './api-key.js';
import { DEFAULT_REQUEST_TIMEOUT_S } from './defaults.js';
import { resolveEndpoint } from './endpoint.js';
import type { HeaderMap } from './rate-limit-headers.js';

export { resolveEndpoint } from './endpoint.js';

export interface TrackClientOptions {
  /** The base URL ({base_url}); a URL that already ends in /users/track is taken as it is. */
  url: string;
  apiKey: string;
  /** Keep-alive connections in the pool; match the number of requests in flight. */
  connections?: number;
  /** Longest a request may take, from its dispatch to the end of its answer (--request-timeout). */
  timeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * While the client is open, V8 optimises no WebAssembly, undici's HTTP parser included (see
   * holdBaselineWasm): it saves the run 30 MB of memory. The setting is the process's, so only a
   * process of track's own asks for it, and a run that decodes with WebAssembly (Parquet) does not.
   */
  baselineWasm?: boolean;
}

export type PostResult =
  /** `cutOff`: the connection broke after the status and headers, and the body is what came of it. */
  | { kind: 'response'; status: number; headers: HeaderMap; body: string; cutOff?: boolean }
  | {
      kind: 'failed';
      /** The request was handed to the connection: the server may have applied it. */
      sent: boolean;
      /** The caller's signal ended it. */
      aborted: boolean;
      /** What went wrong, for a person; never holds the API key. */
      reason: string;
      /**
       * `timeout`: no whole answer within the time limit; `no-tls`: the server answered the TLS
       * handshake with something else (plain HTTP, most likely).
       */
      cause?: 'timeout' | 'no-tls';
    };

export interface TrackClient {
  /** The URL posted to, without credentials, for messages. */
  readonly endpoint: string;
  /**
   * Posts one JSON body; never rejects: every failure is a PostResult. onSent is called when the
   * request has been written to a connection (possibly after connecting).
   */
  post(json: string | Uint8Array, signal?: AbortSignal, onSent?: () => void): Promise<PostResult>;
  /** Waits for requests in flight, then closes the connections. */
  close(): Promise<void>;
  /** Closes the connections at once, failing requests in flight. */
  destroy(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = DEFAULT_REQUEST_TIMEOUT_S * 1000;
const MAX_RESPONSE_BYTES = 1 << 20;

/**
 * Clients open with baselineWasm. V8 optimises the parser's one large function (34 KB of
 * WebAssembly, a state machine) after a few dozen answers, and that compilation takes about 30 MB
 * of memory for a quarter of a second: the peak RSS of an upload, 10 to 30 MB above the rest of the
 * run. The baseline code parses the endpoint's short answers as fast as the run needs (a 1M-row
 * upload takes the same CPU), so while such a client is open V8 optimises no WebAssembly
 * (`--liftoff-only`); once the last one is closed it may again (the flags that one implies are set
 * back to V8's defaults). A function first run while it is held keeps its baseline code for the
 * life of the process (the parser among them), which is why a library call never asks for this.
 * A process started with flags of its own for WebAssembly is left as it is.
 */
let baselineClients = 0;
const OWN_WASM_FLAGS = /^--(no-)?(liftoff|wasm-tier-up|wasm-dynamic-tiering)/;
// V8 reads `_` in a flag's name as `-` (--no_liftoff)
const ownWasmFlags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((flag) => OWN_WASM_FLAGS.test(flag.replaceAll('_', '-')));

function holdBaselineWasm(): () => void {
  if (ownWasmFlags) return () => {};
  if (baselineClients === 0) setFlagsFromString('--liftoff-only');
  baselineClients += 1;
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    baselineClients -= 1;
    if (baselineClients === 0) setFlagsFromString('--no-liftoff-only --wasm-tier-up --wasm-dynamic-tiering');
  };
}

export function createTrackClient(options: TrackClientOptions): TrackClient {
  checkApiKey(options.apiKey);
  const endpoint = resolveEndpoint(options.url);
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // the time limit is one deadline per request, kept here (dispatchPost): undici's own timeouts
  // measure quiet spells, which a server sending a byte now and then never ends
  const pool = new Pool(endpoint.origin, {
    connections: options.connections ?? 16,
    pipelining: 1,
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: { timeout: Math.min(options.connectTimeoutMs ?? 10_000, timeout) },
  });
  const path = `${endpoint.pathname}${endpoint.search}`;
  const headers = {
    'content-type': 'application/json',
    authorization: `Bearer ${options.apiKey}`,
  };
  const redact = (text: string): string =>
    options.apiKey.length >= 4 && text.includes(options.apiKey) ? text.split(options.apiKey).join('[redacted]') : text;
  const release = options.baselineWasm === true ? holdBaselineWasm() : () => {};

  return {
    endpoint: `${endpoint.origin}${endpoint.pathname}`,
    post(json, signal, onSent) {
      const body = typeof json === 'string' ? Buffer.from(json) : json;
      return dispatchPost(pool, { path, method: 'POST', headers, body }, { redact, signal, onSent, timeoutMs: timeout });
    },
    close: () => pool.close().finally(release),
    destroy: () => pool.destroy().finally(release),
  };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const cause = (error as { cause?: unknown }).cause;
  const causeCode = cause instanceof Error ? (cause as { code?: unknown }).code : undefined;
  const parts = [typeof code === 'string' ? code : undefined, error.message];
  if (typeof causeCode === 'string' && causeCode !== code) parts.push(`(${causeCode})`);
  return parts.filter((p) => p !== undefined && p !== '').join(' ');
}

/** Error codes and texts of a TLS handshake answered by a server that does not speak TLS. */
const NO_TLS_CODES = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG', 'ERR_SSL_RECORD_LAYER_FAILURE']);
const NO_TLS_TEXT = /wrong version number|packet length too long|record layer failure/i;

function isNoTls(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return (typeof code === 'string' && NO_TLS_CODES.has(code)) || NO_TLS_TEXT.test(error.message);
}

const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(3))} s`;

function readHeaders(raw: Buffer[] | string[] | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === null) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toString().toLowerCase();
    if (out[name] === undefined) out[name] = raw[i + 1].toString();
  }
  return out;
}

/**
 * One request through the pool with a handler of our own: undici calls onRequestSent once the
 * request is written to the socket, which is what separates a safe retry from an unknown outcome.
 */
function dispatchPost(
  pool: Pool,
  request: Dispatcher.DispatchOptions,
  options: { redact: (text: string) => string; signal?: AbortSignal; onSent?: () => void; timeoutMs: number },
): Promise<PostResult> {
  const { redact, signal, onSent, timeoutMs } = options;
  return new Promise((resolve) => {
    let sent = false;
    let aborted = false;
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    let status = 0;
    let headers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    let size = 0;
    let abortRequest: ((error: Error) => void) | undefined;
    let settled = false;

    const onAbort = (): void => {
      aborted = true;
      abortRequest?.(new Error('request aborted'));
    };
    const finish = (result: PostResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(result);
    };
    if (signal?.aborted) {
      finish({ kind: 'failed', sent: false, aborted: true, reason: 'request aborted' });
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    const timeoutError = (): Error => new Error(`no answer within ${seconds(timeoutMs)}, the --request-timeout`);
    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        timedOut = true;
        abortRequest?.(timeoutError());
      }, timeoutMs);
    }

    const handler = {
      onConnect(abort: (error?: Error) => void): void {
        sent = false;
        abortRequest = abort;
        if (aborted) abort(new Error('request aborted'));
        else if (timedOut) abort(timeoutError());
      },
      onRequestSent(): void {
        if (!sent) onSent?.();
        sent = true;
      },
      onHeaders(statusCode: number, raw: Buffer[] | string[] | null): boolean {
        if (statusCode < 200) return true; // 1xx: the answer is still to come
        status = statusCode;
        headers = readHeaders(raw);
        return true;
      },
      onData(chunk: Buffer): boolean {
        if (size < MAX_RESPONSE_BYTES) {
          chunks.push(chunk);
          size += chunk.length;
        }
        return true;
      },
      onComplete(): void {
        finish({ kind: 'response', status, headers, body: redact(Buffer.concat(chunks).toString('utf8')) });
      },
      onError(error: Error): void {
        // the deadline covers the whole answer: a body still coming when it passes leaves the
        // outcome unknown, whatever the status said (a 201's counts and errors are in its body)
        if (timedOut && !aborted) {
          finish({ kind: 'failed', sent, aborted, reason: timeoutError().message, cause: 'timeout' });
          return;
        }
        if (status !== 0 && !aborted) {
          // the connection broke after the status and headers: the answer is what came of its body
          finish({ kind: 'response', status, headers, body: redact(Buffer.concat(chunks).toString('utf8')), cutOff: true });
          return;
        }
        const cause = !sent && isNoTls(error) ? 'no-tls' : undefined;
        finish({ kind: 'failed', sent, aborted, reason: redact(describe(error)), ...(cause === undefined ? {} : { cause }) });
      },
    };
    pool.dispatch(request, handler as Dispatcher.DispatchHandler);
  });
}
