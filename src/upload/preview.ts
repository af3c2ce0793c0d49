// `track validate --preview N`: the first N rows of each file as the items they become, read with
// the same header, --map and reading options as the run, so a person sees what would be sent
// before trusting a whole file to it.
import type { Readable } from 'node:stream';
import { readCsv } from '../input/csv.js';
import { readJson } from '../input/json-array.js';
import { readNdjson } from '../input/ndjson.js';
import { formatOf, inputBytes, STDIN } from '../input/source.js';
import { itemErrors } from '../mapping/check.js';
import { mapCsvRow, widthProblem, type CsvHeader } from '../mapping/csv-rows.js';
import { readRowsHeader, rowHeaders } from '../mapping/kind-column.js';
import { withoutInvalidFields } from '../mapping/drop-fields.js';
import { createLineMapper } from '../mapping/ndjson-lines.js';
import { mapParquetRow } from '../mapping/parquet-rows.js';
import type { RemoteSettings } from '../input/remote.js';
import { resolveInputs } from './inputs.js';
import type { ArrayName } from '../model/types.js';
import { csvOptions } from './plan-csv.js';
import type { PlanOptions } from './plan.js';

export interface PreviewRow {
  file: string;
  line: number;
  /** The line of the file where the row begins, when `line` is not it (a JSON array's element is numbered by its place). */
  fileLine?: number;
  kind: ArrayName | 'unknown';
  /** The item as it would be sent (without the fields --drop-invalid-fields leaves out), or as mapped when the row would be rejected. */
  item?: unknown;
  /** The row would go to the rejects file. */
  rejected?: true;
  /** Why the row would be rejected, or the fields left out of it. */
  errors?: string[];
}

type PreviewOptions = Pick<PlanOptions, 'inputs' | 'format' | 'encoding' | 'kind' | 'map' | 'reading' | 'remote'>;

function checked(file: string, line: number, kind: ArrayName, item: unknown, mapped: { errors?: string[]; failed?: string[] }, options: PreviewOptions): PreviewRow {
  const errors = [...itemErrors(kind, item, mapped)];
  if (errors.length === 0) return { file, line, kind, item };
  const kept = options.reading?.dropInvalidFields === true && kind === 'attributes' ? withoutInvalidFields(item as Record<string, unknown>, errors, mapped.failed) : undefined;
  return kept === undefined ? { file, line, kind, item, rejected: true, errors } : { file, line, kind, item: kept.item, errors };
}

async function csvPreview(file: string, rows: number, options: PreviewOptions, stdin?: Readable): Promise<PreviewRow[]> {
  const out: PreviewRow[] = [];
  let header: CsvHeader | undefined;
  let byKind: ReturnType<typeof rowHeaders>;
  for await (const records of readCsv(inputBytes(file, { stdin, remote: options.remote }), file, csvOptions(options))) {
    for (const record of records) {
      if (header === undefined) {
        if ('error' in record) return out;
        const headerOptions = { kind: options.kind, map: options.map, cells: options.reading };
        const result = readRowsHeader(record.cells, headerOptions);
        if (!result.ok) return out;
        header = result.header;
        byKind = rowHeaders(record.cells, headerOptions, header);
        continue;
      }
      if (out.length >= rows) return out;
      if ('error' in record) {
        out.push({ file, line: record.line, kind: header.kind, rejected: true, errors: [record.error] });
        continue;
      }
      const picked = byKind === undefined ? header : byKind.pick(record.cells);
      if ('errors' in picked) {
        out.push({ file, line: record.line, kind: picked.kind, rejected: true, errors: picked.errors });
        continue;
      }
      const wrong = widthProblem(picked, record.cells);
      if (wrong !== undefined) out.push({ file, line: record.line, kind: picked.kind, rejected: true, errors: [wrong] });
      else {
        const mapped = mapCsvRow(picked, record.cells);
        out.push(checked(file, record.line, picked.kind, mapped.item, mapped, options));
      }
    }
    if (out.length >= rows) return out;
  }
  return out;
}

async function ndjsonPreview(file: string, rows: number, options: PreviewOptions, stdin?: Readable, json = false): Promise<PreviewRow[]> {
  const out: PreviewRow[] = [];
  const itemsOf = createLineMapper({ kind: options.kind, cells: options.reading });
  const bytes = inputBytes(file, { stdin, remote: options.remote });
  for await (const records of json ? readJson(bytes, file, { encoding: options.encoding }) : readNdjson(bytes, { encoding: options.encoding })) {
    for (const record of records) {
      if (out.length >= rows) return out;
      const placed = (row: PreviewRow): number => out.push(record.fileLine === undefined ? row : { ...row, fileLine: record.fileLine });
      if ('error' in record) {
        placed({ file, line: record.line, kind: options.kind ?? 'unknown', rejected: true, errors: [record.error] });
        continue;
      }
      for (const entry of itemsOf(record.value)) {
        if ('item' in entry) placed(checked(file, record.line, entry.kind, entry.item, entry, options));
        else placed({ file, line: record.line, kind: entry.kind, rejected: true, errors: entry.errors });
      }
    }
  }
  return out;
}

async function parquetPreview(file: string, rows: number, options: PreviewOptions): Promise<PreviewRow[]> {
  const out: PreviewRow[] = [];
  const [{ openParquet }, { parquetHeader }] = await Promise.all([import('../input/parquet.js'), import('./plan-parquet.js')]);
  const parquet = await openParquet(file, options.remote);
  try {
    const { header } = parquetHeader(parquet.columns, file, options);
    const kind = header.csv.kind;
    for await (const batch of parquet.batches()) {
      for (let at = 0; at < batch.rows && out.length < rows; at += 1) {
        const mapped = mapParquetRow(header, batch.values, at);
        out.push(checked(file, batch.firstRow + at, kind, mapped.item, mapped, options));
      }
      if (out.length >= rows) break;
    }
  } finally {
    await parquet.close();
  }
  return out;
}

/** The first `rows` rows of one input. */
function preview(file: string, rows: number, options: PreviewOptions, stdin?: Readable): Promise<PreviewRow[]> {
  const format = formatOf(file, options.format);
  if (format === 'csv') return csvPreview(file, rows, options, stdin);
  if (format === 'parquet') return parquetPreview(file, rows, options);
  return ndjsonPreview(file, rows, options, stdin, format === 'json');
}

/**
 * The first `rows` rows of each input, as items or as the reasons they would be rejected. Standard
 * input is read from `stdin` (readAhead's `ahead`, so the run reads it again whole), or left out.
 */
export async function previewRows(options: PreviewOptions & { storage?: RemoteSettings }, rows: number, stdin?: Readable): Promise<PreviewRow[]> {
  const { inputs, remote } = await resolveInputs(options.inputs, options.storage);
  const out: PreviewRow[] = [];
  try {
    for (const file of inputs) {
      if (file === STDIN && stdin === undefined) continue;
      out.push(...(await preview(file, rows, { ...options, remote }, stdin)));
    }
  } finally {
    if (remote !== undefined) await (await import('../input/remote.js')).closeRemoteStores();
  }
  return out;
}

/** The preview as a person reads it: each file's rows, an item a line of JSON. */
export function formatPreview(preview: readonly PreviewRow[]): string {
  const lines: string[] = [];
  let file: string | undefined;
  for (const row of preview) {
    if (row.file !== file) {
      file = row.file;
      lines.push(`preview of ${file}:`);
    }
    const what = row.rejected === true ? `${row.kind}, rejected` : row.kind;
    const place = row.fileLine === undefined ? `line ${row.line}` : `line ${row.fileLine}, row ${row.line}`;
    lines.push(`  ${place} (${what})${row.item === undefined ? '' : ` ${JSON.stringify(row.item)}`}`);
    const label = row.rejected === true ? '    ' : '    left out: ';
    for (const error of row.errors ?? []) lines.push(`${label}${error}`);
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
