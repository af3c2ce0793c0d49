// Attributes objects: control fields, standard profile fields and custom attribute values
// (spec 2.3; decisions.md "Attributes").
import { describe, expect, it } from 'vitest';
import { TEXT_FIELDS, isCustomAttributeName, itemProblems } from '../../src/model/index.js';
import { attrs, expectAccepted, expectRejected } from './items.js';

describe('control fields must be booleans', () => {
  it.each(['_update_existing_only', '_merge_objects', 'push_token_import'])('accepts %s: false', (field) => {
    expectAccepted('attributes', attrs({ [field]: false }));
  });

  it.each(['_update_existing_only', '_merge_objects'])('accepts %s: true', (field) => {
    expectAccepted('attributes', attrs({ [field]: true }));
  });

  it('accepts push_token_import: true on an anonymous item with a token', () => {
    expectAccepted('attributes', { push_token_import: true, push_tokens: [{ app_id: 'app-1', token: 'tok-1' }] });
  });

  it.each(['_update_existing_only', '_merge_objects', 'push_token_import'])('rejects %s given as a non-boolean', (field) => {
    for (const value of ['true', 1, 0, null, 'yes', {}]) {
      expectRejected('attributes', attrs({ [field]: value }), new RegExp(`^${field}: must be true or false`));
    }
  });

  it('accepts _update_existing_only with a user_alias', () => {
    expectAccepted('attributes', { user_alias: { alias_name: 'a', alias_label: 'b' }, _update_existing_only: false });
  });
});

describe('custom attribute values', () => {
  it.each([
    ['a string', 'jazz'],
    ['an empty string', ''],
    ['a string of 255 characters', 'x'.repeat(255)],
    ['a string of 255 two-byte characters', 'é'.repeat(255)],
    ['a string of 255 emoji (255 characters, 510 UTF-16 units)', '😀'.repeat(255)],
    ['an ISO 8601 time string', '2024-03-07T10:00:00Z'],
    ['an integer', 42],
    ['a negative decimal', -1.5],
    ['true', true],
    ['false', false],
    ['null (removes the attribute)', null],
    ['an array of scalars', ['jazz', 'blues', 3, true]],
    ['an empty array', []],
    ['an array holding strings of 255 characters', ['x'.repeat(255)]],
    ['an array of objects', [{ name: 'Hotel Ritz', date: '2024-01-10', nights: 2 }, { name: 'Inn', date: '2024-02-01', nights: 1 }]],
    ['a nested object', { address: { city: 'Lisbon', geo: { lat: 38.7, lon: -9.1 } }, tags: ['a'] }],
    ['an empty object', {}],
    ['an increment by a positive integer', { inc: 1 }],
    ['an increment by a negative integer', { inc: -5 }],
    ['an increment by zero', { inc: 0 }],
    ['an add of scalars', { add: ['jazz', 2, false] }],
    ['a remove of scalars', { remove: ['jazz'] }],
    ['an add of nothing', { add: [] }],
    ['a $time with Z', { $time: '2024-03-07T10:00:00Z' }],
    ['a $time with an offset', { $time: '2024-03-07T10:00:00+02:00' }],
    ['an object with inc and another key (a nested value, not an operation)', { inc: 'x', label: 'y' }],
  ])('accepts %s', (_label, value) => {
    expectAccepted('attributes', attrs({ favourite: value }));
  });

  it.each([
    ['a string of 256 characters', 'x'.repeat(256)],
    ['a string of 256 emoji', '😀'.repeat(256)],
    ['an increment by a decimal', { inc: 1.5 }],
    ['an increment by a numeric string', { inc: '1' }],
    ['an increment by null', { inc: null }],
    ['an increment by a boolean', { inc: true }],
    ['an add of a string, not an array', { add: 'jazz' }],
    ['an add of objects', { add: [{ a: 1 }] }],
    ['an add holding null', { add: ['jazz', null] }],
    ['an add of nested arrays', { add: [['jazz']] }],
    ['an add holding a string of 256 characters', { add: ['x'.repeat(256)] }],
    ['a remove of a string, not an array', { remove: 'jazz' }],
    ['a remove of objects', { remove: [{ a: 1 }] }],
    ['a $time that is not a time', { $time: 'yesterday' }],
    ['a $time that is not a real date', { $time: '2026-02-30T00:00:00Z' }],
    ['a $time given as epoch seconds', { $time: 1709805600 }],
    ['a $time in a free-form date', { $time: 'Mar 7 2024 10:00' }],
    ['an array mixing scalars and objects', ['jazz', { a: 1 }]],
    ['an array holding null', ['jazz', null]],
    ['an array of arrays', [['jazz'], ['blues']]],
    ['an array holding a string of 256 characters', ['x'.repeat(256)]],
  ])('rejects %s', (_label, value) => {
    expectRejected('attributes', attrs({ favourite: value }), /^favourite(\.add|\.remove)?:/);
  });

  it.each([
    ['255 characters', 'a'.repeat(255)],
    ['255 emoji', '🎵'.repeat(255)],
  ])('accepts a custom attribute name of %s', (_label, name) => {
    expectAccepted('attributes', attrs({ [name]: 1 }));
  });

  it('rejects an empty custom attribute name, naming it', () => {
    expectRejected('attributes', attrs({ '': 1 }), /^"": custom attribute names are 1 to 255 characters/);
  });

  it('rejects a custom attribute name of 256 characters, starting the message with the shortened name', () => {
    const name = `${'n'.repeat(40)}${'x'.repeat(216)}`;
    expectRejected('attributes', attrs({ [name]: 1 }), new RegExp(`^${'n'.repeat(40)}\\.\\.\\.: custom attribute names`));
  });

  it('names the custom attribute that broke a rule among valid ones', () => {
    const problems = itemProblems('attributes', attrs({ genre: 'jazz', plays: { inc: 2 }, score: { inc: 0.5 } }));
    expect(problems).toEqual([expect.stringMatching(/^score: inc takes an integer/)]);
  });

  it.each([
    ['past 2^53', 2 ** 53],
    ['far past it', 1e308],
    ['below -2^53', -(2 ** 53)],
  ])('rejects an inc %s (not exact, and a sum could overflow to Infinity)', (_label, operand) => {
    expectRejected('attributes', attrs({ score: { inc: operand } }), /^score: inc takes an integer from -9007199254740991 to 9007199254740991/);
  });

  it('accepts an inc of the largest safe integer, either sign', () => {
    expectAccepted('attributes', attrs({ up: { inc: Number.MAX_SAFE_INTEGER }, down: { inc: -Number.MAX_SAFE_INTEGER } }));
  });

  it('tells custom attribute names from identifier, control and standard fields', () => {
    for (const name of ['external_id', 'email', 'phone', '_merge_objects', 'push_token_import', 'dob', 'language', 'push_tokens']) {
      expect(isCustomAttributeName(name)).toBe(false);
    }
    for (const name of ['favourite', 'app_id', 'name', 'nights_stayed']) {
      expect(isCustomAttributeName(name)).toBe(true);
    }
  });
});

describe('standard text fields', () => {
  it.each(TEXT_FIELDS)('accepts %s as text or null', (field) => {
    expectAccepted('attributes', attrs({ [field]: 'Ada' }));
    expectAccepted('attributes', attrs({ [field]: 'x'.repeat(255) }));
    expectAccepted('attributes', attrs({ [field]: null }));
  });

  it.each(TEXT_FIELDS.filter((field) => field !== 'country' && field !== 'time_zone'))('rejects %s that is empty, too long or not a string', (field) => {
    for (const value of ['', 'x'.repeat(256), 42, ['Ada']]) {
      expectRejected('attributes', attrs({ [field]: value }), new RegExp(`^${field}:`));
    }
  });

  it.each(['country', 'time_zone'])('accepts any %s: one the service does not know is not kept as sent, with no error (decisions.md)', (field) => {
    for (const value of ['', 'x'.repeat(256), 42, ['Ada'], { a: 1 }]) expectAccepted('attributes', attrs({ [field]: value }));
  });

  it('covers the standard names decisions.md adds', () => {
    expect([...TEXT_FIELDS].sort()).toEqual(['country', 'first_name', 'gender', 'home_city', 'last_name', 'time_zone']);
  });
});

describe('email and phone as profile fields beside a primary identifier', () => {
  it.each([
    ['email', 'ada@example.com'],
    ['phone', '+1 (415) 555-2671'],
    ['phone', '+442079460958'],
  ])('accepts a valid %s %j', (field, value) => {
    expectAccepted('attributes', attrs({ [field]: value }));
  });

  it.each([
    ['email', 'not-an-email'],
    ['phone', '+1 555'],
    ['phone', '12345'],
    ['phone', '+1 555 555 5555'],
    ['phone', 14155552671],
  ])('rejects an invalid %s %j', (field, value) => {
    expectRejected('attributes', attrs({ [field]: value }), new RegExp(`^${field}:`));
  });
});

describe('dob', () => {
  it.each(['2024-02-29', '1990-12-31', '2000-02-29', '1985-01-01', null])('accepts %j', (dob) => {
    expectAccepted('attributes', attrs({ dob }));
  });

  it.each([
    '2023-02-29',
    '1900-02-29',
    '1990-04-31',
    '1990-13-01',
    '1990-00-10',
    '1990-1-5',
    '12/31/1990',
    '1990-12-31T00:00:00Z',
    '',
    19901231,
  ])('rejects %j', (dob) => {
    expectRejected('attributes', attrs({ dob }), /^dob: must be a real date in YYYY-MM-DD form/);
  });
});

describe('language', () => {
  it.each(['en', 'fr', 'zh', 'pt', 'yo', null])('accepts %j', (language) => {
    expectAccepted('attributes', attrs({ language }));
  });

  it.each(['EN', 'En', 'xx', 'eng', 'en-US', 'en_US', '', 1])('rejects %j', (language) => {
    expectRejected('attributes', attrs({ language }), /^language:/);
  });
});

describe.each(['email_subscribe', 'push_subscribe'])('%s', (field) => {
  it.each(['opted_in', 'subscribed', 'unsubscribed', null])('accepts %j', (value) => {
    expectAccepted('attributes', attrs({ [field]: value }));
  });

  it.each(['Subscribed', 'opted_out', 'opt_in', '', true])('rejects %j', (value) => {
    expectRejected('attributes', attrs({ [field]: value }), new RegExp(`^${field}: must be opted_in, subscribed or unsubscribed`));
  });
});

describe('push_tokens', () => {
  it.each([
    ['one token', [{ app_id: 'app-1', token: 'tok-1' }]],
    ['a token with a device_id', [{ app_id: 'app-1', token: 'tok-1', device_id: 'dev-1' }]],
    ['two tokens', [{ app_id: 'app-1', token: 'tok-1' }, { app_id: 'app-2', token: 'tok-2' }]],
    ['no tokens', []],
  ])('accepts %s', (_label, pushTokens) => {
    expectAccepted('attributes', attrs({ push_tokens: pushTokens }));
  });

  it.each([
    ['a token without app_id', [{ token: 'tok-1' }], /^push_tokens\[0\]\.app_id:/],
    ['a token without token', [{ app_id: 'app-1' }], /^push_tokens\[0\]\.token:/],
    ['an empty token', [{ app_id: 'app-1', token: '' }], /^push_tokens\[0\]\.token:/],
    ['a numeric app_id', [{ app_id: 7, token: 'tok-1' }], /^push_tokens\[0\]\.app_id:/],
    ['a numeric device_id', [{ app_id: 'app-1', token: 'tok-1', device_id: 5 }], /^push_tokens\[0\]\.device_id:/],
    ['a broken second token', [{ app_id: 'app-1', token: 'tok-1' }, { app_id: 'app-1' }], /^push_tokens\[1\]\.token:/],
    ['a string element', ['tok-1'], /^push_tokens\[0\]:/],
    ['a single object, not an array', { app_id: 'app-1', token: 'tok-1' }, /^push_tokens:/],
    ['a string, not an array', 'tok-1', /^push_tokens:/],
  ])('rejects %s', (_label, pushTokens, field) => {
    expectRejected('attributes', attrs({ push_tokens: pushTokens }), field);
  });
});

describe('subscription_groups', () => {
  it.each([
    ['subscribed', [{ subscription_group_id: 'grp-1', subscription_state: 'subscribed' }]],
    ['unsubscribed', [{ subscription_group_id: 'grp-1', subscription_state: 'unsubscribed' }]],
    [
      'two groups',
      [
        { subscription_group_id: 'grp-1', subscription_state: 'subscribed' },
        { subscription_group_id: 'grp-2', subscription_state: 'unsubscribed' },
      ],
    ],
  ])('accepts %s', (_label, groups) => {
    expectAccepted('attributes', attrs({ subscription_groups: groups }));
  });

  it.each([
    ['a group without id', [{ subscription_state: 'subscribed' }], /^subscription_groups\[0\]\.subscription_group_id:/],
    ['an empty id', [{ subscription_group_id: '', subscription_state: 'subscribed' }], /^subscription_groups\[0\]\.subscription_group_id:/],
    ['a group without state', [{ subscription_group_id: 'grp-1' }], /^subscription_groups\[0\]\.subscription_state:/],
    ['the state opted_in', [{ subscription_group_id: 'grp-1', subscription_state: 'opted_in' }], /^subscription_groups\[0\]\.subscription_state:/],
    ['the state Subscribed', [{ subscription_group_id: 'grp-1', subscription_state: 'Subscribed' }], /^subscription_groups\[0\]\.subscription_state:/],
    [
      'a broken second group',
      [{ subscription_group_id: 'grp-1', subscription_state: 'subscribed' }, { subscription_group_id: 'grp-2', subscription_state: 'maybe' }],
      /^subscription_groups\[1\]\.subscription_state:/,
    ],
    ['a string element', ['grp-1'], /^subscription_groups\[0\]:/],
    ['a single object, not an array', { subscription_group_id: 'grp-1', subscription_state: 'subscribed' }, /^subscription_groups:/],
  ])('rejects %s', (_label, groups, field) => {
    expectRejected('attributes', attrs({ subscription_groups: groups }), field);
  });
});
