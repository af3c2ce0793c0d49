// The delta state file: what it learns from an accepted request, what it forgets before one is
// posted, and the learn record that carries both between the threads.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { activityHash, canonicalJson, isAddingOperation, learnedItems, learnRecordWriter, stateUserKey, valueHash } from '../../../src/transport/resume/state-record.js';
import { forgetTarget, listState, openStateReader, openStateWriter } from '../../../src/transport/resume/state.js';
import { tempDir } from '../../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const T = 'http://127.0.0.1:4000/users/track';

function record(entries: Array<{ user: string; forgetFirst?: boolean; values: Record<string, unknown> } | 'none'>): Uint8Array {
  const writer = learnRecordWriter();
  for (const entry of entries) {
    if (entry === 'none') writer.none();
    else {
      const values = Object.entries(entry.values).map(([name, value]) => (isAddingOperation(value) ? { name, forget: true as const } : { name, hash: valueHash(value) }));
      writer.attributes(entry.user, entry.forgetFirst === true, values);
    }
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

  it('reads back a learn record as written', () => {
    const bytes = record([{ user: 'e:u1', forgetFirst: true, values: { plan: 'pro', visits: { inc: 1 } } }, 'none']);
    const items = [...learnedItems(bytes)];
    expect(items).toEqual([
      { tag: 1, userKey: 'e:u1', forgetFirst: true, values: [{ name: 'plan', hash: valueHash('pro') }, { name: 'visits', forget: true }] },
      { tag: 0 },
    ]);
  });
});

describe('the state file', () => {
  it('learns only the accepted items, keeps targets apart, and forgets a known value before a new one is posted', () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = openStateWriter(path, T);
    writer.accepted(record([{ user: 'e:u1', values: { plan: 'pro', score: 1 } }, { user: 'e:u2', values: { plan: 'free' } }]), (i) => i === 1);
    let reader = openStateReader(path, T);
    expect(reader.user('e:u1')?.holds('plan', valueHash('pro'))).toBe(true);
    expect(reader.user('e:u1')?.holds('plan', valueHash('free'))).toBe(false);
    expect(reader.user('e:u2')).toBeUndefined();
    expect(openStateReader(path, 'http://other/users/track').empty).toBe(true);
    reader.close();

    // a request about to change u1's plan: the old plan is forgotten before it is posted, so a stop
    // before the answer leaves the state not knowing the plan rather than holding the old one
    writer.sending(record([{ user: 'e:u1', forgetFirst: true, values: { plan: 'free' } }]));
    reader = openStateReader(path, T);
    expect(reader.user('e:u1')?.holds('plan', valueHash('pro'))).toBe(false);
    expect(reader.user('e:u1')?.holds('score', valueHash(1))).toBe(true);
    reader.close();
    writer.accepted(record([{ user: 'e:u1', forgetFirst: true, values: { plan: 'free', visits: { inc: 1 } } }]), () => false);
    reader = openStateReader(path, T);
    expect(reader.user('e:u1')?.holds('plan', valueHash('free'))).toBe(true);
    reader.close();
    writer.close();

    expect(listState(path)).toEqual([expect.objectContaining({ url: T, users: 1, attributes: 2, activities: 0 })]);
    expect(forgetTarget(path, T)).toBe(true);
    expect(listState(path)).toEqual([]);
  });

  it('refuses a file that is not a state file, naming it', () => {
    const path = join(tmp.dir, 'not.sqlite');
    writeFileSync(path, 'hello, this is text\n'.repeat(100));
    expect(() => openStateWriter(path, T)).toThrow(/--state .*not\.sqlite is not a state file/);
  });
});
