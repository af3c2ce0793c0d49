import { describe, expect, it } from 'vitest';
import { heapFlagsFor } from '../../src/cli/heap.js';

describe('heap settings by command', () => {
  it('tunes only an upload that sends: two threads share the process then', () => {
    expect(heapFlagsFor(['upload', 'users.csv', '--url', 'http://x'])).toEqual(['--heap-growing-percent=30']);
    expect(heapFlagsFor(['upload', '--dry-run', 'users.csv'])).toEqual([]);
    expect(heapFlagsFor(['emulate', '--port', '0'])).toEqual([]);
    expect(heapFlagsFor(['validate', 'upload'])).toEqual([]);
    expect(heapFlagsFor([])).toEqual([]);
  });
});
