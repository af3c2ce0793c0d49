// Finds (or creates) the profile an item names (spec 2.3, 4; decisions.md "Identifying the user").
import { identityOf, type ArrayName, type Identity } from '../model/index.js';
import type { EditableProfile } from './profile-rows.js';
import type { Store } from './store.js';

/**
 * Whether an item may only update an existing profile: `_update_existing_only` when given, else
 * true for user_alias (spec 2.3) and false otherwise.
 */
export function updateOnly(item: Record<string, unknown>, identity: Identity): boolean {
  if (typeof item._update_existing_only === 'boolean') return item._update_existing_only;
  return identity.by === 'user_alias';
}

/** spec 4 rule 4: the most recently updated profile with an external ID, else the most recently updated. */
function pickShared(candidates: { id: number; externalId: string | null }[]): number | undefined {
  return (candidates.find((p) => p.externalId !== null) ?? candidates[0])?.id;
}

/**
 * The profile an accepted attributes item applies to (found by its id, cached, when it is named by
 * external_id). A new one named by external_id is not inserted yet: saving it does, with its attributes.
 */
export function resolveProfile(store: Store, item: Record<string, unknown>): EditableProfile | undefined {
  // a push token import never comes here: it makes temporary profiles of its own (apply.ts)
  if (typeof item.external_id === 'string') {
    const found = store.editableByExternalId(item.external_id);
    if (found !== undefined) return found;
    // what resolveProfileId() decides for an item named by external_id
    return item._update_existing_only === true ? undefined : store.newProfile({ externalId: item.external_id });
  }
  const id = resolveProfileId(store, item, 'attributes');
  return id === undefined ? undefined : store.profileById(id);
}

/** What resolveProfileId gives when asked not to create (`create` false) where it would make a profile: no profile's id. */
export const WOULD_CREATE = 0;

/**
 * The id of the profile an accepted item of `kind` applies to, created where the rules allow, or
 * undefined when the item changes nothing (update-only with no profile, or a service_id that names
 * no one). An attributes item with push_token_import never comes here (apply.ts imports its tokens).
 * `create` false: nothing is made, and WOULD_CREATE stands for the profile that would be.
 */
export function resolveProfileId(store: Store, item: Record<string, unknown>, kind: ArrayName, create = true): number | undefined {
  /** The profile made where the rules allow one (WOULD_CREATE when asked not to make it). */
  const made = (init: Parameters<Store['createProfile']>[0]): number => (create ? store.createProfile(init).id : WOULD_CREATE);
  const externalId = item.external_id;
  if (typeof externalId === 'string') {
    // what identityOf() and updateOnly() decide for an item named by external_id, without building its identity
    const found = store.idByExternalId(externalId);
    if (found !== undefined || item._update_existing_only === true) return found;
    return made({ externalId });
  }
  const identity = identityOf(item, kind);
  const onlyUpdate = updateOnly(item, identity);
  switch (identity.by) {
    case 'external_id':
      return store.idByExternalId(identity.value) ?? (onlyUpdate ? undefined : made({ externalId: identity.value }));
    case 'user_alias': {
      const found = store.idByAlias(identity.value);
      if (found !== undefined || onlyUpdate) return found;
      // spec 2.3: `_update_existing_only: false` with a user_alias creates an alias-only user
      const id = made({});
      if (id !== WOULD_CREATE) store.addAlias(id, identity.value);
      return id;
    }
    case 'service_id':
      return store.idByServiceId(identity.value); // decisions.md: cannot create one
    case 'email':
    case 'phone':
      // spec 4 rule 5: none yet, so an email-only (or phone-only) profile with that field set and no alias
      return (
        pickShared(store.profilesSharing(identity.by, identity.value)) ??
        (onlyUpdate ? undefined : made(identity.by === 'email' ? { email: identity.value, emailAsSent: item.email as string } : { phone: identity.value }))
      );
    case 'anonymous':
      return undefined;
  }
}

/**
 * The profile an attributes item would change, nothing made or changed yet: the one it names (one
 * named by external_id and not there yet, in memory only, as resolveProfile makes it), 'new' when one
 * would be made for it, undefined when it changes none (see resolveProfileId).
 */
export function profileToChange(store: Store, item: Record<string, unknown>): EditableProfile | 'new' | undefined {
  if (typeof item.external_id === 'string') return resolveProfile(store, item);
  const id = resolveProfileId(store, item, 'attributes', false);
  return id === undefined ? undefined : id === WOULD_CREATE ? 'new' : store.profileById(id);
}
