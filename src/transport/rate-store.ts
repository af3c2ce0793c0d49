// One rate budget in Redis for every process that sends to one target (`--rate-store`): each start
// is counted in a sliding log (a sorted set of start times, by the Redis server's clock), so all of
// them together never start more than the limit in any window, whatever their own clocks say. A
// fixed window, as counter-based limiters keep, lets two bursts meet across its boundary; a log
// holds in every window. The client is loaded only when a run names a store.
import { UsageError } from '../errors.js';

/** The windows a shared budget keeps: most starts in any second, and in any hour. */
export interface BudgetLimits {
  perSecond?: number;
  perHour?: number;
  /** Added to each window, as the local pacer does (a request leaves a little after its start). */
  marginMs: number;
}

export interface RateStore {
  /**
   * Counts a start now when every window has room, and returns 0; otherwise counts nothing and
   * returns how many ms until the oldest start that binds leaves its window.
   */
  take(id: string): Promise<number>;
  /** The start counted as `id` left only now: count it from now (the server sees sending times). */
  move(id: string): Promise<void>;
  close(): Promise<void>;
  /** The store and key, as messages name them (never a password). */
  readonly name: string;
}

// KEYS: the second's log, the hour's log. ARGV: id, then per key its limit (0: none) and window (µs).
// Times are the Redis server's (TIME), in µs; a start is counted in both logs or in neither.
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local wait = 0
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
    redis.call('ZADD', KEYS[i], now, ARGV[1])
    redis.call('PEXPIRE', KEYS[i], math.ceil(tonumber(ARGV[i * 2 + 1]) / 1000) + 1000)
  end
end
return 0
`;

// KEYS: the two logs. ARGV: id. Moves a start to now where it is still counted.
const MOVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, 2 do redis.call('ZADD', KEYS[i], 'XX', 'GT', now, ARGV[1]) end
return 0
`;

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
 * Connects to the store, and checks it answers, before anything is sent: an unreachable store is a
 * usage error (exit 2) naming it. Once connected, a failure is the caller's to handle (a command
 * fails at once rather than waiting for a reconnection).
 */
export async function connectRateStore(text: string, key: string, limits: BudgetLimits, connectTimeoutMs = 5_000): Promise<RateStore> {
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
    await client.connect();
    await client.ping();
  } catch (error) {
    await client.destroy();
    const why = error instanceof Error ? error.message : String(error);
    throw new UsageError(`--rate-store ${storeName(url)}: cannot reach the store (${why || 'connection refused'}); start it, fix the URL, or run without --rate-store`);
  }
  const keys = [`${key}:second`, `${key}:hour`];
  const window = (perWindow: number | undefined, spanUs: number): string[] =>
    perWindow === undefined ? ['0', '0'] : [String(perWindow), String(spanUs + limits.marginMs * 1000)];
  const args = [...window(limits.perSecond, SECOND_US), ...window(limits.perHour, HOUR_US)];
  return {
    name,
    async take(id) {
      return Number(await client.eval(TAKE, { keys, arguments: [id, ...args] }));
    },
    async move(id) {
      await client.eval(MOVE, { keys, arguments: [id] });
    },
    async close() {
      if (client.isOpen) await client.close().catch(() => client.destroy());
    },
  };
}
