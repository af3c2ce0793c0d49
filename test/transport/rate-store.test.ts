// The shared rate budget against a real Redis: several pacers drawing from one key never start more
// than the limit in any sliding second, and a store that goes away leaves each at its own share.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPacer } from '../../src/transport/pacer.js';
import { connectRateStore, parseStoreUrl, storeName, type RateStore } from '../../src/transport/rate-store.js';
import { createSharedPacer } from '../../src/transport/shared-pacer.js';
import { StoppedError, UsageError } from '../../src/errors.js';
import { startDelayProxy } from '../helpers/delay-proxy.js';
import { redisPresent, startRedis, type RedisServer } from '../helpers/redis.js';

/** The store, counting the takes asked of it. */
function counting(store: RateStore): RateStore & { takes: number } {
  const counted = { name: store.name, takes: 0, take: (id: string) => ((counted.takes += 1), store.take(id)), move: (id: string) => store.move(id), close: () => store.close() };
  return counted;
}

/** Starts made by `senders` requests in flight through `pacer` (each acquiring, sending at once, and again) for `ms`, those still waiting then stopped. */
async function sendThrough(pacer: ReturnType<typeof createSharedPacer>, senders: number, ms: number): Promise<number[]> {
  const starts: number[] = [];
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new Error('time is up')), ms);
  const sender = async (): Promise<void> => {
    while (!stop.signal.aborted) {
      const ticket = await pacer.acquire(stop.signal).catch(() => undefined);
      if (ticket === undefined) return;
      starts.push(performance.now());
      pacer.markSent(ticket);
      pacer.release(ticket);
    }
  };
  await Promise.all(Array.from({ length: senders }, sender));
  clearTimeout(timer);
  return starts;
}

/** The most starts in any window of `spanMs` among these times (ms). */
function busiestWindow(times: number[], spanMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let i = 0; i < sorted.length; i += 1) {
    while (sorted[i] - sorted[first] >= spanMs) first += 1;
    most = Math.max(most, i - first + 1);
  }
  return most;
}

describe('--rate-store URLs', () => {
  it('takes redis:// and rediss:// with a numbered database, and refuses anything else', () => {
    expect(parseStoreUrl('redis://127.0.0.1:6379/2').port).toBe('6379');
    expect(parseStoreUrl('rediss://cache.example:6380').protocol).toBe('rediss:');
    expect(() => parseStoreUrl('http://127.0.0.1:6379')).toThrow(/only Redis/);
    expect(() => parseStoreUrl('redis://h:1/db')).toThrow(/database is a number/);
    expect(() => parseStoreUrl('not a url')).toThrow(UsageError);
  });

  it('never shows a password', () => {
    expect(storeName(parseStoreUrl('redis://user:secret@h:1/0'))).toBe('redis://user:***@h:1/0');
  });
});

describe.skipIf(!redisPresent)('one budget in Redis', () => {
  let redis: RedisServer;
  const stores: RateStore[] = [];
  beforeEach(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await redis.stop();
  });

  /** A pacer of 1000 starts a second through `store`, at 10 a second once the store fails (`told` why). */
  const soloPacer = (store: RateStore, told: Error[]) =>
    createSharedPacer({ local: createPacer({ perSecond: 1000, evenly: false }), store, fallback: { perSecond: 10, marginMs: 20 }, onFallback: (error) => told.push(error), id: 'solo' });

  const connect = async (key: string, perSecond: number, perHour?: number, evenly = false): Promise<RateStore> => {
    const store = await connectRateStore(redis.url, key, { perSecond, perHour, marginMs: 20, evenly });
    stores.push(store);
    return store;
  };

  it('holds the limit in every sliding second across four processes, spreading their starts', async () => {
    const limit = 40;
    const starts: number[] = [];
    const runFor = 3_000;
    const t0 = performance.now();
    const shard = async (n: number): Promise<void> => {
      const store = await connect('track:test', limit, undefined, true);
      // each process paces itself at the whole rate: only the shared budget keeps them together
      const pacer = createSharedPacer({ local: createPacer({ perSecond: limit }), store, fallback: { perSecond: limit / 4, marginMs: 20 }, id: `p${n}` });
      // with four requests in flight, each taking its place at once
      starts.push(...(await sendThrough(pacer, 4, runFor - (performance.now() - t0))));
    };
    await Promise.all([0, 1, 2, 3].map(shard));
    // seen here, a reply or two late on a busy machine may crowd a window by one: a fixed window
    // letting two bursts meet would show up to twice the limit
    expect(busiestWindow(starts, 1_000)).toBeLessThanOrEqual(limit + 2);
    // and the four together got most of it (3 s at 40/s, evenly: about 116)
    expect(starts.length).toBeGreaterThan(60);
  });

  it('takes places for several requests at once: a store 40 ms away does not hold a run to one start a round trip, spread evenly or not', async () => {
    const proxy = await startDelayProxy(redis.port, 40);
    /** Starts in 1.6 s by eight requests in flight (--concurrency 8), each taking its place through the far store. */
    const startsThrough = async (key: string, evenly: boolean): Promise<{ starts: number[]; takes: number }> => {
      const store = counting(await connectRateStore(`redis://127.0.0.1:${proxy.port}`, key, { perSecond: 1000, marginMs: 20, evenly }));
      stores.push(store);
      const pacer = createSharedPacer({ local: createPacer({ perSecond: 1000, evenly }), store, fallback: { perSecond: 10, marginMs: 20 }, id: key });
      const starts = await sendThrough(pacer, 8, 1_600);
      return { starts, takes: store.takes };
    };
    try {
      // a take costs a round trip of 80 ms: one at a time, 20 to 27 starts in 1.6 s; eight at once,
      // 60 to 160 here, as busy as the machine lets it
      for (const evenly of [false, true]) {
        const { starts, takes } = await startsThrough(`track:far:${evenly}`, evenly);
        expect(starts.length, `evenly: ${evenly}`).toBeGreaterThan(45);
        expect(busiestWindow(starts, 1_000)).toBeLessThanOrEqual(1000);
        // spread evenly, a start a little ahead of its turn takes it: told to wait a fraction of a
        // millisecond, it asked again a round trip later (2 to 2.5 takes a start)
        expect(takes, `evenly: ${evenly}`).toBeLessThan(starts.length * 1.5);
      }
    } finally {
      await proxy.close();
    }
  });

  it('asks the store again for one waiting request at a time, the others waiting their turn behind it', async () => {
    const store = counting(await connect('track:asks', 2));
    const pacer = createSharedPacer({ local: createPacer({ perSecond: 1000, evenly: false }), store, fallback: { perSecond: 2, marginMs: 20 }, id: 'asks' });
    const starts = await sendThrough(pacer, 16, 1_500);
    expect(busiestWindow(starts, 1_000)).toBeLessThanOrEqual(2);
    // one asking every 20 ms for 1.5 s: about 75 times; sixteen requests each asking so, about 1,200
    expect(store.takes).toBeLessThan(300);
  });

  it('falls back to its share one request at a time when the store fails while many wait on it', async () => {
    // a budget of 3 a second: when the store stops answering, this process's windows (5 a second) have room at once
    const store = await connectRateStore(redis.url, 'track:crowd', { perSecond: 3, marginMs: 20 }, { connectTimeoutMs: 1_000, answerMs: 500 });
    stores.push(store);
    const told: Error[] = [];
    const pacer = createSharedPacer({ local: createPacer({ perSecond: 1000, evenly: false }), store, fallback: { perSecond: 5, marginMs: 20 }, onFallback: (e) => told.push(e), id: 'crowd' });
    let paused = 0;
    setTimeout(() => {
      redis.pause();
      paused = performance.now();
    }, 300);
    const starts = await sendThrough(pacer, 16, 3_000);
    expect(told).toHaveLength(1);
    // the sixteen requests waiting on the store when it stopped answering start at its share, not at once
    expect(busiestWindow(starts.filter((at) => at > paused), 1_000)).toBeLessThanOrEqual(5);
    expect(starts.filter((at) => at > paused).length).toBeGreaterThanOrEqual(5);
  });

  it('spreads the starts of a budget evenly over the second', async () => {
    const store = await connect('track:even', 10, undefined, true);
    expect(await store.take('a')).toBe(0);
    // the next even start is about 103 ms later (1,030 ms / 10), not at once
    const wait = await store.take('b');
    expect(wait).toBeGreaterThan(80);
    expect(wait).toBeLessThanOrEqual(104);
  });

  it('gives a start that comes a little ahead of its even turn that turn, rather than a wait and another round trip', async () => {
    const store = await connect('track:early', 10, undefined, true);
    const first = performance.now();
    expect(await store.take('a')).toBe(0);
    // the next even start is 103 ms after the first: 86 ms later it is 17 ms away, within the 20 ms forgiven
    await new Promise((resolve) => setTimeout(resolve, 86));
    expect(await store.take('b')).toBe(0);
    // the turn after it is still a gap later: the timeline keeps its pace, two gaps (206 ms) after the
    // first start, however late the call came (a busy machine delays it, and the wait is the shorter)
    const wait = await store.take('c');
    const turn = performance.now() - first + wait;
    expect(wait).toBeGreaterThan(0);
    expect(turn).toBeGreaterThan(195);
    expect(turn).toBeLessThanOrEqual(260);
  });

  it('is a sliding window: starts late in one second still count early in the next', async () => {
    const store = await connect('track:sliding', 10);
    // each start's request leaves at once (move): it counts from then
    const take = async (n: number, tag: string): Promise<number> => {
      let allowed = 0;
      for (let i = 0; i < n; i += 1) {
        if ((await store.take(`${tag}${i}`)) !== 0) continue;
        await store.move(`${tag}${i}`);
        allowed += 1;
      }
      return allowed;
    };
    expect(await take(5, 'a')).toBe(5);
    await new Promise((r) => setTimeout(r, 900));
    expect(await take(5, 'b')).toBe(5);
    await new Promise((r) => setTimeout(r, 200));
    // the first five have left the window, the last five have not: a fixed window that began with
    // the first start would have emptied and let ten through here
    expect(await take(10, 'c')).toBe(5);
  });

  it('counts a start ahead until its request has left, so a late sender still fits the window', async () => {
    const store = await connect('track:hold', 3);
    for (const id of ['a', 'b', 'c']) expect(await store.take(id)).toBe(0);
    // none has left yet: each is counted about 100 ms ahead, so the next place opens after more than the window
    expect(await store.take('d')).toBeGreaterThan(1_050);
    for (const id of ['a', 'b', 'c']) await store.move(id);
    // once they left, from when they left
    const wait = await store.take('d');
    expect(wait).toBeGreaterThan(900);
    expect(wait).toBeLessThanOrEqual(1_020);
  });

  it('counts the hourly cap across processes too', async () => {
    const a = await connect('track:hourly', 1000, 5);
    const b = await connect('track:hourly', 1000, 5);
    const taken = [];
    for (const store of [a, b, a, b, a, b, a]) taken.push(await store.take(`x${taken.length}`));
    expect(taken.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    // the sixth start waits for the oldest to leave its hour
    expect(taken[5]).toBeGreaterThan(3_590_000);
    expect(taken[6]).toBeGreaterThan(3_590_000);
  });

  it('refuses an unreachable store at start, naming it', async () => {
    const port = redis.port;
    await redis.stop();
    await expect(connectRateStore(`redis://127.0.0.1:${port}`, 'k', { perSecond: 10, marginMs: 20 }, { connectTimeoutMs: 1_000 })).rejects.toThrow(
      new RegExp(`--rate-store redis://127\\.0\\.0\\.1:${port}: cannot reach the store`),
    );
  });

  it('refuses a store that takes the connection and answers nothing, naming it, once the time to connect is over', async () => {
    redis.pause();
    const started = performance.now();
    await expect(connectRateStore(redis.url, 'k', { perSecond: 10, marginMs: 20 }, { connectTimeoutMs: 1_000 })).rejects.toThrow(
      new RegExp(`--rate-store redis://127\\.0\\.0\\.1:${redis.port}: cannot reach the store \\(no answer in 1 s\\)`),
    );
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('stops connecting to a store that does not answer when the run is stopped: a StoppedError, at once', async () => {
    redis.pause();
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 300);
    const started = performance.now();
    await expect(connectRateStore(redis.url, 'k', { perSecond: 10, marginMs: 20 }, { stop: stop.signal })).rejects.toThrow(
      new StoppedError(`--rate-store ${redis.url}: stopped while connecting to the store`),
    );
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('falls back to its own share when the store stops answering mid-run', async () => {
    const store = await connectRateStore(redis.url, 'track:silent', { perSecond: 1000, marginMs: 20 }, { connectTimeoutMs: 1_000, answerMs: 500 });
    const told: Error[] = [];
    const pacer = soloPacer(store, told);
    for (let i = 0; i < 3; i += 1) pacer.markSent(await pacer.acquire());
    redis.pause();
    const t0 = performance.now();
    for (let i = 0; i < 3; i += 1) pacer.markSent(await pacer.acquire());
    // the first start waited the half second for an answer, then the run went on at its share
    expect(told.map((e) => e.message)).toEqual(['no answer in 0.5 s']);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it('closes within a second when a command is left unanswered, its connection cut, nothing left to keep the process', async () => {
    const sockets = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap').length;
    const before = sockets();
    const store = await connectRateStore(redis.url, 'track:closing', { perSecond: 10, marginMs: 20 });
    expect(sockets()).toBe(before + 1);
    redis.pause();
    const moving = store.move('x').then(() => undefined, (error: Error) => error);
    const closing = performance.now();
    await store.close();
    expect(performance.now() - closing).toBeLessThan(3_000);
    // the move the end cut off is no failure to tell
    expect(await moving).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sockets()).toBe(before);
  });

  it('stops waiting for a store that does not answer when the run is stopped, without falling back', async () => {
    const store = await connect('track:stopping', 10);
    const told: Error[] = [];
    const pacer = createSharedPacer({ local: createPacer({ perSecond: 10, evenly: false }), store, fallback: { perSecond: 10, marginMs: 20 }, onFallback: (e) => told.push(e), id: 'stopping' });
    pacer.markSent(await pacer.acquire());
    redis.pause();
    const stop = new AbortController();
    const waiting = pacer.acquire(stop.signal).then(() => 'started', (error: Error) => error.message);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stopped = performance.now();
    stop.abort(new Error('interrupted'));
    expect(await waiting).toBe('interrupted');
    expect(performance.now() - stopped).toBeLessThan(1_000);
    expect(told).toEqual([]);
  });

  it('falls back to one start every so long when its share is below one a second (--rate 3 among 6 shards)', async () => {
    const store = await connect('track:thin', 3);
    const pacer = createSharedPacer({ local: createPacer({ perSecond: 3, evenly: false }), store, fallback: { perSecond: 0.5, marginMs: 20 }, id: 'thin' });
    pacer.markSent(await pacer.acquire());
    const starts = [performance.now()];
    await redis.stop();
    const t0 = performance.now();
    while (performance.now() - t0 < 4_500) {
      pacer.markSent(await pacer.acquire());
      starts.push(performance.now());
    }
    // one start in any two seconds, the one sent through the store included: never one a second
    expect(busiestWindow(starts, 2_000)).toBe(1);
    expect(starts.length).toBeGreaterThanOrEqual(3);
  });

  it('falls back to its own share, counting what it sent, when the store goes away mid-run', async () => {
    const store = await connect('track:fallback', 1000);
    const told: Error[] = [];
    const pacer = soloPacer(store, told);
    const starts: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      pacer.markSent(await pacer.acquire());
      starts.push(performance.now());
    }
    await redis.stop();
    const t0 = performance.now();
    while (performance.now() - t0 < 1_500) {
      pacer.markSent(await pacer.acquire());
      starts.push(performance.now());
    }
    expect(told).toHaveLength(1);
    // its own share (10 a second), the five sent through the store included
    expect(busiestWindow(starts, 1_000)).toBeLessThanOrEqual(10);
    expect(starts.length).toBeGreaterThanOrEqual(15);
  });
});
