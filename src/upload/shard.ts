// `--shard K/N`: a run keeps the rows whose user falls in shard K of N, so N processes (on one
// machine or many) share one upload, each user in exactly one of them, in file order. The shard is
// a documented hash of the identifier the row uses, the same in every file, format and version of
// track, and easy to compute elsewhere (docs/pipelines.md shows it in SQL and Python):
//   key   = "external_id:" + id | "user_alias:" + label + ":" + name | "service_id:" + id
//         | "email:" + the email trimmed and lower-cased | "phone:" + the number in E.164
//   shard = (the first 4 bytes of SHA-256(UTF-8 of key), as an unsigned big-endian number) mod N + 1
// Anonymous rows (a push token import) are all in shard 1.
import { createHash } from 'node:crypto';
import { UsageError } from '../errors.js';
import type { Identity } from '../model/identity.js';

export interface Shard {
  /** 1-based. */
  index: number;
  count: number;
}

/** The text whose hash places a user (see the top of this file). */
export function shardKey(identity: Exclude<Identity, { by: 'anonymous' }>): string {
  if (identity.by === 'user_alias') return `user_alias:${identity.value.alias_label}:${identity.value.alias_name}`;
  return `${identity.by}:${identity.value}`;
}

/** The 1-based shard of N that holds this identity's user. */
export function shardOf(identity: Identity, count: number): number {
  if (identity.by === 'anonymous' || count === 1) return 1;
  const digest = createHash('sha256').update(shardKey(identity), 'utf8').digest();
  return (digest.readUInt32BE(0) % count) + 1;
}

/**
 * `K/N` as test runners write it (1 <= K <= N), or `auto/N`, which takes K from the scheduler: a
 * 0-based index (`JOB_COMPLETION_INDEX` of a Kubernetes Indexed Job, or `TRACK_SHARD_INDEX`), so
 * index 0 is shard 1.
 */
export function parseShard(text: string, env: Readonly<Record<string, string | undefined>>): Shard {
  const match = /^(auto|\d+)\/(\d+)$/.exec(text.trim());
  if (match === null) throw new UsageError(`--shard: expected K/N (shard K of N, 1 <= K <= N) or auto/N, got "${text}"`);
  const count = Number(match[2]);
  if (!Number.isSafeInteger(count) || count < 1) throw new UsageError(`--shard ${text}: N must be a whole number of at least 1`);
  if (match[1] !== 'auto') {
    const index = Number(match[1]);
    if (index < 1 || index > count) throw new UsageError(`--shard ${text}: K must be from 1 to ${count}`);
    return { index, count };
  }
  const [name, value] = [['JOB_COMPLETION_INDEX', env.JOB_COMPLETION_INDEX], ['TRACK_SHARD_INDEX', env.TRACK_SHARD_INDEX]].find(([, v]) => v !== undefined && v !== '') ?? [];
  if (name === undefined || value === undefined) {
    throw new UsageError(`--shard auto/${count}: set JOB_COMPLETION_INDEX (a Kubernetes Indexed Job does) or TRACK_SHARD_INDEX to this shard's 0-based index`);
  }
  if (!/^\d+$/.test(value) || Number(value) >= count) {
    throw new UsageError(`--shard auto/${count}: ${name}=${value} is not a 0-based index below ${count}`);
  }
  return { index: Number(value) + 1, count };
}

/** How file names and messages write a shard: `shard-2-of-4`. */
export const shardTag = (shard: Shard): string => `shard-${shard.index}-of-${shard.count}`;
