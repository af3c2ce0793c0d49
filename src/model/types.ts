// The request and response shapes of POST /users/track (spec section 2 and 7, decisions.md).

export type ArrayName = 'attributes' | 'events' | 'purchases';
export const ARRAY_NAMES: readonly ArrayName[] = ['attributes', 'events', 'purchases'];

export interface UserAlias {
  alias_name: string;
  alias_label: string;
}

/** The five ways an item names its user (spec 2.3). */
export interface IdentifierFields {
  external_id?: string;
  user_alias?: UserAlias;
  service_id?: string;
  email?: string;
  phone?: string;
}

export interface PushToken {
  app_id: string;
  token: string;
  device_id?: string;
}

export type SubscriptionState = 'subscribed' | 'unsubscribed';

export interface SubscriptionGroupUpdate {
  subscription_group_id: string;
  subscription_state: SubscriptionState;
}

export type Scalar = string | number | boolean;

/** A custom attribute value, including the operation forms of spec 2.3. */
export type CustomAttributeValue =
  | Scalar
  | null
  | Scalar[]
  | Record<string, unknown>[]
  | { inc: number }
  | { add: Scalar[] }
  | { remove: Scalar[] }
  | { $time: string }
  | { [key: string]: unknown };

export interface AttributesObject extends IdentifierFields {
  _update_existing_only?: boolean;
  push_token_import?: boolean;
  _merge_objects?: boolean;
  first_name?: string | null;
  last_name?: string | null;
  dob?: string | null;
  language?: string | null;
  email_subscribe?: 'opted_in' | 'subscribed' | 'unsubscribed' | null;
  push_subscribe?: 'opted_in' | 'subscribed' | 'unsubscribed' | null;
  push_tokens?: PushToken[];
  subscription_groups?: SubscriptionGroupUpdate[];
  [custom: string]: unknown;
}

export interface EventObject extends IdentifierFields {
  name: string;
  time: string;
  app_id?: string;
  properties?: Record<string, unknown>;
  _update_existing_only?: boolean;
}

export interface PurchaseObject extends IdentifierFields {
  product_id: string;
  currency: string;
  price: number;
  time: string;
  quantity?: number;
  app_id?: string;
  properties?: Record<string, unknown>;
  _update_existing_only?: boolean;
}

export interface TrackRequest {
  attributes?: AttributesObject[];
  events?: EventObject[];
  purchases?: PurchaseObject[];
}

/** One non-fatal error: the item it names is not applied; every other item is. */
export interface MinorError {
  type: string;
  input_array: ArrayName;
  index: number;
}

export interface SuccessResponse {
  message: 'success';
  attributes_processed?: number;
  events_processed?: number;
  purchases_processed?: number;
  errors?: MinorError[];
}

export interface FatalResponse {
  message: string;
  errors: string[];
}

/** The 400 message for a request whose every item was refused by its own minor error (decisions.md "Wire format"). */
export const ALL_REFUSED_MESSAGE = "Valid data must be provided in the 'attributes', 'events', or 'purchases' fields.";

export const BLOCKLISTED_MESSAGE = 'provided external_id is blocklisted and not allowed';

export function fatalBody(message: string): FatalResponse {
  return { message, errors: [message] };
}
