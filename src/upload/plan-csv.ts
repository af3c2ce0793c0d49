// A CSV file's rows -> the planner: the header is read once (after --map) into a CsvHeader, then
// each row's cells are checked for width, mapped through it and taken, or rejected with their row.
import { InputError } from '../errors.js';
import { readCsv, type CsvRecord } from '../input/csv.js';
import { inputBytes } from '../input/source.js';
import { csvRowObject, CsvRowOrigin, jsonBytesBound, mapCsvRow, readCsvHeader, widthProblem, type CsvHeader } from '../mapping/csv-rows.js';
import type { PlanEvent, PlanOptions, RowPlanner } from './plan.js';

/** Why a CSV file's first record cannot be its header, as the error to stop the run with; undefined when it can. */
export function csvHeaderProblem(record: CsvRecord, file: string, options: Pick<PlanOptions, 'kind' | 'map'>): InputError | undefined {
  if ('error' in record) return new InputError(`the header cannot be read: ${record.error}`, file, record.line);
  if (record.undecodable !== undefined) {
    return new InputError(`the header cannot be read: column ${record.undecodable.cell + 1}: ${record.undecodable.message}`, file, record.line);
  }
  const result = readCsvHeader(record.cells, { kind: options.kind, map: options.map });
  if (!result.ok) return new InputError(`the header cannot be used:\n  ${result.problems.join('\n  ')}`, file, record.line);
  return undefined;
}

/** The events of a CSV file, a chunk of rows at a time. */
export async function* csvChunks(file: string, planner: RowPlanner, options: PlanOptions): AsyncGenerator<PlanEvent[]> {
  let header: CsvHeader | undefined;
  const bytes = inputBytes(file, options.stdin, (n) => planner.bytesRead(n), options.chunkBytes);
  for await (const records of readCsv(bytes, file, { encoding: options.encoding })) {
    const before: PlanEvent[] = [];
    for (const record of records) {
      if (header === undefined) {
        const problem = csvHeaderProblem(record, file, options);
        if (problem !== undefined) throw problem;
        const result = readCsvHeader((record as { cells: string[] }).cells, { kind: options.kind, map: options.map });
        if (!result.ok) throw new Error('unreachable: the header was checked');
        header = result.header;
        before.push({ type: 'header', file, kind: header.kind, notes: result.notes });
        continue;
      }
      const line = record.line;
      if (planner.row(file, line)) continue;
      if ('error' in record) {
        planner.reject(file, line, header.kind, record.text ?? null, [record.error]);
        continue;
      }
      const inDoubt = planner.inDoubt(file, line);
      if (record.undecodable !== undefined && inDoubt === undefined) {
        const { cell, message } = record.undecodable;
        planner.reject(file, line, header.kind, csvRowObject(header, record.cells), [`${header.keys[cell] ?? `column ${cell + 1}`}: ${message}`]);
        continue;
      }
      const wrong = inDoubt ?? widthProblem(header, record.cells);
      if (wrong !== undefined) {
        planner.reject(file, line, header.kind, csvRowObject(header, record.cells), [wrong]);
        continue;
      }
      const mapped = mapCsvRow(header, record.cells);
      planner.take(header.kind, mapped.item, new CsvRowOrigin(file, line, header, record.cells), jsonBytesBound(header, record.cells), mapped);
    }
    yield [...before, ...planner.chunk(file)];
  }
  if (header === undefined) yield [{ type: 'note', file, note: 'is empty (no header row)' }];
}
