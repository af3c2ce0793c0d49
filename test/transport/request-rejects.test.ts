import { describe, expect, it } from 'vitest';
import { distinctRows, joinMinorErrors, wholeRequestRejects } from '../../src/transport/request-rejects.js';
import { itemCounts } from '../../src/transport/request.js';
import { buildPlan } from './plan.js';

describe('joining minor errors back to rows', () => {
  // rows 0..5: even rows are attributes (index row/2), odd rows are events (index (row-1)/2)
  const [request] = buildPlan({ requests: 1, itemsPer: 6, file: 'in.csv' });

  it('names the file, line, kind and row of each item an error points at', () => {
    const joined = joinMinorErrors(request, [
      { type: 'events[1].time is not ISO 8601', input_array: 'events', index: 1 },
      { type: 'attributes[0].dob is not a date', input_array: 'attributes', index: 0 },
      { type: 'attributes[0].language unknown', input_array: 'attributes', index: 0 },
    ]);
    expect(joined.rejects).toEqual([
      { file: 'in.csv', line: 5, kind: 'events', row: { external_id: 'u3', row: '3' }, errors: ['events[1].time is not ISO 8601'] },
      {
        file: 'in.csv',
        line: 2,
        kind: 'attributes',
        row: { external_id: 'u0', row: '0' },
        errors: ['attributes[0].dob is not a date', 'attributes[0].language unknown'],
      },
    ]);
    expect(joined.rejectedPerKind).toEqual({ attributes: 1, events: 1, purchases: 0 });
    expect(joined.unmatched).toEqual([]);
  });

  it('reports errors that name no item instead of guessing', () => {
    const joined = joinMinorErrors(request, [
      { type: 'x', input_array: 'purchases', index: 0 },
      { type: 'y', input_array: 'events', index: 99 },
      'a bare string',
    ]);
    expect(joined.rejects).toEqual([]);
    expect(joined.unmatched).toHaveLength(3);
  });

  it('names the place in its line of an item of a RequestLine (a request-shaped NDJSON line)', () => {
    const row = { external_id: 'u9', name: 'e' };
    const origins = { attributes: [], events: [0, 1, 2].map((item) => ({ file: 'r.ndjson', line: 7, row, item })), purchases: [] };
    const fromLine = { ...request, origins };
    expect(joinMinorErrors(fromLine, [{ type: 'events[2].name is bad', input_array: 'events', index: 2 }]).rejects).toEqual([
      { file: 'r.ndjson', line: 7, item: 2, kind: 'events', row, errors: ['events[2].name is bad'] },
    ]);
    expect(wholeRequestRejects(fromLine, 'HTTP 400').map((r) => r.item)).toEqual([0, 1, 2]);
  });

  it('has nothing to join without errors', () => {
    expect(joinMinorErrors(request, undefined).rejects).toEqual([]);
  });
});

describe('request-wide rejects and counts', () => {
  const [request] = buildPlan({ requests: 1, itemsPer: 3, file: 'in.csv' });

  it('rejects every item with the message', () => {
    const rejects = wholeRequestRejects(request, 'HTTP 413: too large');
    expect(rejects.map((r) => [r.line, r.kind, r.errors])).toEqual([
      [2, 'attributes', ['HTTP 413: too large']],
      [4, 'attributes', ['HTTP 413: too large']],
      [3, 'events', ['HTTP 413: too large']],
    ]);
  });

  it('counts items per kind and distinct rows', () => {
    expect(itemCounts(request)).toEqual({ attributes: 2, events: 1, purchases: 0 });
    const twoItemsOneRow = { ...request, origins: { ...request.origins, events: [request.origins.attributes[0]] } };
    expect(distinctRows(twoItemsOneRow)).toBe(2);
  });
});
