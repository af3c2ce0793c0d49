// The CSV side of the benches: writing a generated file, and csv-parse alone reading it (the floor).
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { parse } from 'csv-parse';
import Papa from 'papaparse';

/**
 * csv-parse set up to read what track reads: a byte order mark dropped, LF or CRLF, a stray quote
 * inside a cell kept as text, rows of any width, empty lines counted, a bound on a row's size.
 */
export const CSV_PARSE_AS_TRACK = {
  bom: true,
  relax_quotes: true,
  relax_column_count: true,
  record_delimiter: ['\r\n', '\n'],
  skip_empty_lines: false,
  max_record_size: 16 * 1024 * 1024,
  skip_records_with_error: true,
};

/** Writes a header line and `rows` lines made by row(i), in 64 KiB writes. */
export async function writeCsv(path, header, rows, row) {
  const out = createWriteStream(path);
  let chunk = `${header}\n`;
  for (let i = 0; i < rows; i += 1) {
    chunk += `${row(i)}\n`;
    if (chunk.length > 1 << 16) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
}

/**
 * csv-parse alone streaming the file with `options`, reading records as its documentation's stream
 * example does (the faster of 'data' and this); returns the number of rows after the header.
 */
export async function csvParseAlone(path, options = {}) {
  let records = 0;
  await new Promise((resolve, reject) => {
    const parser = parse(options);
    parser.on('readable', () => {
      while (parser.read() !== null) records += 1;
    });
    parser.on('end', resolve);
    parser.on('error', reject);
    createReadStream(path).pipe(parser);
  });
  return records - 1;
}

const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'Dennis', 'Radia', 'Linus', 'Sophie', 'Tim', 'Hedy', 'John'];
const LAST_NAMES = ['lovelace', 'hopper', 'turing', 'dijkstra', 'liskov', 'knuth', 'hamilton', 'thompson', 'allen', 'ritchie', 'perlman', 'torvalds', 'wilson', 'lee'];
const PLANS = ['free', 'free', 'free', 'starter', 'pro', 'team', 'enterprise'];
const DOMAINS = ['example.com', 'example.org', 'mail.example.net', 'corp.example'];

/**
 * The external_id of row i of a users file: in the rows' order (sorted), or, `shuffled`, in an order
 * of its own (a fixed shuffle of the rows, as a CRM's export or UUIDs give: no two neighbours in the
 * file are neighbours as text).
 */
export function userIds(rows, shuffled = false) {
  const id = (n) => `u-${(1_000_000_000 + n * 37).toString(36)}`;
  if (!shuffled) return id;
  const order = new Uint32Array(rows);
  for (let i = 0; i < rows; i += 1) order[i] = i;
  let seed = 0x9e3779b9;
  for (let i = rows - 1; i > 0; i -= 1) {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    const j = (seed >>> 0) % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return (i) => id(order[i]);
}

/**
 * A file of `rows` users in six columns: external_id (made by `idOf`, default in order), first_name,
 * email, plan, visits, zip (five digits, leading zeros kept). `edit(i, cells)` may change row i's
 * cells before it is written.
 */
export function writeUsersCsv(path, rows, edit, idOf = userIds(rows)) {
  return writeCsv(path, 'external_id,first_name,email,plan,visits,zip', rows, (i) => {
    const first = FIRST_NAMES[i % FIRST_NAMES.length];
    const last = LAST_NAMES[(i * 7) % LAST_NAMES.length];
    const email = `${first.toLowerCase()}.${last}${i}@${DOMAINS[i % DOMAINS.length]}`;
    const zip = String((i * 7919) % 100_000).padStart(5, '0');
    const cells = [idOf(i), first, email, PLANS[i % PLANS.length], String((i * 13) % 500), zip];
    edit?.(i, cells);
    return cells.join(',');
  });
}

/**
 * Papaparse's Parser (the one track reads with) over the file's text read as a stream, a chunk at a
 * time, an incomplete last row kept for the next: `onRows(rows)` is given each chunk's rows (the
 * header first). The plain reading any CSV tool on papaparse does; returns the rows after the header.
 */
export async function papaparseRows(path, onRows = () => undefined) {
  const parser = new Papa.Parser({ delimiter: ',', newline: '\n', quoteChar: '"' });
  let pending = '';
  let records = 0;
  const take = (final) => {
    const result = parser.parse(pending, 0, !final);
    pending = final ? '' : pending.slice(result.meta.cursor);
    records += result.data.length;
    if (result.data.length > 0) onRows(result.data);
  };
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 16 });
  for await (const text of stream) {
    pending = pending.length === 0 ? text : pending + text;
    take(false);
  }
  if (pending !== '') take(true);
  return records - 1;
}

/**
 * The least any uploader of the users file must do: parse it with papaparse, build each row's item
 * (the number column read as a number, empty cells left out) and stringify the bodies of
 * `perRequest` items. Returns the rows read; `onBody(json)` is given each body.
 */
export async function parseBuildStringify(path, perRequest = 50, onBody = () => undefined) {
  let header;
  let batch = [];
  const flush = () => {
    if (batch.length === 0) return;
    onBody(JSON.stringify({ attributes: batch }));
    batch = [];
  };
  const rows = await papaparseRows(path, (data) => {
    let i = 0;
    if (header === undefined) {
      header = data[0];
      i = 1;
    }
    for (; i < data.length; i += 1) {
      const cells = data[i];
      if (cells.length === 1 && cells[0] === '') continue;
      const item = {};
      for (let c = 0; c < header.length; c += 1) {
        const cell = cells[c];
        if (cell === undefined || cell === '') continue;
        item[header[c]] = header[c] === 'visits' ? Number(cell) : cell;
      }
      batch.push(item);
      if (batch.length === perRequest) flush();
    }
  });
  flush();
  return rows;
}
