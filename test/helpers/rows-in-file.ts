// A plan's index (read-index.ts) as it is past a million users, made small for tests: the rows of a
// target past 1,000 users written to a file, 4,096 at a time.
import { ReadIndex } from '../../src/records/read-index.js';
import type { SpillFile } from '../../src/records/spill-file.js';

/** fn's result with an index's rows in a file past 1,000 users; `rowsFile`: the file they are written to. */
export function withRowsInFile<T>(fn: () => T, rowsFile?: (folder: string) => SpillFile): T {
  const [most, chunk, file] = [ReadIndex.ROWS_IN_MEMORY, ReadIndex.ROWS_CHUNK, ReadIndex.rowsFile];
  Object.defineProperty(ReadIndex, 'ROWS_IN_MEMORY', { value: 1000 });
  Object.defineProperty(ReadIndex, 'ROWS_CHUNK', { value: 4096 });
  if (rowsFile !== undefined) Object.defineProperty(ReadIndex, 'rowsFile', { value: rowsFile });
  try {
    return fn();
  } finally {
    Object.defineProperty(ReadIndex, 'ROWS_IN_MEMORY', { value: most });
    Object.defineProperty(ReadIndex, 'ROWS_CHUNK', { value: chunk });
    Object.defineProperty(ReadIndex, 'rowsFile', { value: file });
  }
}
