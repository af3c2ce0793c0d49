// Names of the fields of an attributes object that are not custom attributes (spec 2.3, decisions.md).

export const CONTROL_FIELDS: ReadonlySet<string> = new Set(['_update_existing_only', 'push_token_import', '_merge_objects']);

export const IDENTIFIER_FIELDS: ReadonlySet<string> = new Set(['external_id', 'user_alias', 'service_id', 'email', 'phone']);

/** Standard profile fields kept as profile fields; `email` and `phone` are both identifiers and fields. */
export const STANDARD_FIELDS: ReadonlySet<string> = new Set([
  'first_name',
  'last_name',
  'email',
  'phone',
  'dob',
  'gender',
  'country',
  'home_city',
  'time_zone',
  'language',
  'email_subscribe',
  'push_subscribe',
  'push_tokens',
  'subscription_groups',
]);

/** Standard fields that hold plain text (or null to clear). */
export const TEXT_FIELDS: readonly string[] = ['first_name', 'last_name', 'gender', 'country', 'home_city', 'time_zone'];

export function isCustomAttributeName(key: string): boolean {
  return !CONTROL_FIELDS.has(key) && !IDENTIFIER_FIELDS.has(key) && !STANDARD_FIELDS.has(key);
}

/** The operation keys a single-key object may carry (decisions.md "Attributes"). */
export const OPERATION_KEYS: ReadonlySet<string> = new Set(['inc', 'add', 'remove', '$time']);

export const MAX_STRING_LENGTH = 255;
export const MAX_EXTERNAL_ID_BYTES = 987;
