import { describe, expect, it } from 'vitest';
import { createUserOrder } from '../../src/transport/user-order.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('user order', () => {
  it('lets requests for other users go at once', async () => {
    const order = createUserOrder();
    const a = order.enter([1]);
    const b = order.enter([2]);
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
    const a = order.enter([1, 2]);
    const b = order.enter([2, 3]);
    const c = order.enter([3]);
    const d = order.enter([1]);
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
    const a = order.enter([1, 1]);
    let ok = false;
    void a.ready.then(() => (ok = true));
    await tick();
    expect(ok).toBe(true);
  });
});
