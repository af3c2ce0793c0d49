// Push tokens, push_token_import (spec 2.5) and subscription groups (spec 2.3).
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupPushImports } from '../../src/emulator/inspect.js';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler;
afterEach(() => h?.close());

const token = (t: string) => ({ app_id: 'app', token: t });
const importOf = (...tokens: string[]) => ({ push_token_import: true, push_tokens: tokens.map(token) });

describe('push tokens', () => {
  it('stores tokens on an identified user', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', push_tokens: [{ app_id: 'app', token: 't1', device_id: 'd1' }] }] });
    expect(h.user('u')?.push_tokens).toEqual([{ app_id: 'app', token: 't1', device_id: 'd1' }]);
  });

  it('creates a temporary anonymous profile for each new imported token, and ignores a known one', () => {
    h = testHandler();
    const r = h.track({ attributes: [importOf('t1', 't2')] });
    expect(r.body).toEqual({ message: 'success', attributes_processed: 1 });
    expect(h.store.counts().profiles).toBe(2);
    h.track({ attributes: [importOf('t1')] });
    expect(h.store.counts().profiles).toBe(2);
    expect(h.store.allProfiles().every((p) => p.pushImport)).toBe(true);
  });

  it('refuses an import with external_id or without a token (rules 1 and 2)', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ ...importOf('t1'), external_id: 'u' }, { push_token_import: true }] });
    expect(r.body.errors.map((e: { index: number }) => e.index)).toEqual([0, 1]);
    expect(h.store.counts().profiles).toBe(0);
  });

  it('moves an imported token to the identified user who uploads it, and the clean-up deletes the emptied profile', () => {
    h = testHandler();
    h.track({ attributes: [importOf('t1', 't2')] });
    h.track({ attributes: [{ external_id: 'u', push_tokens: [token('t1')] }] });
    // the token keeps the device_id it was given when it was imported without one
    const imported = h.store.pushToken('app', 't1')?.deviceId;
    expect(imported).toMatch(/^[0-9a-f]{32}$/);
    expect(h.user('u')?.push_tokens).toEqual([{ app_id: 'app', token: 't1', device_id: imported }]);
    expect(h.store.pushToken('app', 't1')?.profileId).toBe(h.store.profileByExternalId('u')!.id);
    expect(cleanupPushImports(h.store)).toEqual({ deleted: 1, kept: 1 });
    expect(h.store.counts().profiles).toBe(2);
    expect(h.store.pushToken('app', 't2')).toBeDefined();
  });
});

describe('subscription groups', () => {
  it('applies to the user and every profile with the same email, and to no other', () => {
    h = testHandler();
    h.track({
      attributes: [
        { external_id: 'a', email: 'same@x.com' },
        { external_id: 'b', email: 'SAME@x.com' },
        { external_id: 'c', email: 'other@x.com' },
      ],
    });
    h.track({ attributes: [{ external_id: 'a', subscription_groups: [{ subscription_group_id: 'g1', subscription_state: 'subscribed' }] }] });
    const sub = [{ subscription_group_id: 'g1', subscription_state: 'subscribed' }];
    expect(h.user('a')?.subscription_groups).toEqual(sub);
    expect(h.user('b')?.subscription_groups).toEqual(sub);
    expect(h.user('c')?.subscription_groups).toEqual([]);
    h.track({ attributes: [{ external_id: 'b', subscription_groups: [{ subscription_group_id: 'g1', subscription_state: 'unsubscribed' }] }] });
    expect(h.user('a')?.subscription_groups).toEqual([{ subscription_group_id: 'g1', subscription_state: 'unsubscribed' }]);
  });

  it('refuses a state other than subscribed or unsubscribed', () => {
    h = testHandler();
    const r = h.track({ attributes: [{ external_id: 'a', subscription_groups: [{ subscription_group_id: 'g1', subscription_state: 'opted_in' }] }] });
    expect(r.body.errors[0].type).toMatch(/subscription_state/);
    expect(h.user('a')).toBeUndefined();
  });
});
