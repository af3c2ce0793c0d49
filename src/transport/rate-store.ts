// One rate budget in Redis for every process that sends to one target (`--rate-store`): each start
// is counted in a sliding log (a sorted set of start times, by the Redis server's clock), so all of
// them together never start more than the limit in any window, whatever their own clocks say. A
// fixed window, as counter-based limiters keep, lets two bursts meet across its boundary; a log
// holds in every window. The client is loaded only when a run names a store.
import { StoppedError, UsageError } from '../errors.js';
import { unlessAborted } from './clock.js';
import { CATCH_UP_MS, SPACING_SLACK_MS } from './pacer.js';

/** The windows a shared budget keeps: most starts in any second, and in any hour. */
export interface BudgetLimits {
  perSecond?: number;
  perHour?: number;
  /** Added to each window, as the local pacer does (a request leaves a little after its start). */
  marginMs: number;
  /** Spread the starts of all processes evenly over the second (default), as the local pacer does its own. */
  evenly?: boolean;
}

export interface RateStore {
  /**
   * Counts a start now when every window has room, and returns 0; otherwise counts nothing and
   * returns how many ms until the oldest start that binds leaves its window.
   */
  take(id: string): Promise<number>;
  /** The request of the start counted as `id` has left: count it from now (the server sees sending times). */
  move(id: string): Promise<void>;
  close(): Promise<void>;
  /** The store and key, as messages name them (never a password). */
  readonly name: string;
}

// KEYS: the second's log, the hour's log, the time of the next even start. ARGV: id; per log its
// limit (0: none) and window (µs); how far ahead (µs) a start is counted until its request has left
// (MOVE then counts it from when it did: another process must not take a place the window will still
// hold when this request reaches the server); the gap (µs) between even starts (0: none), how late
// a start may be and keep the timeline, and how early it may be and take its turn (EARLY_US).
// Times are the Redis server's (TIME), in µs. A start is counted in both logs or in neither. The
// starts of all processes together are spread evenly over the second, as one process's pacer spreads
// its own: a burst that a server receives a little late could otherwise reach it in its next window.
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local gap = tonumber(ARGV[7])
local nextAt = tonumber(redis.call('GET', KEYS[3]) or '0')
local wait = 0
if gap > 0 and nextAt > now + tonumber(ARGV[9]) then wait = nextAt - now end
for i = 1, 2 do
  local limit = tonumber(ARGV[i * 2])
  local span = tonumber(ARGV[i * 2 + 1])
  if limit > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - span)
    if redis.call('ZCARD', KEYS[i]) >= limit then
      local oldest = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
      local w = tonumber(oldest[2]) + span - now
      if w > wait then wait = w end
    end
  end
end
if wait > 0 then return math.ceil(wait / 1000) end
for i = 1, 2 do
  if tonumber(ARGV[i * 2]) > 0 then
    redis.call('ZADD', KEYS[i], now + tonumber(ARGV[6]), ARGV[1])
    redis.call('PEXPIRE', KEYS[i], math.ceil(tonumber(ARGV[i * 2 + 1]) / 1000) + 1000)
  end
end
if gap > 0 then
  local from = now
  if nextAt >= now - tonumber(ARGV[8]) then from = nextAt end
  redis.call('SET', KEYS[3], from + gap, 'PX', 60000)
end
return 0
`;

// KEYS: the two logs. ARGV: id. Counts a start from now, when its request has left, where it is still counted.
const MOVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, 2 do redis.call('ZADD', KEYS[i], 'XX', now, ARGV[1]) end
return 0
`;

/**
 * How far ahead a start is counted until its request is known to have left: longer than a process
 * is usually held between taking a place and sending (a busy machine's scheduler, a new connection).
 */
const HOLD_US = 100_000;

/**
 * How early a start may come to the store and still take its even turn: as late as a process's pacer
 * catches up on (CATCH_UP_MS), whose starts come to the store as bunched. A start that came a fraction
 * of a millisecond early was told to wait that long, and asked again a round trip later (2.5 takes a
 * start at 1,000 a second, each a round trip to a store that may be far); with 2 ms forgiven, a catch-up
 * of 20 ms left most of its starts waiting in line. The windows' limits hold as before.
 */
const EARLY_US = CATCH_UP_MS * 1000;

const SECOND_US = 1_000_000;
const HOUR_US = 3_600_000_000;

/** `redis://HOST:PORT[/DB]` (or `rediss://`), checked before anything connects. */
export function parseStoreUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--rate-store: expected redis://HOST:PORT[/DB], got "${text}"`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new UsageError(`--rate-store: only Redis is supported (redis://HOST:PORT[/DB] or rediss://...), got "${url.protocol}"`);
  }
  if (url.pathname !== '' && url.pathname !== '/' && !/^\/\d+$/.test(url.pathname)) {
    throw new UsageError(`--rate-store: the database is a number (redis://HOST:PORT/2), got "${url.pathname.slice(1)}"`);
  }
  return url;
}

/** The URL as messages show it: without a password. */
export function storeName(url: URL): string {
  const shown = new URL(url.href);
  if (shown.password !== '') shown.password = '***';
  return shown.href;
}

/**
 * The longest a command may wait for its answer: a server stopped without closing its connections
 * (paused, a machine gone, a network that drops the packets) takes commands and answers none, and
 * the client's own timeouts end only at connecting or before a command is written.
 */
const ANSWER_MS = 5_000;

/** What answered() asks of the client. */
interface Client {
  readonly isOpen: boolean;
  destroy(): void;
}

/** The longest closing waits for the answers of commands still pending before the connection is cut. */
const CLOSE_MS = 1_000;

/** Cuts the client's connection (also one closing, whose socket stays open until the pending answers come). */
function cut(client: Client): void {
  try {
    client.destroy();
  } catch {
    // destroyed already
  }
}

/**
 * The command's answer, or a failure once `ms` pass without one. The client is then destroyed: an
 * answer that comes later would be taken for the next command's.
 */
function answered<T>(command: Promise<T>, ms: number, client: Client): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const silence = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // told first, so that the commands the destroy fails do not say it
      reject(new Error(`no answer in ${ms / 1000} s`));
      cut(client);
    }, ms);
  });
  return Promise.race([command, silence]).finally(() => clearTimeout(timer));
}

/**
 * Connects to the store, and checks it answers, before anything is sent: an unreachable store, or
 * one that does not answer within `connectTimeoutMs`, is a usage error (exit 2) naming it. Once
 * connected, a failure is the caller's to handle: a command fails at once rather than waiting for a
 * reconnection, and one left unanswered for `answerMs` fails then.
 */
export async function connectRateStore(
  text: string,
  key: string,
  limits: BudgetLimits,
  { connectTimeoutMs = 5_000, answerMs = ANSWER_MS, stop }: { connectTimeoutMs?: number; answerMs?: number; stop?: AbortSignal } = {},
): Promise<RateStore> {
  const url = parseStoreUrl(text);
  const name = `${storeName(url)} (key ${key})`;
  const { createClient } = await import('@redis/client');
  const client = createClient({
    url: url.href,
    // a command while the connection is down fails at once: the run falls back to its own share
    disableOfflineQueue: true,
    socket: { connectTimeout: connectTimeoutMs, reconnectStrategy: false },
  });
  // errors reach the commands that fail; an 'error' event without a listener would end the process
  client.on('error', () => undefined);
  try {
    const connected = answered(
      (async () => {
        await client.connect();
        await client.ping();
      })(),
      connectTimeoutMs,
      client,
    );
    // a stop (SIGTERM) does not wait for a store that is slow to answer
    await unlessAborted(connected, stop);
  } catch (error) {
    cut(client);
    if (stop?.aborted === true) throw new StoppedError(`--rate-store ${storeName(url)}: stopped while connecting to the store`);
    const why = error instanceof Error ? error.message : String(error);
    throw new UsageError(`--rate-store ${storeName(url)}: cannot reach the store (${why || 'connection refused'}); start it, fix the URL, or run without --rate-store`);
  }
  const keys = [`${key}:second`, `${key}:hour`, `${key}:next`];
  const window = (perWindow: number | undefined, spanUs: number): string[] =>
    perWindow === undefined ? ['0', '0'] : [String(perWindow), String(spanUs + limits.marginMs * 1000)];
  // the gap and the late start forgiven are the local pacer's (pacer.ts: even spacing)
  const gap = limits.perSecond === undefined || limits.evenly === false ? 0 : Math.round((SECOND_US + (limits.marginMs + SPACING_SLACK_MS) * 1000) / limits.perSecond);
  const args = [...window(limits.perSecond, SECOND_US), ...window(limits.perHour, HOUR_US), String(HOLD_US), String(gap), String(CATCH_UP_MS * 1000), String(EARLY_US)];
  let closing = false;
  return {
    name,
    async take(id) {
      return Number(await answered(client.eval(TAKE, { keys, arguments: [id, ...args] }), answerMs, client));
    },
    async move(id) {
      try {
        await answered(client.eval(MOVE, { keys, arguments: [id] }), answerMs, client);
      } catch (error) {
        // one cut off by the end of the run: the store did not fail while anything was sent
        if (!closing) throw error;
      }
    },
    async close() {
      closing = true;
      if (!client.isOpen) return;
      // nothing waits on what is still pending (the move of a start counted): a store that does not answer is cut off
      await answered(client.close(), Math.min(answerMs, CLOSE_MS), client).catch(() => cut(client));
    },
  };
}
