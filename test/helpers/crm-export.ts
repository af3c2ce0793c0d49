// A contacts export as a CRM on Windows writes it: Windows-1252 bytes, CRLF, its own mixed-case
// headers, national phones in four forms, TRUE/FALSE and yes/no/Y/N columns, `;` lists, dates in
// several forms, empty cells, a misspelt email and a broken row. Night 2 is the next night's export:
// some companies emptied in the CRM, some VIP flags turned.
import { writeFileSync } from 'node:fs';

export const CRM_HEADER = ['Contact ID', 'First Name', 'Last Name', 'E-mail Address', 'Mobile Phone', 'VIP', 'Opted In (Y/N)', 'Tags', 'Signed Up', 'Company', 'Lifetime Value'];

/** The --map that reads it, and the flags that say how it writes values. */
export const CRM_MAP = {
  'Contact ID': 'external_id',
  'First Name': 'first_name',
  'Last Name': 'last_name',
  'E-mail Address': 'email',
  'Mobile Phone': 'phone',
  VIP: 'vip:boolean',
  'Opted In (Y/N)': 'opted_in:boolean',
  Tags: 'tags:array',
  'Signed Up': 'signed_up:time',
  Company: 'company',
  'Lifetime Value': 'lifetime_value:number',
};
export const CRM_FLAGS = ['--encoding', 'windows-1252', '--default-country', 'US', '--array-separator', ';', '--date-order', 'mdy'];

const FIRST = ['Ana', 'Zoë', 'José', 'Renée', 'Bo', 'Søren', 'Ève', 'Ian'];
const COMPANIES = ['Café Müller', 'Acme, Inc.', 'Señor Frog’s', 'Globex', ''];
const YES_NO = ['yes', 'no', 'Y', 'N', 'Yes', 'n'];
const TAGS = ['vip;beta', 'beta', '', 'newsletter;early access'];
const DATES = ['2023-02-02', '2023-02-02 01:15:00', '03/03/2023 3:15 PM', '1679000000'];

/** Contact i's national phone, in one of four forms (none for every tenth). */
export function crmPhone(i: number): string {
  const n = String(5550000 + i).slice(-7);
  const [a, b] = [n.slice(0, 3), n.slice(3)];
  return [`(332) ${a}-${b}`, `332-${a}-${b}`, `332${a}${b}`, `332.${a}.${b}`, ''][i % 5];
}

export const crmCompany = (i: number, night: 1 | 2): string => (night === 2 && i % 10 === 0 ? '' : COMPANIES[i % COMPANIES.length]);
export const crmVip = (i: number, night: 1 | 2): boolean => (i % 3 === 0) !== (night === 2 && i % 6 === 0);

/** One row's cells: contact i of the night's export. */
export function crmRow(i: number, night: 1 | 2): string[] {
  const email = i % 97 === 0 ? 'not-an-email' : `user${i}@example.com`;
  return [`C-${String(i).padStart(5, '0')}`, FIRST[i % FIRST.length], `Last${i}`, email, crmPhone(i), crmVip(i, night) ? 'TRUE' : 'FALSE', YES_NO[i % YES_NO.length], TAGS[i % TAGS.length], DATES[i % DATES.length], crmCompany(i, night), String((i * 7.25) % 1000)];
}

/** Windows-1252 bytes of text (every character here has one). */
export function windows1252(text: string): Buffer {
  const decoder = new TextDecoder('windows-1252');
  const high = new Map<string, number>();
  // stream: true reads 0x80-0x9F as Windows-1252 on every Node version this runs on
  for (let byte = 0x80; byte <= 0x9f; byte += 1) high.set(decoder.decode(Uint8Array.of(byte), { stream: true }), byte);
  return Buffer.from(Array.from(text, (char) => high.get(char) ?? char.charCodeAt(0)));
}

const quoted = (cell: string): string => (/[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell);

/** Writes the night's export of `rows` contacts (and one broken row) to `path`. */
export function writeCrmExport(path: string, rows: number, night: 1 | 2): void {
  const lines = [CRM_HEADER.join(',')];
  for (let i = 1; i <= rows; i += 1) lines.push(crmRow(i, night).map(quoted).join(','));
  lines.splice(Math.ceil(rows / 2), 0, 'C-broken,only,three');
  writeFileSync(path, windows1252(`${lines.join('\r\n')}\r\n`));
}
