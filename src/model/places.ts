// `country` and `time_zone` as the service keeps them (decisions.md "Attributes"): a country is an
// ISO 3166-1 alpha-2 code, found from the code in any case or a well-known English name; a time zone
// is set only when it is an IANA zone name or a display name the service documents (kept as its IANA
// zone). Neither is an error when it is not one.
import { IANA_ZONE_NAMES, TIME_ZONE_DISPLAY_NAMES } from './time-zone-names.js';

/** ISO 3166-1 alpha-2 codes, officially assigned. */
const COUNTRY_CODES: readonly string[] = (
  'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
  'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
  'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO ' +
  'JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR ' +
  'MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO ' +
  'RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV ' +
  'TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
).split(' ');

/** English names people write that differ from the names the locale data gives. */
const OTHER_NAMES: Readonly<Record<string, string>> = {
  'united states of america': 'US',
  usa: 'US',
  america: 'US',
  uk: 'GB',
  'great britain': 'GB',
  britain: 'GB',
  england: 'GB',
  scotland: 'GB',
  wales: 'GB',
  'northern ireland': 'GB',
  'czech republic': 'CZ',
  turkey: 'TR',
  'ivory coast': 'CI',
  "cote d'ivoire": 'CI',
  'korea, republic of': 'KR',
  'republic of korea': 'KR',
  korea: 'KR',
  'north korea': 'KP',
  russia: 'RU',
  'russian federation': 'RU',
  vietnam: 'VN',
  'viet nam': 'VN',
  holland: 'NL',
  'the netherlands': 'NL',
  burma: 'MM',
  swaziland: 'SZ',
  macedonia: 'MK',
  'cape verde': 'CV',
  'east timor': 'TL',
  'vatican city': 'VA',
  'hong kong': 'HK',
  macau: 'MO',
  'united arab emirates': 'AE',
  uae: 'AE',
  'democratic republic of the congo': 'CD',
  'republic of the congo': 'CG',
  palestine: 'PS',
  taiwan: 'TW',
  iran: 'IR',
  syria: 'SY',
  laos: 'LA',
  bolivia: 'BO',
  venezuela: 'VE',
  tanzania: 'TZ',
  moldova: 'MD',
  brunei: 'BN',
};

const CODE_SET: ReadonlySet<string> = new Set(COUNTRY_CODES);
let byName: Map<string, string> | undefined;

/** Lower-case, with accents and curly quotes folded, so "Côte d’Ivoire" finds "cote d'ivoire". */
function fold(name: string): string {
  return name.normalize('NFD').replace(/[\u0300-\u036f]/g, '').replace(/[\u2018\u2019]/g, "'").trim().toLowerCase();
}

function namesToCodes(): Map<string, string> {
  const names = new Map<string, string>(Object.entries(OTHER_NAMES));
  const display = new Intl.DisplayNames('en', { type: 'region' });
  for (const code of COUNTRY_CODES) {
    const name = display.of(code);
    if (name !== undefined && name !== code) names.set(fold(name), code);
  }
  return names;
}

/** The alpha-2 code a `country` value names, or null when it names none. */
export function countryCode(value: string): string | null {
  const trimmed = value.trim();
  if (trimmed.length === 2 && CODE_SET.has(trimmed.toUpperCase())) return trimmed.toUpperCase();
  byName ??= namesToCodes();
  return byName.get(fold(trimmed)) ?? null;
}

const knownZones = new Map<string, boolean>();
/** The zones the runtime knows, by the names it gives them (a zone newer than IANA_ZONE_NAMES among them). */
let runtimeZones: ReadonlySet<string> | undefined;

/**
 * Whether a value is an IANA time zone name (`America/New_York`, `UTC`, `Etc/GMT+5`, `US/Eastern`):
 * spelled as the database spells it, and known to the runtime's zone data. An offset is not, nor a
 * name in other capitals (`AMERICA/NEW_YORK`), which the runtime's zone data would find all the same.
 */
export function isTimeZoneName(value: string): boolean {
  let known = knownZones.get(value);
  if (known !== undefined) return known;
  runtimeZones ??= new Set(Intl.supportedValuesOf('timeZone'));
  known = IANA_ZONE_NAMES.has(value) || runtimeZones.has(value);
  if (known) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: value });
    } catch {
      known = false;
    }
  }
  if (knownZones.size < 10_000) knownZones.set(value, known);
  return known;
}

/**
 * The IANA zone a `time_zone` value is kept as: a documented display name (`Eastern Time (US &
 * Canada)`) as the zone it stands for, any other IANA name as it is; undefined for anything else (not
 * set). The display names come first: `UTC` and `Singapore` are both, and stand for `Etc/UTC` and
 * `Asia/Singapore`.
 */
export function storedTimeZone(value: string): string | undefined {
  return TIME_ZONE_DISPLAY_NAMES.get(value) ?? (isTimeZoneName(value) ? value : undefined);
}
