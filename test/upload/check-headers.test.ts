// The check of every CSV input's header before a run: files whose header lines are the same bytes
// (the files of one export) are told apart from those whose header only looks the same.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { InputError, UsageError } from '../../src/errors.js';
import { checkHeaders } from '../../src/upload/check.js';

const dir = mkdtempSync(join(tmpdir(), 'track-check-headers-'));
const file = (name: string, content: string | Buffer): string => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

describe('checkHeaders', () => {
  it('accepts many files of one header, and names the first file whose header cannot be used', async () => {
    const good = Array.from({ length: 5 }, (_, i) => file(`part-${i}.csv`, `external_id,plan\nu${i},pro\n`));
    await expect(checkHeaders({ inputs: good }, undefined)).resolves.toEqual([]);
    // the same header bytes as a bad file before them: the first of them is named
    const bad = [file('bad-1.csv', 'first_name,plan\nAda,pro\n'), file('bad-2.csv', 'first_name,plan\nGrace,free\n')];
    const checked = checkHeaders({ inputs: [...good, ...bad] }, undefined);
    await expect(checked).rejects.toThrow(InputError);
    await expect(checkHeaders({ inputs: [...good, ...bad] }, undefined)).rejects.toThrow(/bad-1\.csv:1: the header cannot be used/);
  });

  it('reads headers of other delimiters, gzipped or after a byte-order mark, each as its own', async () => {
    const plain = file('plain.csv', 'external_id;plan\nu1;pro\n');
    const packed = file('packed.csv', gzipSync('external_id,plan\nu2,pro\n'));
    const marked = file('marked.csv', '\uFEFFexternal_id;plan\nu3;pro\n');
    const tabs = file('tabs.csv', 'external_id\tplan\nu4\tpro\n');
    await expect(checkHeaders({ inputs: [plain, packed, marked, tabs] }, undefined)).resolves.toEqual([]);
    // a map's column is found in whichever of them has it
    const map = new Map([['plan', 'plan']]);
    await expect(checkHeaders({ inputs: [plain, packed, marked, tabs] }, map)).resolves.toEqual([]);
  });

  it('reads the header of a file whose first line is blank from the line it is on, whatever other files begin with', async () => {
    // the reader passes over a blank line (LF, CRLF, or a byte-order mark alone) before the header
    const good = file('blank-good.csv', '\nexternal_id,name\nu1,Ann\n');
    const bad = file('blank-bad.csv', '\nfoo,bar\n1,2\n');
    await expect(checkHeaders({ inputs: [good, bad] }, undefined)).rejects.toThrow(/blank-bad\.csv:2: the header cannot be used/);
    const crlf = file('blank-crlf.csv', '\r\nfoo,bar\r\n1,2\r\n');
    const crlfGood = file('blank-crlf-good.csv', '\r\nexternal_id,name\r\nu1,Ann\r\n');
    await expect(checkHeaders({ inputs: [crlfGood, crlf] }, undefined)).rejects.toThrow(/blank-crlf\.csv:2/);
    const marked = file('blank-marked.csv', '\uFEFF\nfoo,bar\n1,2\n');
    const markedGood = file('blank-marked-good.csv', '\uFEFF\nexternal_id,name\nu1,Ann\n');
    await expect(checkHeaders({ inputs: [markedGood, marked] }, undefined)).rejects.toThrow(/blank-marked\.csv:2/);
    // a --map's column in the second file's header is found there
    const first = file('blank-first.csv', '\nexternal_id,first\nu1,Ann\n');
    const nick = file('blank-nick.csv', '\nexternal_id,Nick\nu2,Bo\n');
    await expect(checkHeaders({ inputs: [first, nick] }, new Map([['Nick', 'nickname']]))).resolves.toEqual([]);
  });

  it('tells gzip files apart by what they inflate to, not by their first line of bytes', async () => {
    // a gzip header's comment (FCOMMENT) may hold a line feed: two files the same up to it
    const commented = (text: string): Buffer => {
      const packed = gzipSync(text);
      const head = Buffer.from(packed.subarray(0, 10));
      head[3] |= 0x10;
      return Buffer.concat([head, Buffer.from('export\n\0'), packed.subarray(10)]);
    };
    const first = file('first.csv.gz', commented('external_id,plan\nu1,pro\n'));
    const second = file('second.csv.gz', commented('external_id,tier\nu2,pro\n'));
    const map = new Map([['tier', 'plan']]);
    await expect(checkHeaders({ inputs: [first, second] }, map)).resolves.toEqual([]);
    await expect(checkHeaders({ inputs: [first] }, map)).rejects.toThrow(/tier/);
  });

  it('tells UTF-16 headers apart past a byte that is a line feed in UTF-8', async () => {
    const utf16 = (text: string): Buffer => Buffer.from(`\uFEFF${text}`, 'utf16le');
    // U+010A is the bytes 0A 01: the same bytes to there as a header that ends with a line feed (0A 00)
    const ended = file('ended.csv', utf16('external_id,plan\nu1,pro\n'));
    const longer = file('longer.csv', utf16('external_id,plan\u010A,tier\nu2,pro,gold\n'));
    const map = new Map([['tier', 'plan']]);
    await expect(checkHeaders({ inputs: [ended, longer], encoding: 'utf-16le' }, map)).resolves.toEqual([]);
    await expect(checkHeaders({ inputs: [ended], encoding: 'utf-16le' }, map)).rejects.toThrow(/tier/);
  });

  it('reads a quoted header that holds a line feed whole, though a file before it begins with the same line', async () => {
    const oneLine = file('one-line.csv', '"external_id,plan\nu1,pro\n');
    // (read alone, the first file's header quote runs on: it cannot be used)
    await expect(checkHeaders({ inputs: [oneLine] }, undefined)).rejects.toThrow(/one-line\.csv/);
    const first = file('first.csv', 'external_id,"plan\nu1,pro\n');
    const quoted = file('quoted.csv', 'external_id,"plan\nname"\nu1,pro\n');
    await expect(checkHeaders({ inputs: [quoted] }, undefined)).resolves.toEqual([]);
    await expect(checkHeaders({ inputs: [first, quoted] }, undefined)).rejects.toThrow(/first\.csv/);
    await expect(checkHeaders({ inputs: [quoted, first] }, undefined)).rejects.toThrow(/first\.csv/);
  });

  it('names a column a --map gives that no file of a shared header has', async () => {
    const parts = Array.from({ length: 3 }, (_, i) => file(`shared-${i}.csv`, `external_id,plan\nu${i},pro\n`));
    const map = new Map([['tier', 'plan']]);
    await expect(checkHeaders({ inputs: parts, mapFile: 'map.json' }, map)).rejects.toThrow(UsageError);
    await expect(checkHeaders({ inputs: parts, mapFile: 'map.json' }, map)).rejects.toThrow(/tier/);
  });
});
