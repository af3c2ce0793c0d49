// --encoding through the real CLI: validate and upload --dry-run read a file in the encoding named,
// and bytes not valid UTF-8 in a file read as UTF-8 reject their row (file, line, byte offset).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RejectRecord, TrackRequest } from '../../src/model/index.js';
import { ndjson, track, workdir } from './run-cli.js';

let dir: string;
beforeAll(() => {
  dir = workdir();
  // 0x80 is € in windows-1252 and U+0080 in latin1 (ISO-8859-1); 0xE9 is é in both; 0xFF is not UTF-8
  writeFileSync(join(dir, 'export.csv'), Buffer.from([...Buffer.from('external_id,note\nu1,'), 0x80, 0xe9, ...Buffer.from('\nu'), 0xff, ...Buffer.from('2,plain\n')]));
  writeFileSync(join(dir, 'wide.ndjson'), Buffer.from('\ufeff{"external_id":"u1","note":"Zürich €"}\n', 'utf16le'));
  // a JSON array whose first element holds 0xE9 (é in latin1) at byte 32
  writeFileSync(join(dir, 'array.json'), Buffer.from([...Buffer.from('[{"external_id":"u1","note":"Caf'), 0xe9, ...Buffer.from('"},\n{"external_id":"u2","note":"plain"}]')]));
});

const bodies = (path: string) => ndjson<TrackRequest>(path).flatMap((r) => r.attributes ?? []);

describe('--encoding', () => {
  it('reads the file as the encoding says, on validate and on upload --dry-run', () => {
    const latin1 = track(['validate', 'export.csv', '--encoding', 'latin1', '--out', 'latin1.out.ndjson'], { cwd: dir });
    expect(latin1.status).toBe(0);
    expect(bodies(join(dir, 'latin1.out.ndjson'))).toEqual([{ external_id: 'u1', note: '\u0080é' }, { external_id: 'uÿ2', note: 'plain' }]);
    const cp1252 = track(['upload', '--dry-run', 'export.csv', '--encoding', 'windows-1252', '--out', 'cp1252.out.ndjson'], { cwd: dir });
    expect(cp1252.status).toBe(0);
    expect(bodies(join(dir, 'cp1252.out.ndjson'))).toEqual([{ external_id: 'u1', note: '€é' }, { external_id: 'uÿ2', note: 'plain' }]);
    const utf16 = track(['validate', 'wide.ndjson', '--encoding', 'utf-16le', '--out', 'utf16.out.ndjson'], { cwd: dir });
    expect(utf16.status).toBe(0);
    expect(bodies(join(dir, 'utf16.out.ndjson'))).toEqual([{ external_id: 'u1', note: 'Zürich €' }]);
  });

  it('as utf-8 (the default), rejects the rows holding bytes that are not UTF-8, naming the byte offset, instead of sending U+FFFD', () => {
    const result = track(['validate', 'export.csv', '--out', 'utf8.out.ndjson', '--rejects', 'utf8.rejects.ndjson'], { cwd: dir });
    expect(result.status).toBe(1);
    expect(bodies(join(dir, 'utf8.out.ndjson'))).toEqual([]);
    const rejects = ndjson<RejectRecord>(join(dir, 'utf8.rejects.ndjson'));
    expect(rejects.map((r) => [r.file, r.line, r.errors[0].replace(/; save .*/, '')])).toEqual([
      ['export.csv', 2, 'note: byte 0x80 at byte offset 20 of the file is not valid UTF-8'],
      ['export.csv', 3, 'external_id: byte 0xFF at byte offset 24 of the file is not valid UTF-8'],
    ]);
    expect(rejects[1].row).toEqual({ external_id: 'u\uFFFD2', note: 'plain' });
  });

  it('as utf-8, rejects the element of a JSON array that holds such a byte, naming it, and sends the others', () => {
    const result = track(['validate', 'array.json', '--out', 'array.out.ndjson', '--rejects', 'array.rejects.ndjson'], { cwd: dir });
    expect(result.status).toBe(1);
    expect(bodies(join(dir, 'array.out.ndjson'))).toEqual([{ external_id: 'u2', note: 'plain' }]);
    const rejects = ndjson<RejectRecord>(join(dir, 'array.rejects.ndjson'));
    expect(rejects.map((r) => [r.file, r.line, r.errors[0].replace(/; save .*/, '')])).toEqual([['array.json', 1, 'row: byte 0xE9 at byte offset 32 of the file is not valid UTF-8']]);
    expect(rejects[0].row).toBe('{"external_id":"u1","note":"Caf\uFFFD"}');
    const latin1 = track(['validate', 'array.json', '--encoding', 'latin1', '--out', 'array-latin1.out.ndjson'], { cwd: dir });
    expect(latin1.status).toBe(0);
    expect(bodies(join(dir, 'array-latin1.out.ndjson'))).toEqual([{ external_id: 'u1', note: 'Café' }, { external_id: 'u2', note: 'plain' }]);
  });

  it('tells a CSV file of UTF-16 without its mark (as bcp -w writes it) by the NUL beside each letter of its header, before a --map is matched', () => {
    const text = 'external_id,first_name\r\nu1,Zoë\r\n';
    writeFileSync(join(dir, 'bare-le.csv'), Buffer.from(text, 'utf16le'));
    writeFileSync(join(dir, 'bare-be.csv'), Buffer.from(text, 'utf16le').swap16());
    writeFileSync(join(dir, 'names.map.json'), JSON.stringify({ first_name: 'first_name' }));
    for (const map of [[], ['--map', 'names.map.json']]) {
      const le = track(['validate', 'bare-le.csv', ...map], { cwd: dir });
      expect(le.status).toBe(2);
      expect(le.stderr).toBe(
        'track: bare-le.csv:1: the header cannot be read: its names hold a NUL byte after each letter, as UTF-16LE text without its mark does: give --encoding utf-16le\n',
      );
      const be = track(['validate', 'bare-be.csv', ...map], { cwd: dir });
      expect(be.status).toBe(2);
      expect(be.stderr).toBe(
        'track: bare-be.csv:1: the header cannot be read: its names hold a NUL byte before each letter, as UTF-16BE text does, which no --encoding reads: save the file as UTF-8\n',
      );
    }
    const read = track(['validate', 'bare-le.csv', '--encoding', 'utf-16le', '--out', 'bare.out.ndjson'], { cwd: dir });
    expect(read.status).toBe(0);
    expect(bodies(join(dir, 'bare.out.ndjson'))).toEqual([{ external_id: 'u1', first_name: 'Zoë' }]);
  });

  it('refuses an encoding it does not know', () => {
    const result = track(['validate', 'export.csv', '--encoding', 'ebcdic'], { cwd: dir });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/--encoding.*utf-8.*latin1.*windows-1252.*utf-16le/s);
  });
});
