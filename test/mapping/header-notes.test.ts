// Names close to identifiers and standard fields, and columns of mixed guessed types.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readInferred } from '../../src/mapping/cells.js';
import { readCsvHeader } from '../../src/mapping/csv-rows.js';
import { typeNotes, typeCounter } from '../../src/mapping/header-notes.js';
import { editDistance, likelyField } from '../../src/mapping/suggest.js';

describe('likelyField', () => {
  it('takes case, spaces, punctuation, other common names and small slips for the field', () => {
    expect(['externalid', 'External_ID', 'e-mail', 'Email Address', 'first name', 'Mobile', 'extrenal_id', 'emial_address', 'Date of Birth'].map(likelyField)).toEqual([
      'external_id',
      'external_id',
      'email',
      'email',
      'first_name',
      'phone',
      'external_id',
      'email',
      'dob',
    ]);
  });

  it("takes a column named like the user's id for external_id, and not an order's, a product's or an account's", () => {
    expect(['Contact ID', 'Customer ID', 'user_id', 'id', 'ID', 'ContactId', 'Client ID', 'member-id', 'UID'].map(likelyField)).toEqual(Array(9).fill('external_id'));
    expect(['Order ID', 'Product ID', 'Account ID', 'Session ID', 'Event ID', 'Ticket ID'].map(likelyField)).toEqual(Array(6).fill(undefined));
  });

  it('says nothing of a field itself or of names not close to one', () => {
    expect(['external_id', 'email', 'plan', 'zip', 'company', 'nickname', 'tags'].map(likelyField)).toEqual(Array(7).fill(undefined));
    expect(editDistance('extrenal', 'external')).toBe(1);
  });
});

describe('header notes', () => {
  it('names a misspelt identifier beside another one, and the --map line that fixes it', () => {
    const result = readCsvHeader(['externalid', 'email', 'first name', 'plan']);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.notes).toEqual([
      'column "externalid" becomes the custom attribute "externalid", and the rows\' users are found by email, but looks like external_id; to read it as external_id, put {"externalid": "external_id"} in a --map file',
      'column "first name" becomes the custom attribute "first name", but looks like first_name; to read it as first_name, put {"first name": "first_name"} in a --map file',
    ]);
  });

  it('a header naming no user says which column likely does, as a --map entry', () => {
    const result = readCsvHeader(['External_ID', 'plan']);
    expect(result).toEqual({
      ok: false,
      problems: [
        'the header has no column that names the user: external_id, user_alias.alias_name, service_id, email or phone',
        'column "External_ID" looks like external_id: put {"External_ID": "external_id"} in a --map file and give --map FILE',
      ],
    });
  });

  it('a header naming no user suggests an id column as external_id first, then email, then phone, each with its --map line', () => {
    const result = readCsvHeader(['Mobile Phone', 'E-mail Address', 'First Name', 'Contact ID']);
    if (result.ok) throw new Error('the header names no user');
    expect(result.problems.slice(1)).toEqual([
      'column "Contact ID" looks like external_id: put {"Contact ID": "external_id"} in a --map file and give --map FILE',
      'column "E-mail Address" looks like email: put {"E-mail Address": "email"} in a --map file and give --map FILE',
      'column "Mobile Phone" looks like phone: put {"Mobile Phone": "phone"} in a --map file and give --map FILE',
    ]);
    const usable = readCsvHeader(['email', 'id', 'plan']);
    if (!usable.ok) throw new Error('header');
    expect(usable.notes).toEqual([
      'column "id" becomes the custom attribute "id", and the rows\' users are found by email, but looks like external_id; to read it as external_id, put {"id": "external_id"} in a --map file',
    ]);
  });

  it('counts the types guessed for each unannotated column, and names a mixed one with the annotation to add', () => {
    const result = readCsvHeader(['external_id', 'zip', 'vip', 'plan', 'age:number']);
    if (!result.ok) throw new Error('header');
    const { header } = result;
    for (const cells of [['u1', '02134', 'true', 'pro', '1'], ['u2', '94105', 'yes', 'pro', '2'], ['u3', '10001', 'false', 'pro', '3']]) header.mapRow(cells);
    expect(typeNotes(header.typeCounts)).toEqual([
      'column "zip" was guessed as 2 numbers and 1 text, so profiles will hold mixed types; type it: {"zip": "zip:string"} in a --map file, or the header "zip:string"',
      'column "vip" was guessed as 2 booleans and 1 text, so profiles will hold mixed types; type it: {"vip": "vip:boolean"} in a --map file, or the header "vip:boolean" (it reads yes/no/y/n/1/0 as well as true/false)',
    ]);
  });

  it('advises :boolean for yes/no/1/0, :time for dates beside epochs, :boolean or :string for true/false among other texts', () => {
    const result = readCsvHeader(['external_id', 'opted', 'seen', 'vip', 'zip']);
    if (!result.ok) throw new Error('header');
    const { header } = result;
    for (const cells of [['u1', 'yes', '2023-02-02', 'true', '02134'], ['u2', '0', '1679000000', 'maybe', '94105'], ['u3', 'N', '1679000000123', 'false', '10001']]) header.mapRow(cells);
    const notes = typeNotes(header.typeCounts);
    expect(notes[0]).toMatch(/^column "opted" was guessed as 1 number and 2 texts, .* type it: \{"opted": "opted:boolean"\} .*\(it reads yes\/no\/y\/n\/1\/0 as well as true\/false\)$/);
    expect(notes[1]).toMatch(/^column "seen" was guessed as 2 numbers and 1 text, .* type it: \{"seen": "seen:time"\} .*\(it reads dates, times and epoch seconds or milliseconds; --timezone and --date-order say how\)$/);
    expect(notes[2]).toMatch(/"vip:boolean" \(it reads yes\/no\/y\/n\/1\/0 too\), or :string to keep the texts$/);
    expect(notes[3]).toMatch(/"zip:string"$/);
  });

  it('says of NULL, \\N, None or NaN among the cells that they are sent as text, and to export them empty, not to type the column as text', () => {
    const notes = notesAfter(['external_id', 'score', 'company', 'plan'], [['u1', '12', 'NULL', 'pro'], ['u2', 'NULL', '\\N', 'None'], ['u3', '\\N', 'null', 'free']]);
    expect(notes).toEqual([
      'column "score": 2 cells read NULL, \\N, None or NaN, sent as that text (not as no value), so profiles will hold mixed types; if they mean no value, export them as empty cells (sending nothing, or null with --empty-as-null) or as null (removing the attribute)',
      // (a cell reading null sends null: it is no text)
      'column "company": 2 cells read NULL, \\N, None or NaN, sent as that text (not as no value), so profiles will hold it as text; if they mean no value, export them as empty cells (sending nothing, or null with --empty-as-null) or as null (removing the attribute)',
    ]);
    // a word among other texts is a value like the others
    expect(notesAfter(['external_id', 'nickname'], [['u1', 'None'], ['u2', 'Ada']])).toEqual([]);
  });

  it('says of an events file that its events, not profiles, carry the mixed types', () => {
    const result = readCsvHeader(['external_id', 'name', 'time', 'properties.zip']);
    if (!result.ok) throw new Error('header');
    for (const zip of ['02134', '94105']) result.header.mapRow(['u1', 'login', '2023-01-01T00:00:00Z', zip]);
    expect(typeNotes(result.header.typeCounts, result.header.kind)).toEqual([
      'column "properties.zip" was guessed as 1 number and 1 text, so its events will carry the property in mixed types; type it: {"properties.zip": "properties.zip:string"} in a --map file, or the header "properties.zip:string"',
    ]);
  });

  it('two columns that look like one identifier: the error suggests mapping one of them', () => {
    const result = readCsvHeader(['E-mail', 'Email Address', 'plan']);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.slice(1)).toEqual([
      'column "E-mail" looks like email: put {"E-mail": "email"} in a --map file and give --map FILE (or map "Email Address" instead: one column only)',
    ]);
    const usable = readCsvHeader(['external_id', 'E-mail', 'Email Address']);
    if (!usable.ok) throw new Error('header');
    expect(usable.notes[1]).toBe('column "Email Address" becomes the custom attribute "Email Address", and the rows\' users are found by external_id, but looks like email as column "E-mail" does; map only one of them to email');
  });

  it('leaves the columns of a CSV rejects file (_file, _line, _kind, _column, _errors) out', () => {
    const result = readCsvHeader(['external_id', 'plan', '_file', '_line', '_kind', '_column', '_errors']);
    if (!result.ok) throw new Error('header');
    expect(result.header.mapRow(['u1', 'pro', 'a.csv', '3', 'attributes', 'plan', 'plan: bad']).item).toEqual({ external_id: 'u1', plan: 'pro' });
    expect(result.header.keys).toEqual(['external_id', 'plan', undefined, undefined, undefined, undefined, undefined]);
  });
});

/** The notes of a header after its rows were mapped. */
function notesAfter(columns: string[], rows: string[][], options: Parameters<typeof readCsvHeader>[1] = {}): string[] {
  const result = readCsvHeader(columns, options);
  if (!result.ok) throw new Error(result.problems.join('; '));
  for (const cells of rows) result.header.mapRow(cells);
  return typeNotes(result.header.typeCounts, result.header.kind);
}

describe('notes that name the annotation', () => {
  it('a column of texts that are all yes/no words, in any case, gets :boolean with its --map line', () => {
    const notes = notesAfter(
      ['external_id', 'VIP', 'Opted In (Y/N)', 'plan'],
      [['u1', 'TRUE', 'yes', 'pro'], ['u2', 'FALSE', 'N', 'team'], ['u3', '', 'Y', 'pro'], ['u4', 'True', 'no', 'pro']],
    );
    expect(notes).toEqual([
      'column "VIP" was guessed as text, but its 3 cells are all yes/no words (true/false, yes/no, y/n), so profiles will hold it as text; type it: {"VIP": "VIP:boolean"} in a --map file, or the header "VIP:boolean"',
      'column "Opted In (Y/N)" was guessed as text, but its 4 cells are all yes/no words (true/false, yes/no, y/n), so profiles will hold it as text; type it: {"Opted In (Y/N)": "Opted In (Y/N):boolean"} in a --map file, or the header "Opted In (Y/N):boolean"',
    ]);
    // the annotation the note names reads every one of those cells
    const typed = readCsvHeader(['external_id', 'VIP:boolean']);
    if (!typed.ok) throw new Error('header');
    expect(['TRUE', 'FALSE', 'True', 'yes', 'N'].map((cell) => typed.header.mapRow(['u1', cell]).item.VIP)).toEqual([true, false, true, true, false]);
  });

  it('a column of lists gets :array and the --array-separator that splits them: ; or |, or only the one given', () => {
    const tags = [['u1', 'vip;beta', 'a|b'], ['u2', 'beta', 'c'], ['u3', '', 'd | e'], ['u4', 'newsletter; early access', '7']];
    expect(notesAfter(['external_id', 'Tags', 'Groups'], tags)).toEqual([
      'column "Tags" holds lists (2 cells hold ";"), so profiles will hold it as text; type it: {"Tags": "Tags:array"} in a --map file, or the header "Tags:array", and give --array-separator \';\'',
      'column "Groups" holds lists (2 cells hold "|"), so profiles will hold it as text; type it: {"Groups": "Groups:array"} in a --map file, or the header "Groups:array", and give --array-separator \'|\'',
    ]);
    // with --array-separator given, only it makes a list, and the note asks for no flag
    expect(notesAfter(['external_id', 'Tags', 'Groups'], tags, { cells: { arraySeparator: '|' } })).toEqual([
      'column "Groups" holds lists (2 cells hold "|"), so profiles will hold it as text; type it: {"Groups": "Groups:array"} in a --map file, or the header "Groups:array"',
    ]);
  });

  it('says nothing of prose holding a semicolon, of plain texts, of true/false already read as booleans, or of typed columns', () => {
    const long = 'called twice and left a message with the front desk about the renewal; no answer yet';
    const notes = notesAfter(
      ['external_id', 'notes', 'company', 'flag', 'tags:string', 'opted:boolean'],
      [['u1', long, 'Acme', 'true', 'a;b', 'yes'], ['u2', 'short; note', 'Globex', 'false', 'c;d', 'no']],
    );
    expect(notes).toEqual([]);
  });

  it('says nothing of notes holding a semicolon when some cell holds a line break, nor of a column whose first 1,000 texts hold no separator', () => {
    const notes = [['u1', 'Called twice.\nWants a demo; "ASAP"'], ['u2', 'plain note'], ['u3', 'met at the fair; follow up'], ['u4', 'line one\r\nline two']];
    expect(notesAfter(['external_id', 'Description'], notes)).toEqual([]);
    const codes = [...Array.from({ length: 1_000 }, (_, i) => [`u${i}`, `code-${i}`]), ['u1000', 'a;b']];
    expect(notesAfter(['external_id', 'Code'], codes)).toEqual([]);
    expect(notesAfter(['external_id', 'Code'], codes.slice(1))).toEqual([expect.stringMatching(/^column "Code" holds lists \(a cell holds ";"\)/)]);
  });

  it('takes a cell for a list when every part between separators is 64 characters at most, spaces around it aside', () => {
    // an item of 60 to 70 letters, with up to 8 spaces around it
    const spaces = fc.integer({ min: 0, max: 8 }).map((n) => ' '.repeat(n));
    const part = fc.tuple(spaces, fc.integer({ min: 60, max: 70 }), spaces).map(([before, n, after]) => `${before}${'a'.repeat(n)}${after}`);
    const cell = fc.array(part, { minLength: 2, maxLength: 4 }).chain((parts) => fc.constantFrom(parts.join(';'), parts.join('|'), parts.join(' | ')));
    fc.assert(
      fc.property(cell, (text) => {
        fc.pre(text.trim() !== '' && text.length > 0);
        const list = text.length <= 64 || text.split(/[;|]/).every((item) => item.trim().length <= 64);
        expect(notesAfter(['external_id', 'Tags'], [['u1', text]])).toEqual(list ? [expect.stringMatching(/^column "Tags" holds lists/)] : []);
      }),
      { numRuns: 500 },
    );
  });

  it('names the property of an events or a purchases file, which can hold booleans and arrays', () => {
    const rows = [['u1', 'login', '2024-01-01T00:00:00Z', 'TRUE', 'a;b']];
    expect(notesAfter(['external_id', 'name', 'time', 'properties.first', 'properties.tags'], rows)).toEqual([
      expect.stringMatching(/^column "properties.first" was guessed as text, but its one cell is a yes\/no word .*, so its events will carry the property as text; type it: \{"properties.first": "properties.first:boolean"\}/),
      expect.stringMatching(/^column "properties.tags" holds lists \(a cell holds ";"\), so its events will carry the property as text; type it: \{"properties.tags": "properties.tags:array"\}/),
    ]);
    const purchase = [['u1', 'sku-1', 'USD', '9.99', '2024-01-01T00:00:00Z', 'TRUE', 'a;b']];
    expect(notesAfter(['external_id', 'product_id', 'currency', 'price', 'time', 'properties.gift', 'properties.tags'], purchase)).toEqual([
      expect.stringMatching(/^column "properties.gift" .* so its purchases will carry the property as text; type it: \{"properties.gift": "properties.gift:boolean"\}/),
      expect.stringMatching(/^column "properties.tags" holds lists .* so its purchases will carry the property as text; type it: \{"properties.tags": "properties.tags:array"\}/),
    ]);
  });
});

describe('typeCounter', () => {
  it('reads every cell as readInferred does, and counts the type it gave', () => {
    const counts = new Float64Array(3);
    const read = typeCounter(counts);
    const cell = fc.oneof(fc.string(), fc.constantFrom('true', 'false', '0', '-0', '007', '1.5', '-2.', '9007199254740993', '-12', '1e5'), fc.integer().map(String));
    fc.assert(
      fc.property(cell, (text) => {
        const before = Array.from(counts);
        const value = read(text);
        expect(value).toEqual(readInferred(text));
        const slot = typeof value === 'number' ? 0 : typeof value === 'boolean' ? 1 : 2;
        expect(Array.from(counts).map((n, i) => n - before[i])).toEqual([0, 1, 2].map((i) => (i === slot ? 1 : 0)));
      }),
    );
  });
});
