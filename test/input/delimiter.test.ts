// Delimiters: given, or read from the header line.
import { describe, expect, it } from 'vitest';
import { detectDelimiter, readCsv, type Delimiter } from '../../src/input/csv.js';
import { chunksOf, collect } from './helpers.js';

describe('delimiters', () => {
  it('detects the one the header line uses most outside quotes, a comma when none or on a tie', () => {
    expect(detectDelimiter('a;b;c')).toBe(';');
    expect(detectDelimiter('a\tb\tc')).toBe('\t');
    expect(detectDelimiter('a|b|c')).toBe('|');
    expect(detectDelimiter('"a;b";c,d,e')).toBe(',');
    expect(detectDelimiter('"x,y";"z,w";v')).toBe(';');
    expect(detectDelimiter('email')).toBe(',');
    expect(detectDelimiter('a,b;c')).toBe(',');
  });

  it('prefers a delimiter that splits out a column naming the user over one used more often', () => {
    expect(detectDelimiter('external_id;Company, Inc, Ltd')).toBe(';');
    expect(detectDelimiter('Email;Notes, more, still more')).toBe(';');
    expect(detectDelimiter('external_id,a;b;c')).toBe(',');
    expect(detectDelimiter('id;Company, Inc, Ltd')).toBe(',');
  });

  it('reads a file with the detected delimiter, the header split across chunks, and says which it used', async () => {
    let found: Delimiter | undefined;
    const text = 'external_id;tags;note\nu1;"a;b";x,y\nu2;c;"q ""r"" s"\n';
    const rows = await collect(readCsv(chunksOf(text, 5), 't.csv', { detected: (d) => (found = d) }));
    expect(found).toBe(';');
    expect(rows).toEqual([
      { line: 1, cells: ['external_id', 'tags', 'note'] },
      { line: 2, cells: ['u1', 'a;b', 'x,y'] },
      { line: 3, cells: ['u2', 'c', 'q "r" s'] },
    ]);
  });

  it('a delimiter given is used as it is', async () => {
    const rows = await collect(readCsv(chunksOf('a;b|c\n1;2|3\n'), 't.csv', { delimiter: '|' }));
    expect(rows.map((r) => ('cells' in r ? r.cells : r))).toEqual([['a;b', 'c'], ['1;2', '3']]);
  });
});
