// The node:http edge of the emulator, and startEmulator(): the one way both the CLI and test
// suites start it.
import { createServer, maxHeaderSize, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { UsageError } from '../errors.js';
import { fatalBody } from '../model/index.js';
import { lockDatabase } from './db-lock.js';
import { groupCommitter } from './group-commit.js';
import { FIXTURE_PREFIX, isLoopbackHost } from './fixture-routes.js';
import { createHandler, isRecorded, type EmulatorRequest, type EmulatorResponse, type FaultCounts } from './handler.js';
import { resolveOptions, type EmulatorOptions, type ResolvedOptions } from './options.js';
import type { LoggedRequest } from './request-log.js';
import { checkedQuery, type RequestsQuery } from './request-log-query.js';
import { routePath } from './route-path.js';
import { Store } from './store.js';

const CLOSE_GRACE_MS = 5000;

export interface Emulator {
  /** Base URL, `http://HOST:PORT`, with the real port. */
  url: string;
  port: number;
  /** A key holding users.track and users.export.ids: the generated one, or the first given. */
  apiKey: string;
  /** Faults injected so far. */
  faults: FaultCounts;
  store: Store;
  /** The web view: `URL/_track/`. */
  webUrl: string;
  /** The emulator listens on a non-loopback address, so /_track/* needs one of its keys. */
  fixtureKeyRequired: boolean;
  /**
   * The request log, newest first, filtered as GET /_track/requests filters it; a filter the log does
   * not have, or a value it cannot match, is a UsageError.
   */
  requests(query?: RequestsQuery): LoggedRequest[];
  /**
   * Empties profiles, events, purchases, tokens and the request log, and loads the seed again (POST
   * /_track/reset); returns the profiles after it. A UsageError once close() was called.
   */
  reset(): number;
  /** Stops accepting, finishes requests in flight, closes the database. */
  close(): Promise<void>;
}

/** The body, unless it is over `max` (then empty, `tooLarge`, and read to its end only to count its `size`). */
function readBody(req: IncomingMessage, max: number): Promise<{ body: Buffer; size: number; tooLarge: boolean }> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = declared > max;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('end', () => resolve({ body: Buffer.concat(chunks), size, tooLarge }));
    req.on('error', reject);
  });
}

/** The query string of a request URL, without its `?`. */
function queryOf(url: string): string | undefined {
  const at = url.indexOf('?');
  return at === -1 ? undefined : url.slice(at + 1);
}

/**
 * Writes a body given in pieces, letting other requests in between (a piece at a time, and while the
 * client has not taken the last one): a large export never holds the server.
 */
async function sendChunks(res: ServerResponse, response: EmulatorResponse, chunks: Iterable<string | Buffer>): Promise<void> {
  res.writeHead(response.status, { ...response.headers, 'content-type': 'application/json; charset=utf-8' });
  for (const chunk of chunks) {
    if (res.destroyed) return;
    const drained = res.write(chunk);
    await new Promise<void>((resolve) => {
      if (drained) setImmediate(resolve);
      else {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      }
    });
  }
  res.end();
}

function send(res: ServerResponse, response: EmulatorResponse): void | Promise<void> {
  if (response.drop !== undefined) {
    res.socket?.destroy();
    return;
  }
  if (response.chunks !== undefined) return sendChunks(res, response, response.chunks);
  if (response.render !== undefined) return sendRendered(res, response, response.render);
  if (response.text !== undefined) {
    res.writeHead(response.status, { ...response.headers, 'content-length': Buffer.byteLength(response.text) });
    res.end(response.text);
    return;
  }
  const text = response.body === undefined ? '' : JSON.stringify(response.body);
  res.writeHead(response.status, {
    ...response.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** A body made as it is sent (the metrics); a failure to make it is a 500. */
async function sendRendered(res: ServerResponse, response: EmulatorResponse, render: () => Promise<string>): Promise<void> {
  let text: string;
  try {
    text = await render();
  } catch (error) {
    await send(res, { status: 500, headers: {}, body: fatalBody(`cannot make the answer: ${(error as Error).message}`) });
    return;
  }
  await send(res, { status: response.status, headers: response.headers, text });
}

/**
 * Answers a request node's parser refused before it reached the handler: 431 for headers over the
 * limit, 408 for one not received in time, 400 for one that is not HTTP; in the fatal shape.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const code = error.code ?? '';
  const status = code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : code.startsWith('HPE_') ? 400 : undefined;
  // a socket with a response under way (a keep-alive connection) cannot take a second status line
  const answering = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  if (status === undefined || !socket.writable || (answering !== undefined && answering !== null)) {
    socket.destroy();
    return;
  }
  const message =
    status === 431
      ? `request headers are larger than ${maxHeaderSize} bytes`
      : status === 408
        ? 'the request was not received in time'
        : `malformed HTTP request (${code})`;
  const text = JSON.stringify(fatalBody(message));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
}

/** A port in use or not ours to take is the person's to fix (exit 2), as a database in use is. */
function listenError(error: NodeJS.ErrnoException, resolved: ResolvedOptions): Error {
  const where = `${resolved.host}:${resolved.port}`;
  if (error.code === 'EADDRINUSE') return new UsageError(`--port ${resolved.port}: ${where} is in use (EADDRINUSE); give another port, or --port 0 for a free one`);
  if (error.code === 'EACCES') return new UsageError(`--port ${resolved.port}: not allowed to listen on ${where}`);
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') return new UsageError(`--host ${resolved.host}: no such address on this machine`);
  return error;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const resolved = resolveOptions(options);
  // before the file is opened: a second emulator must not even upgrade its tables
  const unlock = lockDatabase(resolved.db);
  let store: Store | undefined;
  try {
    store = new Store(resolved.db, { checkpointThread: true, note: options.log });
    return await serve(resolved, store, options.log, unlock);
  } catch (error) {
    if (store !== undefined) {
      await store.stopCheckpointThread();
      store.close();
    }
    unlock();
    throw error;
  }
}

async function serve(resolved: ResolvedOptions, store: Store, log: ((line: string) => void) | undefined, unlock: () => void): Promise<Emulator> {
  const handler = createHandler({
    store,
    keys: resolved.keys,
    blocklist: resolved.blocklist,
    limitProfile: resolved.limitProfile,
    limits: resolved.limits,
    rateLimit: resolved.rateLimit,
    faults: resolved.faults,
    maxBodyBytes: resolved.maxBodyBytes,
    arrayCap: resolved.arrayCap,
    log,
    requestLogSize: resolved.requestLogSize,
    fixtureKeyRequired: !isLoopbackHost(resolved.host),
    seed: resolved.seedRequests,
  });
  // before the server listens: a seed refused is an error at start, and no request sees half of it
  store.transaction(() => handler.applySeed());

  const submit = groupCommitter(store, handler.handle, log ?? (() => {}));
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const began = performance.now();
    inFlight += 1;
    res.on('close', () => {
      inFlight -= 1;
      if (inFlight === 0) idle?.();
    });
    void (async () => {
      const { body, size, tooLarge } = await readBody(req, resolved.maxBodyBytes);
      const headers: Record<string, string | undefined> = {};
      const given = req.headers;
      for (const name in given) {
        const value = given[name];
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const request: EmulatorRequest = {
        method: req.method ?? 'GET',
        path: routePath(req.url ?? '/'),
        query: queryOf(req.url ?? '/'),
        headers,
        body,
        bodyBytes: size,
        bodyTooLarge: tooLarge,
      };
      const response = await submit(request);
      if (response.delayMs) await new Promise((r) => setTimeout(r, response.delayMs));
      await send(res, response);
      if (isRecorded(request.path)) handler.metrics.observe(request.path, (performance.now() - began) / 1000);
    })().catch((error: unknown) => {
      const message = `the emulator cannot answer ${req.method} ${routePath(req.url ?? '/')}: ${(error as Error).message}`;
      log?.(`error: ${message}`);
      if (!res.headersSent) send(res, { status: 500, headers: {}, body: fatalBody(message) });
      else res.destroy();
    });
  };
  const server = createServer(
    {
      requestTimeout: resolved.requestTimeoutMs,
      headersTimeout: Math.min(resolved.requestTimeoutMs, 60_000),
      // how often request timeouts are enforced; node's default (30 s) would let a slow client linger
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(resolved.requestTimeoutMs / 2))),
    },
    onRequest,
  );
  server.on('clientError', answerClientError);

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => reject(listenError(error, resolved));
    server.once('error', onError);
    server.listen(resolved.port, resolved.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  // loaded now, not before listening: starting takes no longer for it
  handler.metrics.load().catch((error: unknown) => log?.(`error: the metrics cannot be loaded: ${(error as Error).message}`));
  const host = resolved.host.includes(':') ? `[${resolved.host}]` : resolved.host;
  const firstKey = resolved.generatedKey ?? [...resolved.keys.entries()].find(([, p]) => p.has('users.track'))?.[0] ?? [...resolved.keys.keys()][0];

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // requests in flight get a grace period to finish; then their connections are cut
      const grace = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
      server.closeIdleConnections();
      await closed;
      clearTimeout(grace);
      try {
        await store.stopCheckpointThread();
        store.close();
      } finally {
        unlock();
      }
    })();
    return closing;
  };

  const url = `http://${host}:${port}`;
  return {
    url,
    port,
    apiKey: firstKey,
    faults: handler.faults,
    store,
    webUrl: `${url}${FIXTURE_PREFIX}/`,
    fixtureKeyRequired: !isLoopbackHost(resolved.host),
    requests: (query) => handler.requestLog.query(checkedQuery(query)),
    reset: () => {
      if (closing !== undefined) throw new UsageError('reset(): the emulator is closed (close() was called); start another to reset');
      return handler.reset();
    },
    close,
  };
}
