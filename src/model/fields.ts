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
  // standard beyond the spec (decisions.md "Attributes")
  'current_location',
  'date_of_first_session',
  'date_of_last_session',
  'email_open_tracking_disabled',
  'email_click_tracking_disabled',
  'image_url',
  'facebook',
  'twitter',
]);

/** Standard fields that hold plain text (or null to clear). */
export const TEXT_FIELDS: readonly string[] = ['first_name', 'last_name', 'gender', 'country', 'home_city', 'time_zone'];

export function isCustomAttributeName(key: string): boolean {
  return !CONTROL_FIELDS.has(key) && !IDENTIFIER_FIELDS.has(key) && !STANDARD_FIELDS.has(key);
}

/** Standard fields that hold a time, stored as the instant in UTC. */
export const TIME_FIELDS: readonly string[] = ['date_of_first_session', 'date_of_last_session'];

/** Standard fields that hold true or false. */
export const BOOLEAN_FIELDS: readonly string[] = ['email_open_tracking_disabled', 'email_click_tracking_disabled'];

/** The operation keys a single-key object may carry (decisions.md "Attributes"). */
export const OPERATION_KEYS: ReadonlySet<string> = new Set(['inc', 'add', 'remove', '$time', '$add', '$remove', '$update']);

/**
 * The operations on an array of objects, in the order the service applies them when one object holds
 * several, whatever order they are written in (decisions.md "Attributes").
 */
export const OBJECT_ARRAY_ORDER = ['$add', '$remove', '$update'] as const;

/** The operations on an array of objects: an object whose keys are all among them. */
export const OBJECT_ARRAY_OPERATIONS: ReadonlySet<string> = new Set(OBJECT_ARRAY_ORDER);

/** Not an attribute at all: an item carrying it is refused (decisions.md "Attributes"). */
export const INVALID_ATTRIBUTE_FIELDS: ReadonlySet<string> = new Set(['email_subscription_info']);

/** Names an event's or a purchase's properties may not take (decisions.md "Events and purchases"). */
export const RESERVED_PROPERTY_NAMES: ReadonlySet<string> = new Set(['time', 'event_name']);

/** Most bytes one custom attribute's value, or one event's properties, may take as JSON. */
export const MAX_VALUE_BYTES = 100 * 1024;

/** Most bytes one purchase's properties may take as JSON (decisions.md "Events and purchases"). */
export const MAX_PURCHASE_PROPERTIES_BYTES = 50 * 1024;

export const MAX_STRING_LENGTH = 255;
export const MAX_EXTERNAL_ID_BYTES = 987;
