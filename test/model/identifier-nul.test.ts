// A NUL character in any identifier is refused by the shared validator, naming the field.
import { describe, expect, it } from 'vitest';
import { itemProblems } from '../../src/model/validate.js';

describe('identifiers holding U+0000', () => {
  it('are refused, each naming its field; NUL elsewhere is text like any other', () => {
    expect(itemProblems('attributes', { external_id: 'u1\u0000' })).toEqual(['external_id: must not hold a NUL character (U+0000)']);
    expect(itemProblems('events', { user_alias: { alias_name: 'a', alias_label: 'l\u0000' }, name: 'e', time: '2024-03-07T10:00:00Z' })).toEqual([
      'user_alias.alias_label: must not hold a NUL character (U+0000)',
    ]);
    expect(itemProblems('attributes', { service_id: '\u0000s' })).toEqual(['service_id: must not hold a NUL character (U+0000)']);
    expect(itemProblems('attributes', { email: 'a\u0000b@example.com' })).toContain('email: must not hold a NUL character (U+0000)');
    expect(itemProblems('attributes', { external_id: 'u1', nickname: 'a\u0000b' })).toEqual([]);
  });
});
