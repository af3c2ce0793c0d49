import { describe, expect, it } from 'vitest';
import { createUserOrder, keyHash } from '../../src/transport/user-order.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('user order', () => {
  it('lets requests for other users go at once', async () => {
    const order = createUserOrder();
    const a = order.enter(['u1']);
    const b = order.enter(['u2']);
    let bReady = false;
    void b.ready.then(() => (bReady = true));
    await tick();
    expect(bReady).toBe(true);
    a.done();
    b.done();
    expect(order.busyKeys).toBe(0);
  });

  it('holds a request until every earlier one sharing a user has settled, in planned order', async () => {
    const order = createUserOrder();
    const a = order.enter(['u1', 'u2']);
    const b = order.enter(['u2', 'u3']);
    const c = order.enter(['u3']);
    const d = order.enter(['u1']);
    const ready: string[] = [];
    for (const [name, turn] of [['b', b], ['c', c], ['d', d]] as const) void turn.ready.then(() => ready.push(name));
    await tick();
    expect(ready).toEqual([]);
    a.done();
    await tick();
    expect(ready).toEqual(['b', 'd']);
    b.done();
    await tick();
    expect(ready).toEqual(['b', 'd', 'c']);
    c.done();
    d.done();
    expect(order.busyKeys).toBe(0);
  });

  it('does not wait on itself when a key repeats', async () => {
    const order = createUserOrder();
    const a = order.enter(['u1', 'u1']);
    let ok = false;
    void a.ready.then(() => (ok = true));
    await tick();
    expect(ok).toBe(true);
  });
});

describe('key hashes', () => {
  it('spread user keys with almost no collisions', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200_000; i += 1) seen.add(keyHash(`external_id:user-${i}`));
    // a collision only makes a request wait for an earlier one; even so they must be rare
    expect(seen.size).toBeGreaterThan(199_900);
    expect(keyHash('email:a@example.com')).toBe(keyHash('email:a@example.com'));
    expect(keyHash('a')).not.toBe(keyHash('b'));
  });
});
