// Column names close to an identifier or a standard field (`externalid`, `E-mail`, `Email Address`,
// `first name`): such a column would become a custom attribute, and its rows may name their users
// by another column, so the header is told what it likely means and the --map line that says so.
import { TEXT_FIELDS } from '../model/fields.js';

/** The fields a column name is compared with: identifiers first, then standard profile fields of text. */
const KNOWN_FIELDS: readonly string[] = ['external_id', 'email', 'phone', 'service_id', ...TEXT_FIELDS, 'dob', 'language', 'email_subscribe', 'push_subscribe'];

/**
 * Whose id a column named `<who> ID` holds when it names the user: `id`, `User ID`, `Contact ID`,
 * `customer_id`. Not an account's (often a company's), an order's or a product's.
 */
const USER_ID_OWNERS: readonly string[] = ['', 'u', 'user', 'customer', 'contact', 'client', 'member', 'person', 'subscriber', 'profile', 'crm'];

/** Names exports give these fields, squeezed as squeeze() does. */
const OTHER_NAMES: Readonly<Record<string, string>> = {
  emailaddress: 'email',
  mail: 'email',
  emailid: 'email',
  phonenumber: 'phone',
  mobile: 'phone',
  mobilephone: 'phone',
  mobilenumber: 'phone',
  cellphone: 'phone',
  telephone: 'phone',
  externaluserid: 'external_id',
  givenname: 'first_name',
  forename: 'first_name',
  surname: 'last_name',
  familyname: 'last_name',
  dateofbirth: 'dob',
  birthdate: 'dob',
  birthday: 'dob',
  city: 'home_city',
  timezone: 'time_zone',
  lang: 'language',
  ...Object.fromEntries(USER_ID_OWNERS.map((owner) => [`${owner}id`, 'external_id'])),
};

/** Lower case, letters and digits only: `External_ID` and `externalid` both become `externalid`. */
const squeeze = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]/g, '');

const SQUEEZED = new Map<string, string>(KNOWN_FIELDS.map((field) => [squeeze(field), field]));
/** Every squeezed name taken for a field: the fields' own and the other names. */
const ALL_NAMES: ReadonlyArray<[string, string]> = [...SQUEEZED, ...Object.entries(OTHER_NAMES)];

/** The edit distance of two short texts (insertions, deletions, substitutions, swaps of neighbours). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j += 1) rows[0][j] = j;
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2][j - 2] + 1);
      rows[i][j] = best;
    }
  }
  return rows[a.length][b.length];
}

/**
 * The identifier or standard field a column name likely means, or undefined. A name that is the
 * field itself means nothing else; one that differs in case, spaces or punctuation (`External_ID`,
 * `first name`), a common other name (`Email Address`, `Mobile`), or a slip of a letter or two in a
 * name of five letters or more (`extrenal_id`, `emial`) is taken for it.
 */
export function likelyField(name: string): string | undefined {
  if (KNOWN_FIELDS.includes(name)) return undefined;
  const squeezed = squeeze(name);
  if (squeezed === '') return undefined;
  const found = SQUEEZED.get(squeezed) ?? OTHER_NAMES[squeezed];
  if (found !== undefined) return found;
  if (squeezed.length < 5) return undefined;
  let best: string | undefined;
  let bestDistance = squeezed.length >= 8 ? 2 : 1;
  for (const [known, field] of ALL_NAMES) {
    if (known.length < 5 || Math.abs(known.length - squeezed.length) > bestDistance) continue;
    const distance = editDistance(squeezed, known);
    if (distance <= bestDistance && (best === undefined || distance < bestDistance)) {
      best = field;
      bestDistance = distance;
    }
  }
  return best;
}

/** The --map entry that reads a column as a field, as it is written in a --map file. */
export const mapEntry = (column: string, field: string): string => `{${JSON.stringify(column)}: ${JSON.stringify(field)}}`;

/**
 * A name as closestName compares it: letters and digits of any script, in one case, without accents
 * (`E-mail Address` and `email address`, `Straße` and `STRASSE`, `Téléphone` and `telephone`,
 * `Электронная почта` and `ЭЛЕКТРОННАЯ ПОЧТА` are each one name).
 */
const fold = (name: string): string =>
  name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, '');

/** The most slips a name is taken to hold, however long it is: past that, it is another name. */
const MAX_SLIPS = 8;

/** The rows editDistanceWithin fills, kept between calls (grown when a longer name comes). */
let rows = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/**
 * editDistance when it is at most `limit`, else `limit + 1`. Only the cells within `limit` of the
 * diagonal are filled, three rows at a time, and it stops once a row holds none within the limit:
 * two names of 200,000 characters cost their length times the limit, not their product.
 */
export function editDistanceWithin(a: string, b: string, limit: number): number {
  const far = limit + 1;
  if (Math.abs(a.length - b.length) > limit) return far;
  const n = b.length;
  if (rows[0].length <= n) rows = [new Int32Array(n + 1), new Int32Array(n + 1), new Int32Array(n + 1)];
  let [before, previous, current] = rows;
  for (let j = 0; j <= Math.min(n, limit + 1); j += 1) previous[j] = j <= limit ? j : far;
  for (let i = 1; i <= a.length; i += 1) {
    const from = Math.max(1, i - limit);
    const to = Math.min(n, i + limit);
    // the cells beside the band read as beyond the limit
    current[from - 1] = from === 1 && i <= limit ? i : far;
    if (to < n) current[to + 1] = far;
    const ai = a.charCodeAt(i - 1);
    const aBefore = i > 1 ? a.charCodeAt(i - 2) : -1;
    let least = current[from - 1];
    for (let j = from; j <= to; j += 1) {
      const bj = b.charCodeAt(j - 1);
      let best = previous[j - 1] + (ai === bj ? 0 : 1);
      if (previous[j] + 1 < best) best = previous[j] + 1;
      if (current[j - 1] + 1 < best) best = current[j - 1] + 1;
      if (j > 1 && ai === b.charCodeAt(j - 2) && aBefore === bj && before[j - 2] + 1 < best) best = before[j - 2] + 1;
      current[j] = best < far ? best : far;
      if (current[j] < least) least = current[j];
    }
    if (least > limit) return far;
    const spare = before;
    before = previous;
    previous = current;
    current = spare;
  }
  return previous[n];
}

/**
 * The name among `names` a mistyped one likely means: the same letters and digits in another case,
 * spacing or accent (`E-mail Address` for `email address`), one holding the other (`Email` in
 * `E-mail Address`), or a slip of about one letter in four, eight at most (`Email Adress`; none in a
 * name of three); undefined when none is close. The names are read once, for every name asked
 * after; thousands of names, or names of any length, cost about their length each.
 */
export function nameFinder(names: Iterable<string>): (name: string) => string | undefined {
  const known = [...names].map((candidate) => ({ candidate, folded: fold(candidate) })).filter(({ folded }) => folded !== '');
  return (name) => {
    const wanted = fold(name);
    if (wanted === '') return undefined;
    // a slip in a name of three letters makes another name (zip, vip), not a misspelling
    const allowed = wanted.length < 4 ? 0 : Math.min(MAX_SLIPS, Math.max(1, Math.floor(wanted.length / 4)));
    let best: string | undefined;
    let bestDistance = allowed + 1;
    for (const { candidate, folded } of known) {
      if (folded === wanted) return candidate;
      const inside = Math.min(wanted.length, folded.length) >= 4 && (folded.includes(wanted) || wanted.includes(folded));
      const distance = inside ? 1 : editDistanceWithin(wanted, folded, bestDistance - 1);
      if (distance < bestDistance) {
        best = candidate;
        bestDistance = distance;
      }
    }
    return best;
  };
}
