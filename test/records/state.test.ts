// The delta state file: what it learns from an accepted request, what it forgets before one is
// posted, and the learn record that carries both between the threads.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { identityOf } from '../../src/model/identity.js';
import {
  activityHash,
  canonicalJson,
  LEARN_NEW_USER,
  LEARN_NONE,
  learnRecordWriter,
  readLearnRecord,
  stateUserKey,
  valueHash,
} from '../../src/records/state-record.js';
import { forgetTarget, listState, openStateReader, openStateWriter } from '../../src/records/state.js';
import { tempDir } from '../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const T = 'http://127.0.0.1:4000/users/track';

/** A learn record of attributes items (`known`: the state may know the user), or items learned not at all. */
function record(items: Array<{ item: Record<string, unknown>; known?: boolean; sent?: Record<string, unknown> } | 'none'>): Uint8Array {
  const writer = learnRecordWriter();
  for (const entry of items) {
    if (entry === 'none') writer.add(LEARN_NONE, {}, { by: 'anonymous' });
    else writer.add(entry.known === true ? { item: entry.item } : LEARN_NEW_USER, entry.sent ?? entry.item, identityOf(entry.item));
  }
  return writer.finish();
}

describe('values and records', () => {
  it('compares arrays and objects by value, whatever the order of their keys, and tells types apart', () => {
    expect(valueHash({ a: 1, b: [1, { c: 2, d: 3 }] })).toEqual(valueHash({ b: [1, { d: 3, c: 2 }], a: 1 }));
    expect(valueHash([1, 2])).not.toEqual(valueHash([2, 1]));
    expect(valueHash('1')).not.toEqual(valueHash(1));
    expect(valueHash(null)).not.toEqual(valueHash('null'));
    expect(canonicalJson({ b: 1, a: undefined, c: 'x' })).toBe('{"b":1,"c":"x"}');
  });

  it('names users by the identifier the item uses, an email in lower case', () => {
    expect(stateUserKey({ by: 'external_id', value: 'U1' })).toBe('e:U1');
    expect(stateUserKey({ by: 'email', value: ' Ann@Example.com' })).toBe('m:ann@example.com');
    expect(stateUserKey({ by: 'anonymous' })).toBeUndefined();
  });

  it('hashes an event by its content: the same instant written two ways is the same event', () => {
    const a = activityHash('events', { external_id: 'u1', name: 'x', time: '2024-01-01T00:00:00Z', properties: { p: 1, q: 2 } }, 'e:u1');
    const b = activityHash('events', { time: '2024-01-01T00:00:00.000Z', properties: { q: 2, p: 1 }, name: 'x', external_id: 'u1' }, 'e:u1');
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
    const other = activityHash('events', { external_id: 'u1', name: 'x', time: '2024-01-01T00:00:01Z', properties: { p: 1, q: 2 } }, 'e:u1');
    expect(Buffer.from(a).equals(Buffer.from(other))).toBe(false);
  });

  it('reads back a learn record as written: the identifier and control fields are not learned, an increment is forgotten', () => {
    const bytes = record([{ item: { external_id: 'u1', _merge_objects: true, plan: 'pro', visits: { inc: 1 } }, known: true }, 'none']);
    const read = readLearnRecord(bytes);
    const seen: unknown[] = [];
    read.forEach((index, item) => {
      if (item === undefined || item instanceof Uint8Array) seen.push([index, item]);
      else seen.push([index, item.userKey, item.known, Array.from({ length: item.count }, (_, i) => [read.names[item.name(i)], item.forget(i), item.h1(i), item.h2(i)])]);
    });
    const [h1, h2] = valueHash('pro');
    expect(seen).toEqual([
      [0, 'e:u1', true, [['plan', false, h1, h2], ['visits', true, 0, 0]]],
      [1, undefined],
    ]);
  });
});

describe('the state file', () => {
  it('learns only the accepted items, keeps targets apart, and forgets a known value before a new one is posted', () => {
    const path = join(tmp.dir, 'state.sqlite');
    let writer = openStateWriter(path, T);
    writer.accepted(record([{ item: { external_id: 'u1', plan: 'pro', score: 1 } }, { item: { external_id: 'u2', plan: 'free' } }]), (i) => i === 1);
    writer.close();
    writer = openStateWriter(path, T);
    let reader = openStateReader(path, T);
    expect(reader.user('e:u1')?.holds('plan', valueHash('pro'))).toBe(true);
    expect(reader.user('e:u1')?.holds('plan', valueHash('free'))).toBe(false);
    expect(reader.user('e:u2')).toBeUndefined();
    expect(openStateReader(path, 'http://other/users/track').empty).toBe(true);
    reader.close();

    // a request about to change u1's plan: the user is forgotten before it is posted, so a stop
    // before the answer leaves the state not knowing the plan rather than holding the old one
    writer.sending(record([{ item: { external_id: 'u1', plan: 'free', score: 1 }, known: true }]));
    reader = openStateReader(path, T);
    expect(reader.user('e:u1')).toBeUndefined();
    reader.close();
    // accepted, the row is what the whole item set (an increment is not held)
    writer.accepted(record([{ item: { external_id: 'u1', plan: 'free', score: 1, visits: { inc: 1 } }, known: true }]), () => false);
    writer.close();
    reader = openStateReader(path, T);
    expect(reader.user('e:u1')?.holds('plan', valueHash('free'))).toBe(true);
    expect(reader.user('e:u1')?.holds('score', valueHash(1))).toBe(true);
    expect(reader.user('e:u1')?.holds('visits', valueHash({ inc: 1 }))).toBe(false);
    reader.close();

    expect(listState(path)).toEqual([expect.objectContaining({ url: T, users: 1, attributes: 2, activities: 0 })]);
    expect(openStateReader(path, T).user('e:u1')?.digest).toBeGreaterThan(0);
    expect(forgetTarget(path, T)).toBe(true);
    expect(listState(path)).toEqual([]);
  });

  it('merges only what a request sent into a row another run wrote while it was in flight', () => {
    const path = join(tmp.dir, 'state.sqlite');
    const ours = openStateWriter(path, T);
    ours.accepted(record([{ item: { external_id: 'w', a: 1, b: 1 } }]), () => false);
    ours.close();
    const mine = openStateWriter(path, T);
    const other = openStateWriter(path, T);
    // this run sends a=2 (b unchanged, left out); the other sends b=2 and is answered first
    const request = record([{ item: { external_id: 'w', a: 2, b: 1 }, sent: { external_id: 'w', a: 2 }, known: true }]);
    mine.sending(request);
    other.sending(record([{ item: { external_id: 'w', b: 2 }, known: true }]));
    other.accepted(record([{ item: { external_id: 'w', b: 2 }, known: true }]), () => false);
    other.close();
    mine.accepted(request, () => false);
    mine.close();
    const reader = openStateReader(path, T);
    expect(reader.user('e:w')?.holds('a', valueHash(2))).toBe(true);
    expect(reader.user('e:w')?.holds('b', valueHash(2))).toBe(true);
    reader.close();
  });

  it('refuses a file that is not a state file, naming it', () => {
    const path = join(tmp.dir, 'not.sqlite');
    writeFileSync(path, 'hello, this is text\n'.repeat(100));
    expect(() => openStateWriter(path, T)).toThrow(/--state .*not\.sqlite is not a state file/);
  });
});
