// A scriptable /users/track stand-in on a loopback port: answers 201 (with counts or minor
// errors), 4xx/5xx, 429 with rate-limit headers, a body of its own, or a 201 whose body trickles
// in, or drops the connection after reading the body.
// It records every request (body, headers, arrival and answer times) so tests can check that
// nothing was lost or doubled and that no one-second window held more starts than allowed.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ArrayName, MinorError, TrackRequest } from '../../src/model/types.js';

export type FaultAction = { delayMs?: number; headers?: Record<string, string> } & (
  | { kind: 'ok' }
  | { kind: 'minor'; errors: MinorError[] }
  /** 400 for a request whose every item was refused: the errors are minor entries (decisions.md "Wire format"). */
  | { kind: 'refuse-all'; errors: MinorError[] }
  | { kind: 'status'; status: number; message?: string }
  | { kind: 'rate-limit'; retryAfter?: number; remaining?: number; reset?: number }
  /** Reads the body, then destroys the socket. `applied` (default true) says whether it counts as applied. */
  | { kind: 'destroy'; applied?: boolean }
  /** Never answers (until the server closes). */
  | { kind: 'hang' }
  /** Answers `status` with this body as it is (a web front end's page, a body cut short); `applied` (default false). */
  | { kind: 'raw'; status: number; body: string; contentType?: string; applied?: boolean }
  /** Applies the request and answers 201 at once, then a byte of its body every 50 ms, never ending it. */
  | { kind: 'trickle' }
);

export interface ReceivedRequest {
  /** 0-based arrival order. */
  index: number;
  /** Epoch ms (fractional) when the request's headers arrived. */
  at: number;
  /** Epoch ms when the answer was finished (or the socket destroyed); undefined while open. */
  doneAt?: number;
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  raw: string;
  body: TrackRequest | undefined;
  action: FaultAction['kind'];
  /** The server treats the request's items (minus minor errors) as applied. */
  applied: boolean;
  /** Indexes per array named by minor errors (not applied). */
  errored: Record<ArrayName, Set<number>>;
}

export type Script = (request: ReceivedRequest) => FaultAction | undefined;

export interface FaultServer {
  /** Base URL: post to `${url}/users/track`. */
  readonly url: string;
  readonly received: ReceivedRequest[];
  /** Chooses the answer to each request from now on; undefined answers plain 201. */
  script(fn: Script): void;
  /** Headers added to every answer (rate-limit headers, for example). */
  everyAnswer(fn: ((request: ReceivedRequest) => Record<string, string>) | undefined): void;
  /** Forgets the requests received so far (after a warm-up, say); indexes start again at 0. */
  forget(): void;
  /** Items of every applied request, minus the ones its minor errors named. */
  appliedItems(): Array<{ kind: ArrayName; item: Record<string, unknown>; request: number }>;
  close(): Promise<void>;
}

const now = (): number => performance.timeOrigin + performance.now();

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export async function startFaultServer(initial?: Script): Promise<FaultServer> {
  const received: ReceivedRequest[] = [];
  let script: Script = initial ?? (() => undefined);
  let extraHeaders: ((request: ReceivedRequest) => Record<string, string>) | undefined;

  const server = createServer((req, res) => {
    const record: ReceivedRequest = {
      index: received.length,
      at: now(),
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      raw: '',
      body: undefined,
      action: 'ok',
      applied: false,
      errored: { attributes: new Set(), events: new Set(), purchases: new Set() },
    };
    received.push(record);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      record.raw = Buffer.concat(chunks).toString('utf8');
      try {
        record.body = JSON.parse(record.raw) as TrackRequest;
      } catch {
        record.body = undefined;
      }
      const action: FaultAction = script(record) ?? { kind: 'ok' };
      record.action = action.kind;
      const answer = (): void => respond(req, res, record, action);
      if (action.delayMs !== undefined && action.delayMs > 0) setTimeout(answer, action.delayMs);
      else answer();
    });
  });

  function respond(req: IncomingMessage, res: ServerResponse, record: ReceivedRequest, action: FaultAction): void {
    const headers = { ...(extraHeaders?.(record) ?? {}), ...(action.headers ?? {}) };
    const finish = (): void => {
      record.doneAt = now();
    };
    res.on('finish', finish);
    res.on('close', finish);
    const body = record.body ?? {};
    const counts = (errored: Record<ArrayName, Set<number>>): Record<string, number> => {
      const out: Record<string, number> = {};
      for (const name of ['attributes', 'events', 'purchases'] as const) {
        const items = body[name];
        if (Array.isArray(items)) out[`${name}_processed`] = items.length - errored[name].size;
      }
      return out;
    };
    switch (action.kind) {
      case 'ok':
        record.applied = true;
        json(res, 201, { message: 'success', ...counts(record.errored) }, headers);
        return;
      case 'minor':
        for (const e of action.errors) record.errored[e.input_array].add(e.index);
        record.applied = true;
        json(res, 201, { message: 'success', ...counts(record.errored), errors: action.errors }, headers);
        return;
      case 'refuse-all': {
        const zero = Object.fromEntries(Object.keys(counts(record.errored)).map((key) => [key, 0]));
        const message = "Valid data must be provided in the 'attributes', 'events', or 'purchases' fields.";
        json(res, 400, { message, ...zero, errors: action.errors }, headers);
        return;
      }
      case 'status': {
        const message = action.message ?? `injected ${action.status}`;
        json(res, action.status, { message, errors: [message] }, headers);
        return;
      }
      case 'rate-limit': {
        const retry = action.retryAfter ?? 1;
        const rl: Record<string, string> = {
          'x-ratelimit-limit': '10',
          'x-ratelimit-remaining': String(action.remaining ?? 0),
          'x-ratelimit-reset': String(action.reset ?? Math.ceil(Date.now() / 1000) + retry),
          'retry-after': String(retry),
        };
        json(res, 429, { message: 'rate limit exceeded', errors: ['rate limit exceeded'] }, { ...rl, ...headers });
        return;
      }
      case 'destroy':
        record.applied = action.applied ?? true;
        record.doneAt = now();
        req.socket.destroy();
        return;
      case 'hang':
        return;
      case 'raw':
        record.applied = action.applied ?? false;
        res.writeHead(action.status, { ...(action.contentType === undefined ? {} : { 'content-type': action.contentType }), ...headers });
        res.end(action.body);
        return;
      case 'trickle': {
        record.applied = true;
        res.writeHead(201, { 'content-type': 'application/json', ...headers });
        res.write('{"message":');
        const drip = setInterval(() => res.write(' '), 50);
        res.on('close', () => clearInterval(drip));
        return;
      }
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    received,
    script(fn) {
      script = fn;
    },
    everyAnswer(fn) {
      extraHeaders = fn;
    },
    forget() {
      received.length = 0;
    },
    appliedItems() {
      const out: Array<{ kind: ArrayName; item: Record<string, unknown>; request: number }> = [];
      for (const r of received) {
        if (!r.applied || r.body === undefined) continue;
        for (const kind of ['attributes', 'events', 'purchases'] as const) {
          (r.body[kind] ?? []).forEach((item, i) => {
            if (!r.errored[kind].has(i)) out.push({ kind, item: item as Record<string, unknown>, request: r.index });
          });
        }
      }
      return out;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

/**
 * The most request arrivals in any window of `windowMs` (from each arrival, half-open). Times a
 * window apart up to float rounding (1e-6 ms) count as a window apart.
 */
export function maxInWindow(times: number[], windowMs = 1000): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i += 1) {
    while (sorted[i] - sorted[j] >= windowMs - 1e-6) j += 1;
    best = Math.max(best, i - j + 1);
  }
  return best;
}
