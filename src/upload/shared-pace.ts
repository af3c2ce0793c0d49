// The pace of one upload among others sending to the same target: its share of --rate and --hourly
// (--shard), or the whole of them drawn from one budget in Redis (--rate-store), falling back to its
// share when the store fails. Loaded only when a run has a shard or a store.
import { randomUUID } from 'node:crypto';
import { UsageError } from '../errors.js';
import { DEFAULT_RATE } from '../transport/defaults.js';
import type { Shard } from './shard.js';
import type { DeliveryNotice } from '../transport/index.js';

/** What of a delivery's options sets its pace. */
interface PaceOptions {
  rate?: number;
  hourly?: number;
  rateStore?: string;
  rateStoreKey?: string;
}

/** One of `n` shards' share of a limit a second or an hour (at least one: see checkShares). */
export const shareOf = (limit: number, n: number): number => Math.max(1, Math.floor(limit / n));

/**
 * Refuses a --rate or --hourly below the number of shards (`n`) when each paces at its share: a share
 * below one request a second (or an hour) would be rounded up to one, and the shards together would
 * go over. `rate` undefined: the default.
 */
export function checkShares(rate: number | undefined, hourly: number | undefined, n: number): void {
  if (n <= 1) return;
  if (rate === undefined && DEFAULT_RATE < n) {
    throw new UsageError(`the default --rate of ${DEFAULT_RATE} shared by ${n} shards (--shard) leaves each less than one request a second: give fewer shards, or draw every shard from one budget with --rate-store`);
  }
  for (const [flag, limit, per] of [['--rate', rate, 'a second'], ['--hourly', hourly, 'an hour']] as const) {
    if (limit === undefined || limit >= n) continue;
    throw new UsageError(`${flag} ${limit} shared by ${n} shards (--shard) leaves each less than one request ${per}, and together they would send more: give ${flag} at least ${n}, or draw every shard from one budget with --rate-store`);
  }
}

/**
 * The pace of one process among others: with --rate-store, the whole --rate and --hourly drawn from
 * the shared budget (each shard falling back to its own share if the store fails); with --shard
 * alone, this shard's share of them, so the shards together stay within the account's limits.
 */
export async function sharedPace(send: PaceOptions, target: string, shard: Shard | undefined, stop?: AbortSignal) {
  const n = shard?.count ?? 1;
  const share = (limit: number | undefined): number | undefined => (limit === undefined ? undefined : shareOf(limit, n));
  const rate = send.rate ?? DEFAULT_RATE;
  if (send.rateStore === undefined) checkShares(send.rate, send.hourly, n);
  if (send.rateStore === undefined) return n === 1 ? undefined : { rate: share(rate), hourly: share(send.hourly), close: async () => undefined };
  const [{ connectRateStore }, { createSharedPacer }, { createPacer, DEFAULT_WINDOW_MARGIN_MS }] = await Promise.all([
    import('../transport/rate-store.js'),
    import('../transport/shared-pacer.js'),
    import('../transport/pacer.js'),
  ]);
  const marginMs = DEFAULT_WINDOW_MARGIN_MS;
  const store = await connectRateStore(send.rateStore, send.rateStoreKey ?? `track:rate:${target}`, { perSecond: rate, perHour: send.hourly, marginMs }, { stop });
  // a share below one (--rate 3 among 4 shards) is kept as it is: one start every so long, not one a second each
  const fallback = (limit: number | undefined): number | undefined => (limit === undefined ? undefined : limit < n ? limit / n : shareOf(limit, n));
  const ownRate = fallback(rate)!;
  const saying = ownRate >= 1 ? `${ownRate} requests a second` : `one request every ${Math.round((10 * n) / rate) / 10} s`;
  return {
    rate,
    hourly: send.hourly,
    pacer: (onNotice: ((notice: DeliveryNotice) => void) | undefined) =>
      createSharedPacer({
        local: createPacer({
          perSecond: rate,
          perHour: send.hourly,
          marginMs,
          onLongWait: ({ untilMs, reason }) => onNotice?.({ type: 'waiting', reason, untilWallMs: Date.now() + (untilMs - performance.now()) }),
        }),
        store,
        fallback: { perSecond: ownRate, perHour: fallback(send.hourly), marginMs },
        onFallback: (error) => onNotice?.({ type: 'warning', message: `--rate-store ${store.name} failed (${error.message}): sending on at this process's share, ${saying}` }),
        id: `${process.pid}-${randomUUID()}`,
      }),
    close: () => store.close(),
  };
}
