// Whole-request verdicts: fatal shapes, batch limits, the blocklist, and how minor errors are placed
// (spec 2.1, 7, 8; decisions.md "Wire format", "Batch limits").
import { describe, expect, it } from 'vitest';
import {
  BLOCKLISTED_MESSAGE,
  fatalBody,
  resolveLimits,
  validateRequest,
  type ArrayName,
} from '../../src/model/index.js';
import { attrs, event, itemOf, purchase } from './items.js';

function fatalMessage(body: unknown, options?: Parameters<typeof validateRequest>[1]): string {
  const verdict = validateRequest(body, options);
  expect(verdict.ok).toBe(false);
  return verdict.ok ? '' : verdict.message;
}

function accepted(body: unknown, options?: Parameters<typeof validateRequest>[1]) {
  const verdict = validateRequest(body, options);
  if (!verdict.ok) throw new Error(`unexpected fatal verdict: ${verdict.message}`);
  return verdict;
}

function items(kind: ArrayName, n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => itemOf(kind, { external_id: `user-${i}` }));
}

describe('request body shape', () => {
  it.each([
    ['an array', [attrs()]],
    ['null', null],
    ['a string', '{"attributes":[]}'],
    ['a number', 42],
    ['undefined', undefined],
  ])('rejects a body that is %s as fatal', (_label, body) => {
    expect(fatalMessage(body)).toMatch(/object/);
  });

  it.each([
    ['attributes', null],
    ['attributes', { external_id: 'user-1' }],
    ['events', 'played_song'],
    ['purchases', 3],
    ['events', true],
  ] as const)('rejects %s given as %j (not an array) as fatal, naming the array', (name, value) => {
    expect(fatalMessage({ [name]: value })).toMatch(new RegExp(`^${name}:`));
  });

  it('rejects a wrong top-level type even when another array is valid', () => {
    expect(fatalMessage({ events: [event()], purchases: null })).toMatch(/^purchases:/);
  });

  it.each([
    ['an empty object', {}],
    ['only unknown keys', { partner: 'acme' }],
  ])('rejects %s (no array at all) as fatal', (_label, body) => {
    expect(fatalMessage(body)).toMatch(/attributes, events, purchases/);
  });

  it('accepts {"attributes": []} with a count of 0', () => {
    const verdict = accepted({ attributes: [] });
    expect(verdict.errors).toEqual([]);
    expect(verdict.counts).toEqual({ attributes: 0, events: 0, purchases: 0 });
  });

  it('ignores unknown top-level keys such as partner', () => {
    const verdict = accepted({ partner: 'acme', events: [event()], extra: { any: 'thing' } });
    expect(verdict.errors).toEqual([]);
    expect(verdict.counts.events).toBe(1);
  });

  it('counts the items of each array given', () => {
    const verdict = accepted({ attributes: [attrs(), attrs()], events: [event()], purchases: [purchase(), purchase(), purchase()] });
    expect(verdict.errors).toEqual([]);
    expect(verdict.counts).toEqual({ attributes: 2, events: 1, purchases: 3 });
  });
});

describe('minor errors', () => {
  it.each([
    ['a string', 'user-1'],
    ['null', null],
    ['a number', 7],
    ['an array', [attrs()]],
  ])('reports an array element that is %s as a minor error at its index', (_label, element) => {
    for (const kind of ['attributes', 'events', 'purchases'] as const) {
      const verdict = accepted({ [kind]: [itemOf(kind), element, itemOf(kind)] });
      expect(verdict.errors).toEqual([{ type: expect.stringMatching(new RegExp(`^${kind} item:`)), input_array: kind, index: 1 }]);
    }
  });

  it('reports one error per broken item, in array order, with 0-based indexes per array', () => {
    const verdict = accepted({
      attributes: [attrs(), attrs({ dob: '2023-02-29', language: 'EN' })],
      events: [event({ name: '' }), event()],
      purchases: [purchase(), purchase(), purchase({ price: '9.99' })],
    });
    expect(verdict.errors).toEqual([
      { type: expect.stringMatching(/^dob:/), input_array: 'attributes', index: 1 },
      { type: expect.stringMatching(/^name:/), input_array: 'events', index: 0 },
      { type: expect.stringMatching(/^price:/), input_array: 'purchases', index: 2 },
    ]);
  });

  it('reports the first problem of an item only once', () => {
    const verdict = accepted({ attributes: [{ dob: 'yesterday', language: 'EN', email_subscribe: 'maybe' }] });
    expect(verdict.errors).toHaveLength(1);
    expect(verdict.errors[0]).toMatchObject({ input_array: 'attributes', index: 0 });
  });
});

describe('batch limits', () => {
  it('passes exactly 50 items across the three arrays under the default (mau) profile', () => {
    const verdict = accepted({ attributes: items('attributes', 20), events: items('events', 20), purchases: items('purchases', 10) });
    expect(verdict.errors).toEqual([]);
    expect(verdict.counts).toEqual({ attributes: 20, events: 20, purchases: 10 });
  });

  it('rejects 51 items across the three arrays as fatal under the default (mau) profile', () => {
    const body = { attributes: items('attributes', 20), events: items('events', 20), purchases: items('purchases', 11) };
    expect(fatalMessage(body)).toMatch(/51 items; at most 50/);
    expect(fatalMessage(body, { limits: resolveLimits('mau') })).toMatch(/at most 50/);
  });

  it('rejects 51 items in a single array under the mau profile', () => {
    expect(fatalMessage({ events: items('events', 51) })).toMatch(/at most 50/);
  });

  it('counts rejected items towards the limit too', () => {
    const body = { attributes: [...items('attributes', 50), { dob: 'not a date' }] };
    expect(fatalMessage(body)).toMatch(/at most 50/);
  });

  it('passes 75 items in each of the three arrays under the legacy profile', () => {
    const body = { attributes: items('attributes', 75), events: items('events', 75), purchases: items('purchases', 75) };
    const verdict = accepted(body, { limits: resolveLimits('legacy') });
    expect(verdict.errors).toEqual([]);
    expect(verdict.counts).toEqual({ attributes: 75, events: 75, purchases: 75 });
    // The same request is over the strict default.
    expect(fatalMessage(body)).toMatch(/at most 50/);
  });

  it.each(['attributes', 'events', 'purchases'] as const)('rejects 76 %s in one array under the legacy profile', (kind) => {
    expect(fatalMessage({ [kind]: items(kind, 76) }, { limits: resolveLimits('legacy') })).toMatch(
      new RegExp(`^${kind} has 76 items; at most 75`),
    );
  });

  it('takes explicit numbers over the profile', () => {
    const limits = resolveLimits('mau', { maxTotal: 3 });
    expect(accepted({ attributes: items('attributes', 2), events: items('events', 1) }, { limits }).errors).toEqual([]);
    expect(fatalMessage({ attributes: items('attributes', 2), events: items('events', 2) }, { limits })).toMatch(/at most 3/);

    const perArray = resolveLimits('legacy', { maxPerArray: 2 });
    expect(accepted({ attributes: items('attributes', 2), events: items('events', 2) }, { limits: perArray }).errors).toEqual([]);
    expect(fatalMessage({ events: items('events', 3) }, { limits: perArray })).toMatch(/^events has 3 items; at most 2/);

    const raised = resolveLimits('mau', { maxTotal: 100 });
    expect(accepted({ attributes: items('attributes', 60), events: items('events', 40) }, { limits: raised }).errors).toEqual([]);
    expect(fatalMessage({ attributes: items('attributes', 60), events: items('events', 41) }, { limits: raised })).toMatch(
      /at most 100/,
    );
  });
});

describe('blocklisted external_id', () => {
  it.each(['attributes', 'events', 'purchases'] as const)('rejects the whole request when %s holds one', (kind) => {
    const body = {
      attributes: [attrs()],
      events: [event()],
      purchases: [purchase()],
      [kind]: [itemOf(kind), itemOf(kind, { external_id: 'dummy-user' })],
    };
    expect(fatalMessage(body, { blocklist: ['dummy-user'] })).toBe('provided external_id is blocklisted and not allowed');
    expect(fatalMessage(body, { blocklist: new Set(['dummy-user']) })).toBe(BLOCKLISTED_MESSAGE);
  });

  it('passes a request whose external_ids are not on the blocklist', () => {
    const body = { attributes: [attrs({ external_id: 'dummy-user-2' })], events: [event()] };
    expect(accepted(body, { blocklist: ['dummy-user'] }).errors).toEqual([]);
    expect(accepted({ attributes: [attrs({ external_id: 'dummy-user' })] }).errors).toEqual([]);
  });

  it('is fatal even when the blocklisted item has other problems', () => {
    const body = { events: [event({ external_id: 'dummy-user', name: '' })] };
    expect(fatalMessage(body, { blocklist: ['dummy-user'] })).toBe(BLOCKLISTED_MESSAGE);
  });

  it('gives the fatal response shape with the message repeated in errors', () => {
    expect(fatalBody(BLOCKLISTED_MESSAGE)).toEqual({ message: BLOCKLISTED_MESSAGE, errors: [BLOCKLISTED_MESSAGE] });
  });
});
