// A CSV file's rows -> the planner: the header is read once (after --map) into a CsvHeader, then
// each row's cells are checked for width, mapped through it and taken, or rejected with their row.
import { InputError } from '../errors.js';
import { DELIMITERS, readCsv, type CsvOptions, type CsvRecord, type Delimiter } from '../input/csv.js';
import { inputBytes } from '../input/source.js';
import { csvRowObject, CsvRowOrigin, jsonBytesBound, mapCsvRow, readCsvHeader, widthProblem, type CsvHeader } from '../mapping/csv-rows.js';
import { mixedTypeNotes } from '../mapping/header-notes.js';
import type { PlanEvent, PlanOptions, RowPlanner } from './plan.js';

/** Why a CSV file's first record cannot be its header, as the error to stop the run with; undefined when it can. */
export function csvHeaderProblem(record: CsvRecord, file: string, options: Pick<PlanOptions, 'kind' | 'map' | 'reading'>): InputError | undefined {
  if ('error' in record) return new InputError(`the header cannot be read: ${record.error}`, file, record.line);
  if (record.undecodable !== undefined) {
    return new InputError(`the header cannot be read: column ${record.undecodable.cell + 1}: ${record.undecodable.message}`, file, record.line);
  }
  const result = readCsvHeader(record.cells, { kind: options.kind, map: options.map, cells: options.reading });
  if (result.ok) return undefined;
  const problems = [...result.problems];
  // a file of another delimiter, read with the one given: one column whose name holds the others
  const other = record.cells.length === 1 ? DELIMITERS.find((d) => record.cells[0].includes(d)) : undefined;
  if (other !== undefined) problems.push(`the header is one column holding ${JSON.stringify(other)}: is that the delimiter? give --delimiter ${JSON.stringify(other)}`);
  return new InputError(`the header cannot be used:\n  ${problems.join('\n  ')}`, file, record.line);
}

/** Says which delimiter a file was read with when it was detected and is not a comma. */
export const delimiterNote = (delimiter: Delimiter): string =>
  `read with ${delimiter === '\t' ? 'tab' : `"${delimiter}"`} between cells, as its header line uses (give --delimiter to choose)`;

/** How every CSV file's text is read: the delimiter, given or detected (and then noted). */
export function csvOptions(options: Pick<PlanOptions, 'encoding' | 'reading'>, detected?: (delimiter: Delimiter) => void): CsvOptions {
  return { encoding: options.encoding, delimiter: options.reading?.delimiter, detected };
}

/** The events of a CSV file, a chunk of rows at a time. */
export async function* csvChunks(file: string, planner: RowPlanner, options: PlanOptions): AsyncGenerator<PlanEvent[]> {
  let header: CsvHeader | undefined;
  const bytes = inputBytes(file, options.stdin, (n) => planner.bytesRead(n), options.chunkBytes);
  let detected: Delimiter | undefined;
  for await (const records of readCsv(bytes, file, csvOptions(options, (d) => (detected = d)))) {
    const before: PlanEvent[] = [];
    for (const record of records) {
      if (header === undefined) {
        const problem = csvHeaderProblem(record, file, options);
        if (problem !== undefined) throw problem;
        const result = readCsvHeader((record as { cells: string[] }).cells, { kind: options.kind, map: options.map, cells: options.reading });
        if (!result.ok) throw new Error('unreachable: the header was checked');
        header = result.header;
        const notes = detected !== undefined && detected !== ',' ? [delimiterNote(detected), ...result.notes] : result.notes;
        before.push({ type: 'header', file, kind: header.kind, notes });
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
  else {
    const notes = mixedTypeNotes(header.typeCounts);
    if (notes.length > 0) yield notes.map((note): PlanEvent => ({ type: 'note', file, note }));
  }
}
