// The verdict on one item before it is sent: its problems (the shared validator's, after the
// mapping's own), and the warnings for an item that is valid but unwise.
import { describe } from '../model/checks.js';
import { CONTROL_FIELDS } from '../model/fields.js';
import type { Identity } from '../model/identity.js';
import { countryCode, storedTimeZone } from '../model/places.js';
import type { ArrayName } from '../model/types.js';
import { itemProblems } from '../model/validate-item.js';

const NONE: readonly string[] = Object.freeze([]);

/** Carrier gateways that turn an email into a text message (spec 4.6). */
const SMS_GATEWAY_DOMAINS = new Set([
  'txt.att.net',
  'mms.att.net',
  'cingularme.com',
  'vtext.com',
  'vzwpix.com',
  'mypixmessages.com',
  'tmomail.net',
  'messaging.sprintpcs.com',
  'pm.sprint.com',
  'page.nextel.com',
  'sms.myboostmobile.com',
  'myboostmobile.com',
  'mymetropcs.com',
  'sms.cricketwireless.net',
  'mms.cricketwireless.net',
  'sms.mycricket.com',
  'email.uscc.net',
  'mms.uscc.net',
  'vmobl.com',
  'vmpix.com',
  'text.republicwireless.com',
  'msg.fi.google.com',
  'mmst5.tracfone.com',
  'mailmymobile.net',
  'message.ting.com',
  'sms.xfinitymobile.com',
  'message.alltel.com',
  'text.wireless.alltel.com',
  'sms.alltelwireless.com',
  'qwestmp.com',
  'gocbw.com',
  'cspire1.com',
  'txt.bell.ca',
  'txt.bellmobility.ca',
  'pcs.rogers.com',
  'sms.rogers.com',
  'msg.telus.com',
  'text.mts.net',
  'vmobile.ca',
  'fido.ca',
  'sms.sasktel.com',
  'txt.freedommobile.ca',
]);
const GATEWAY_LABELS = new Set(['sms', 'mms', 'txt', 'text', 'pcs', 'msg', 'page', 'pm', 'messaging']);

/** A phone number at a carrier's gateway domain (spec 4.6: "phone number plus a carrier gateway domain"), by the list above or by its look. */
export function isSmsGatewayEmail(email: string): boolean {
  // the address of a gateway is a phone number: most emails are ruled out by their first character
  const first = email.charCodeAt(0);
  if (!((first >= 48 && first <= 57) || first === 43)) return false;
  const at = email.lastIndexOf('@');
  if (at < 0) return false;
  const domain = email.slice(at + 1).toLowerCase();
  if (!/^\+?[0-9]{10,15}$/.test(email.slice(0, at))) return false;
  return SMS_GATEWAY_DOMAINS.has(domain) || GATEWAY_LABELS.has(domain.split('.')[0]);
}

export const SMS_GATEWAY_WARNING =
  'email: is an SMS carrier gateway address; mail to it is not reliable and still counts towards email billing';
export const NO_FIELD_WARNING = 'item sets no field: it names a user and changes nothing (it only makes the profile when there is none)';

/** True when an attributes item carries nothing but the identifier that names its user and control fields. */
export function setsNoField(item: Record<string, unknown>, identity: Identity['by']): boolean {
  for (const key in item) {
    if (key !== identity && !CONTROL_FIELDS.has(key)) return false;
  }
  return true;
}

function isOwnProblem(problem: string, fields: readonly string[]): boolean {
  return fields.some((field) => problem.startsWith(field) && /^[:.[ ]/.test(problem.charAt(field.length)));
}

/**
 * The shared validator's problems with an item, after the mapping's own; a field the mapping could
 * not read is left out of the item, so what the validator says about that field is set aside.
 */
export function itemErrors(kind: ArrayName, item: unknown, mapped?: { errors?: string[]; failed?: string[] }): readonly string[] {
  let problems = itemProblems(kind, item);
  if (problems.length > 0) problems = problems.map((problem) => (problem.startsWith(INVALID_PHONE) ? phoneAdvice(problem, item) : problem));
  if (mapped?.errors === undefined) return problems;
  const failed = mapped.failed ?? [];
  return [...mapped.errors, ...problems.filter((p) => !isOwnProblem(p, failed))];
}

const INVALID_PHONE = 'phone: is not a valid phone number';

/** A phone number written without its country code (no `+`) is valid only in a country: say how to name it. */
function phoneAdvice(problem: string, item: unknown): string {
  const phone = (item as { phone?: unknown }).phone;
  if (typeof phone !== 'string' || /^\s*(\+|00)/.test(phone) || !/[0-9]{6}/.test(phone.replace(/[^0-9]/g, ''))) return problem;
  return `${INVALID_PHONE} without its country code; give --default-country (such as --default-country US) to read national numbers in that country${problem.slice(INVALID_PHONE.length)}`;
}

/** What the server does with a time_zone or country it does not know (decisions.md "Attributes"): no error, so a warning. */
function placeWarnings(item: Record<string, unknown>, warnings: string[]): void {
  const { time_zone: zone, country } = item;
  // (null clears the field; anything but a text the server knows is taken, and not kept as sent)
  if (zone !== undefined && zone !== null && (typeof zone !== 'string' || storedTimeZone(zone) === undefined)) {
    warnings.push(
      `time_zone: ${describe(zone)} is not an IANA time zone name such as America/New_York nor a display name such as "Eastern Time (US & Canada)"; the server will not set it`,
    );
  }
  if (country !== undefined && country !== null && (typeof country !== 'string' || countryCode(country) === null)) {
    warnings.push(`country: ${describe(country)} is no ISO 3166-1 alpha-2 code or known country name; the server will store null`);
  }
}

/** Whether a character code is white space at the edge of a text (ASCII space and controls, a no-break space, Unicode spaces). */
const isEdgeSpace = (c: number): boolean => c <= 0x20 || c === 0xa0 || c === 0xfeff || (c >= 0x2000 && c <= 0x200b) || c === 0x3000;

export const SPACED_ID_WARNING = 'external_id: has white space at its start or end, so it names another user than the ID without it; trim it in the export if that is not meant';

/** Whether an external ID has white space at an end: it names another user than the ID without it (sent as it is, and said). */
const isSpacedId = (id: unknown): boolean => typeof id === 'string' && id.length > 0 && (isEdgeSpace(id.charCodeAt(0)) || isEdgeSpace(id.charCodeAt(id.length - 1)));

/** Why a valid item is unwise to send as it is; empty for most. `identity` is identityOf(item).by. */
export function itemWarnings(kind: ArrayName, item: Record<string, unknown>, identity: Identity['by']): readonly string[] {
  const gateway = typeof item.email === 'string' && isSmsGatewayEmail(item.email);
  const empty = kind === 'attributes' && setsNoField(item, identity);
  const places = kind === 'attributes' && (item.time_zone !== undefined || item.country !== undefined);
  const spaced = isSpacedId(item.external_id);
  if (!gateway && !empty && !places && !spaced) return NONE;
  const warnings: string[] = [];
  if (spaced) warnings.push(SPACED_ID_WARNING);
  if (gateway) warnings.push(SMS_GATEWAY_WARNING);
  if (empty) warnings.push(NO_FIELD_WARNING);
  if (places) placeWarnings(item, warnings);
  return warnings.length === 0 ? NONE : warnings;
}
