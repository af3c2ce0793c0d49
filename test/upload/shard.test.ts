// The shard of a user is a documented hash: these values were computed with Python's hashlib from
// the formula in docs/pipelines.md, so a change to the hash (which would move users between the
// shards of a resumed run) fails here.
import { describe, expect, it } from 'vitest';
import { identityOf } from '../../src/model/identity.js';
import { parseShard, shardOf } from '../../src/upload/shard.js';

describe('shardOf', () => {
  const cases: [Record<string, unknown>, number[]][] = [
    [{ external_id: 'user-001' }, [2, 2, 3]],
    [{ email: '  Ann@Example.COM ' }, [2, 4, 5]],
    [{ phone: '+1 (415) 555-2671' }, [1, 1, 2]],
    [{ user_alias: { alias_label: 'crm', alias_name: 'a1' } }, [1, 1, 4]],
    [{ service_id: 's1' }, [1, 1, 5]],
  ];
  it.each(cases)('places %j as the documented formula does', (item, expected) => {
    expect([2, 4, 7].map((n) => shardOf(identityOf(item, 'attributes'), n))).toEqual(expected);
  });

  it('puts anonymous rows (push token imports) in shard 1, and everyone in shard 1 of 1', () => {
    expect(shardOf(identityOf({ push_token_import: true }, 'attributes'), 4)).toBe(1);
    expect(shardOf(identityOf({ external_id: 'user-001' }, 'attributes'), 1)).toBe(1);
  });

  it('places an event or purchase carrying push_token_import by its identifier: the flag is an attributes field', () => {
    for (const kind of ['events', 'purchases'] as const) {
      expect([2, 4, 7].map((n) => shardOf(identityOf({ external_id: 'user-001', push_token_import: true }, kind), n))).toEqual([2, 2, 3]);
    }
  });

  it('spreads users evenly', () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 40_000; i += 1) counts[shardOf({ by: 'external_id', value: `u${i}` }, 4) - 1] += 1;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(400);
  });
});

describe('parseShard', () => {
  it('reads K/N, 1-based', () => {
    expect(parseShard('2/4', {})).toEqual({ index: 2, count: 4 });
    expect(parseShard('1/1', {})).toEqual({ index: 1, count: 1 });
  });

  it('refuses what is not a shard', () => {
    for (const bad of ['0/4', '5/4', '2', '2/0', 'a/4', '-1/4', '2/4/6']) expect(() => parseShard(bad, {})).toThrow(/--shard/);
  });

  it('takes auto/N from a 0-based scheduler index', () => {
    expect(parseShard('auto/4', { JOB_COMPLETION_INDEX: '0' })).toEqual({ index: 1, count: 4 });
    expect(parseShard('auto/4', { TRACK_SHARD_INDEX: '3' })).toEqual({ index: 4, count: 4 });
    expect(() => parseShard('auto/4', {})).toThrow(/JOB_COMPLETION_INDEX .* TRACK_SHARD_INDEX/);
    expect(() => parseShard('auto/4', { JOB_COMPLETION_INDEX: '4' })).toThrow(/JOB_COMPLETION_INDEX=4 is not a 0-based index below 4/);
  });
});
