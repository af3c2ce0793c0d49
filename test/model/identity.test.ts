// Identifying the user of an item (spec 2.3, 2.5, 4; decisions.md "Identifying the user").
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ARRAY_NAMES,
  identityHash,
  identityKey,
  identityOf,
  emailProblem,
  isPlausibleEmail,
  itemProblems,
  normalizeEmail,
  normalizePhone,
  primaryIdentifiersIn,
  textHash,
} from '../../src/model/index.js';
import { attrs, bareItem, expectAccepted, expectRejected } from './items.js';

const ALIAS = { alias_name: 'ada@old-crm', alias_label: 'crm' };
const PUSH_TOKENS = [{ app_id: 'app-1', token: 'tok-1' }];

describe.each([...ARRAY_NAMES])('identifier presence in %s', (kind) => {
  it.each([
    ['external_id', { external_id: 'user-9' }],
    ['user_alias', { user_alias: ALIAS }],
    ['service_id', { service_id: '5f0c0e3e8b1a2c0011aa22bb' }],
    ['email', { email: 'ada@example.com' }],
    ['phone', { phone: '+1 (415) 555-2671' }],
  ])('accepts an item identified by %s alone', (_label, identifier) => {
    expectAccepted(kind, bareItem(kind, identifier));
  });

  it('rejects an item with no identifier', () => {
    const error = expectRejected(kind, bareItem(kind, {}), /^external_id: missing/);
    expect(error.type).toContain('external_id, user_alias, service_id, email, phone');
  });

  it('rejects an item whose only identifiers are null', () => {
    expectRejected(kind, bareItem(kind, { email: null, phone: null }), /^external_id: missing/);
  });

  it.each([
    ['external_id and user_alias', { external_id: 'user-9', user_alias: ALIAS }, ['external_id', 'user_alias']],
    ['external_id and service_id', { external_id: 'user-9', service_id: 'b-1' }, ['external_id', 'service_id']],
    ['user_alias and service_id', { user_alias: ALIAS, service_id: 'b-1' }, ['user_alias', 'service_id']],
    ['all three', { external_id: 'user-9', user_alias: ALIAS, service_id: 'b-1' }, ['external_id', 'user_alias', 'service_id']],
  ])('rejects more than one primary identifier (%s) as a minor error', (_label, identifiers, names) => {
    const error = expectRejected(kind, bareItem(kind, identifiers), new RegExp(`^${names.join(', ')}:`));
    expect(error.type).toMatch(/exactly one of external_id, user_alias, service_id/);
  });

  it('accepts one primary identifier together with email and phone', () => {
    expectAccepted(kind, bareItem(kind, { external_id: 'user-9', email: 'ada@example.com', phone: '+14155552671' }));
  });

  it('accepts email and phone together without a primary (email identifies)', () => {
    expectAccepted(kind, bareItem(kind, { email: 'ada@example.com', phone: '+1 (415) 555-2671' }));
  });

  it.each([
    ['a string with no @', 'ada.example.com'],
    ['a string with a space', 'ada lovelace@example.com'],
    ['a string with no domain dot', 'ada@example'],
    ['a string with a space at its end', 'ada@example.com '],
    ['a string with a tab at its start', '\tada@example.com'],
    ['a string with a line break at its end', 'ada@example.com\r\n'],
    ['a string with a no-break space at its end', 'ada@example.com\u00a0'],
    ['a local part starting with a period', '.ada@example.com'],
    ['a local part ending with a period', 'ada.@example.com'],
    ['a domain that is not in Punycode', 'ada@exämple.com'],
    ['an empty string', ''],
    ['a number', 42],
  ])('rejects an email identifier that is %s', (_label, email) => {
    expectRejected(kind, bareItem(kind, { email }), /^email:/);
  });

  it.each([
    ['too short', '+1 555'],
    ['without a country code', '12345'],
    ['the right length but not a real number (area code 123)', '+1 123 456 7890'],
    ['letters', 'call me'],
    ['a number, not a string', 14155552671],
    ['ten digits that are no valid U.S. number', '1234567890'],
    ['a national number of another country (London)', '2071838750'],
    ['eleven digits with the U.S. country code but no +', '14155552671'],
    ['a 10-digit Canadian number without a country code', '6135550123'],
    ['a 10-digit Jamaican number without a country code (a +1 number, not a U.S. one)', '(876) 234-5678'],
  ])('rejects a phone identifier that is %s', (_label, phone) => {
    expectRejected(kind, bareItem(kind, { phone }), /^phone:/);
  });

  it.each([
    ['punctuated', '+1 (415) 555-2671'],
    ['E.164', '+14155552671'],
    ['a UK number', '+44 20 7946 0958'],
    ['a Jamaican number with its country code', '+1 876 234 5678'],
    ['a valid 10-digit U.S. number without a country code', '4155552671'],
    ['a punctuated 10-digit U.S. number without a country code', '(415) 555-2671'],
    ["a U.S. territory's 10-digit number without a country code (Puerto Rico)", '787-234-5678'],
    ['a toll-free number without a country code', '800-234-5678'],
  ])('accepts a phone identifier that is %s', (_label, phone) => {
    expectAccepted(kind, bareItem(kind, { phone }));
  });

  it('rejects an invalid phone even when a valid email identifies the item', () => {
    expectRejected(kind, bareItem(kind, { email: 'ada@example.com', phone: '+1 555' }), /^phone:/);
  });

  it('rejects an invalid phone or email given as a field beside a primary identifier', () => {
    expectRejected(kind, bareItem(kind, { external_id: 'user-9', phone: '12345' }), /^phone:/);
    expectRejected(kind, bareItem(kind, { external_id: 'user-9', email: 'not-an-email' }), /^email:/);
  });

  it.each([
    ['987 ASCII bytes', 'a'.repeat(987)],
    ['493 two-byte characters and one ASCII (987 bytes)', 'é'.repeat(493) + 'a'],
    ['329 three-byte characters (987 bytes)', '中'.repeat(329)],
    ['246 four-byte characters and three ASCII (987 bytes)', '😀'.repeat(246) + 'abc'],
  ])('accepts an external_id of %s', (_label, externalId) => {
    expectAccepted(kind, bareItem(kind, { external_id: externalId }));
  });

  it.each([
    ['988 ASCII bytes', 'a'.repeat(988)],
    ['494 two-byte characters (988 bytes, 494 characters)', 'é'.repeat(494)],
    ['330 three-byte characters (990 bytes)', '中'.repeat(330)],
    ['247 four-byte characters (988 bytes)', '😀'.repeat(247)],
  ])('rejects an external_id of %s', (_label, externalId) => {
    expectRejected(kind, bareItem(kind, { external_id: externalId }), /^external_id: must be at most 987 bytes/);
  });

  it.each([
    ['external_id', ''],
    ['external_id', 12345],
    ['service_id', ''],
    ['service_id', 5],
  ])('rejects %s given as %j', (field, value) => {
    expectRejected(kind, bareItem(kind, { [field]: value }), new RegExp(`^${field}:`));
  });

  it.each([
    ['a string', 'ada'],
    ['an array', [ALIAS]],
    ['missing alias_label', { alias_name: 'ada' }],
    ['missing alias_name', { alias_label: 'crm' }],
    ['an empty alias_name', { alias_name: '', alias_label: 'crm' }],
  ])('rejects a user_alias that is %s', (_label, userAlias) => {
    expectRejected(kind, bareItem(kind, { user_alias: userAlias }), /^user_alias/);
  });
});

describe('null identifiers', () => {
  it.each(['external_id', 'user_alias', 'service_id'])(
    'rejects %s: null on attributes: an identifier cannot be removed',
    (field) => {
      const error = expectRejected('attributes', { email: 'ada@example.com', [field]: null }, new RegExp(`^${field}:`));
      expect(error.type).toMatch(/cannot be removed/);
    },
  );

  it('accepts null on a custom attribute beside the identifiers (removal is allowed there)', () => {
    expectAccepted('attributes', attrs({ favourite_colour: null }));
  });

  it.each(['events', 'purchases'] as const)('rejects external_id: null on %s', (kind) => {
    expectRejected(kind, bareItem(kind, { email: 'ada@example.com', external_id: null }), /^external_id:/);
  });
});

describe('push token import (spec 2.5)', () => {
  it('accepts an anonymous import with no identifier at all', () => {
    expectAccepted('attributes', { push_token_import: true, push_tokens: PUSH_TOKENS });
  });

  it('accepts email and phone on an anonymous import (fields of the temporary profile)', () => {
    expectAccepted('attributes', { push_token_import: true, push_tokens: PUSH_TOKENS, email: 'ada@example.com', phone: '+14155552671' });
  });

  it.each(['external_id', 'service_id'])('rejects %s on an anonymous import (rule 1)', (field) => {
    const error = expectRejected(
      'attributes',
      { push_token_import: true, push_tokens: PUSH_TOKENS, [field]: 'user-9' },
      new RegExp(`^${field}:`),
    );
    expect(error.type).toMatch(/push_token_import/);
  });

  it.each([
    ['no push_tokens', {}],
    ['an empty push_tokens array', { push_tokens: [] }],
  ])('rejects an anonymous import with %s (rule 2)', (_label, extra) => {
    expectRejected('attributes', { push_token_import: true, ...extra }, /^push_tokens:/);
  });

  it.each(['events', 'purchases'] as const)('gives push_token_import no meaning on %s: an identifier is still needed, and one is enough', (kind) => {
    expectRejected(kind, bareItem(kind, { push_token_import: true }), /^external_id: missing/);
    expectAccepted(kind, bareItem(kind, { push_token_import: true, external_id: 'u4' }));
  });

  it('needs an identifier when push_token_import is false', () => {
    expectRejected('attributes', { push_token_import: false, push_tokens: PUSH_TOKENS }, /^external_id: missing/);
    expectAccepted('attributes', { push_token_import: false, external_id: 'user-9', push_tokens: PUSH_TOKENS });
  });

  it('accepts push tokens on an identified user without push_token_import', () => {
    expectAccepted('attributes', attrs({ push_tokens: PUSH_TOKENS }));
  });

  it('reports every problem of a broken import through itemProblems', () => {
    const problems = itemProblems('attributes', { push_token_import: true, external_id: 'user-9', service_id: 'b-1' });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^external_id: must not be given when push_token_import is true/),
        expect.stringMatching(/^service_id: must not be given when push_token_import is true/),
        expect.stringMatching(/^push_tokens: required/),
      ]),
    );
  });
});

describe('identityOf', () => {
  it.each([
    ['external_id', { external_id: 'user-9', email: 'ada@example.com' }, { by: 'external_id', value: 'user-9' }],
    ['user_alias', { user_alias: ALIAS, phone: '+14155552671' }, { by: 'user_alias', value: ALIAS }],
    ['service_id', { service_id: 'b-1', email: 'ada@example.com' }, { by: 'service_id', value: 'b-1' }],
    ['email over phone', { email: 'Ada@Example.COM', phone: '+14155552671' }, { by: 'email', value: 'ada@example.com' }],
    ['phone, in E.164', { phone: '+1 (415) 555-2671' }, { by: 'phone', value: '+14155552671' }],
    ['a 10-digit U.S. phone, in E.164', { phone: '415 555 2671' }, { by: 'phone', value: '+14155552671' }],
    ['anonymous import', { push_token_import: true, email: 'ada@example.com', push_tokens: PUSH_TOKENS }, { by: 'anonymous' }],
  ])('names the user by %s', (_label, item, identity) => {
    expect(identityOf(item, 'attributes')).toEqual(identity);
  });

  it.each(['events', 'purchases'] as const)('names the user of %s by its identifier, push_token_import or not (spec 2.5: an attributes field)', (kind) => {
    expect(identityOf({ external_id: 'u4', push_token_import: true }, kind)).toEqual({ by: 'external_id', value: 'u4' });
    expect(identityOf({ email: 'Ann@Example.com', push_token_import: true }, kind)).toEqual({ by: 'email', value: 'ann@example.com' });
    expect(identityOf({ push_token_import: true }, kind)).toEqual({ by: 'anonymous' });
  });

  it('gives stable keys that keep different identities apart', () => {
    expect(identityKey(identityOf({ email: 'ADA@example.com' }, 'attributes'))).toBe(identityKey(identityOf({ email: 'ada@example.com' }, 'attributes')));
    expect(identityKey(identityOf({ phone: '+1 (415) 555-2671' }, 'attributes'))).toBe(identityKey(identityOf({ phone: '+14155552671' }, 'attributes')));
    expect(identityKey(identityOf({ external_id: 'a' }, 'attributes'))).not.toBe(identityKey(identityOf({ service_id: 'a' }, 'attributes')));
    expect(identityKey({ by: 'user_alias', value: { alias_name: 'a', alias_label: 'b' } })).not.toBe(
      identityKey({ by: 'user_alias', value: { alias_name: 'b', alias_label: 'a' } }),
    );
    expect(identityKey({ by: 'anonymous' })).toBe('anonymous');
  });

  it('hashes an identity as textHash of its key, without building the key, and spreads users apart', () => {
    const identities: Array<Parameters<typeof identityHash>[0]> = [
      { by: 'external_id', value: 'user-1' },
      { by: 'email', value: 'ada@example.com' },
      { by: 'phone', value: '+14155552671' },
      { by: 'service_id', value: 'svc-9' },
      { by: 'user_alias', value: { alias_name: 'a\u0000b', alias_label: 'crm' } },
      { by: 'user_alias', value: { alias_name: '', alias_label: 'é😀' } },
    ];
    for (const identity of identities) expect(identityHash(identity)).toBe(textHash(identityKey(identity)));
    const seen = new Set<number>();
    for (let i = 0; i < 200_000; i += 1) seen.add(identityHash({ by: 'external_id', value: `user-${i}` }));
    // a collision only makes a request wait for an earlier one; even so they must be rare
    expect(seen.size).toBeGreaterThan(199_900);
    expect(identityHash({ by: 'external_id', value: 'a' })).not.toBe(identityHash({ by: 'service_id', value: 'a' }));
    for (const hash of seen) expect(hash >= 0 && hash < 2 ** 30 && Number.isInteger(hash)).toBe(true);
  });

  it('lists the primary identifiers an item carries, ignoring null ones', () => {
    expect(primaryIdentifiersIn({ external_id: 'a', user_alias: null, service_id: 'b', email: 'x@y.z' })).toEqual([
      'external_id',
      'service_id',
    ]);
  });
});

describe('normalizePhone', () => {
  it.each([
    ['+1 (415) 555-2671', '+14155552671'],
    ['+14155552671', '+14155552671'],
    ['+1-415-555-2671', '+14155552671'],
    ['+44 20 7946 0958', '+442079460958'],
    ['+33 6 12 34 56 78', '+33612345678'],
    ['+49 30 123456', '+4930123456'],
    // decisions.md: a valid 10-digit U.S. number without a country code is read as U.S.
    ['4155552671', '+14155552671'],
    ['(415) 555-2671', '+14155552671'],
    [' 415.555.2671 ', '+14155552671'],
  ])('gives %j in E.164 as %j', (input, e164) => {
    expect(normalizePhone(input)).toBe(e164);
  });

  it.each(['+1 555', '12345', '', 'not a phone', '+1 415 555 26711234', '+1 123 456 7890', '+1 (415) 155-2671', '1234567890', '2071838750', '14155552671', '415555267', '4155552671 ext 2', 'tel 4155552671'])('says %j is not a valid phone number', (input) => {
    expect(normalizePhone(input)).toBeUndefined();
  });
});

describe('emails', () => {
  it('gives lookup keys in lower case', () => {
    expect(normalizeEmail('Ada@Example.COM')).toBe('ada@example.com');
  });

  it.each([
    ['ada@example.com', true],
    ['ada+tag@mail.example.co.uk', true],
    ['ada@example', false],
    ['@example.com', false],
    ['ada@@example.com', false],
    [`${'a'.repeat(250)}@example.com`, false],
    ['ada@exa mple.com', false],
    ['ada@.com', false],
    ['ada@example.', false],
    ['a@b.c', true],
    ['a@b..', true],
    ['ada.lovelace@example.com', true],
    ['ada..lovelace@example.com', true],
    // the service's documented rules: no whitespace anywhere, ASCII or Unicode; no period at either end of the local part; a Punycode domain
    [' ada@example.com\t', false],
    ['ada@example.com ', false],
    ['\u00a0ada@example.com\u00a0', false],
    ['ada@example.com\r\n', false],
    ['ada@exa\u2003mple.com', false],
    ['.ada@example.com', false],
    ['ada.@example.com', false],
    ['ada@exämple.com', false],
    ['ada@xn--exmple-cua.com', true],
    ['adä@example.com', true],
    ['用户@example.com', true],
  ])('judges %j valid: %s', (email, expected) => {
    expect(isPlausibleEmail(email)).toBe(expected);
  });

  it.each([
    ['ann@example.com ', 'a space at its end'],
    [' ann@example.com', 'a space at its start'],
    ['ann@exa mple.com', 'a space inside it'],
    ['ann@example.com\t', 'a tab at its end'],
    ['ann@example.com\r\n', 'a line break at its end'],
    ['\u00a0ann@example.com', 'a no-break space (U+00A0) at its start'],
    ['ann@example.com\u2028', 'whitespace (U+2028) at its end'],
  ])('says what is wrong with %j: it has %s', (email, what) => {
    expect(emailProblem(email)).toBe(`is not a valid email address (it has ${what})`);
  });

  it('says which rule of the local part or the domain an email breaks', () => {
    expect(emailProblem('.ann@example.com')).toBe('is not a valid email address (the part before the @ starts with a period)');
    expect(emailProblem('ann.@example.com')).toBe('is not a valid email address (the part before the @ ends with a period)');
    expect(emailProblem('ann@exämple.com')).toBe('is not a valid email address (its domain is not ASCII: give it in Punycode, xn--...)');
    expect(emailProblem('not-an-email')).toBe('is not a valid email address');
  });

  it('gives the verdict of the documented rules, written as patterns, on any text', () => {
    const documented = (text: string): boolean => {
      if (text.length > 255 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text)) return false;
      const [local, domain] = text.split('@');
      return !local.startsWith('.') && !local.endsWith('.') && /^[\x00-\x7f]+$/.test(domain);
    };
    const char = fc.constantFrom('a', 'Z', '0', '@', '.', ' ', '\t', '\n', '\r', '\u00a0', 'é', '\u2028', '\u3000', '\ufeff', '-', '+');
    fc.assert(
      fc.property(fc.array(char, { maxLength: 12 }), (chars) => {
        const text = chars.join('');
        expect(isPlausibleEmail(text)).toBe(documented(text));
      }),
      { numRuns: 20_000, seed: 7 },
    );
  });
});
