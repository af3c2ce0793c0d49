// Decoding each encoding chunk by chunk: the same text however the bytes are split, and every byte
// that is not valid marked with its value and its offset in the file, never turned into U+FFFD.
import { describe, expect, it } from 'vitest';
import { createDecoding, undecodableIn, undecodableMessage, withoutMarks, type InputEncoding } from '../../src/input/decode.js';

function decode(bytes: Buffer, encoding: InputEncoding, chunk: number): { text: string; damaged: boolean } {
  const decoding = createDecoding(encoding);
  let text = '';
  for (let at = 0; at < bytes.length; at += chunk) text += decoding.write(bytes.subarray(at, at + chunk));
  text += decoding.end();
  return { text, damaged: decoding.damaged };
}

const CHUNKS = [1, 2, 3, 5, 7, 64];

describe('createDecoding', () => {
  it('reads valid UTF-8 as Buffer.toString does, split anywhere', () => {
    const bytes = Buffer.from('\ufeffa,é,€,😀,𝄞,\u0000,\uFFFD\n'.repeat(3));
    for (const chunk of CHUNKS) expect(decode(bytes, 'utf-8', chunk)).toEqual({ text: bytes.toString('utf8'), damaged: false });
  });

  it('marks each byte that is not valid UTF-8 with its offset, whatever the chunks', () => {
    // 0xFF; a lone continuation byte; an overlong "/"; a UTF-16 surrogate; a character cut short at the end
    const bytes = Buffer.concat([Buffer.from('u'), Buffer.from([0xff]), Buffer.from('2 '), Buffer.from([0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from('é'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xe2, 0x82])]);
    for (const chunk of CHUNKS) {
      const { text, damaged } = decode(bytes, 'utf-8', chunk);
      expect(damaged).toBe(true);
      expect(withoutMarks(text)).toBe('u\uFFFD2 \uFFFD\uFFFD\uFFFDé\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD');
      expect(undecodableIn(text)).toEqual({ index: 1, value: 0xff, offset: 1 });
      const afterFirst = text.slice(text.indexOf('2'));
      expect(undecodableIn(afterFirst)).toMatchObject({ value: 0x80, offset: 4 });
    }
  });

  it('finds nothing in text that holds no mark, and says what a mark means', () => {
    expect(undecodableIn('plain é 😀 \uFFFD')).toBeUndefined();
    const text = decode(Buffer.concat([Buffer.alloc(70_000, 0x61), Buffer.from([0xff])]), 'utf-8', 4096).text;
    const found = undecodableIn(text)!;
    expect(found).toEqual({ index: 70_000, value: 0xff, offset: 70_000 });
    expect(undecodableMessage(found)).toBe(
      'byte 0xFF at byte offset 70000 of the file is not valid UTF-8; save the file as UTF-8, or give its encoding with --encoding latin1, windows-1252 or utf-16le',
    );
  });

  it('reads latin1 as ISO-8859-1 and windows-1252 as Windows-1252, where bytes 0x80-0x9F differ', () => {
    const bytes = Buffer.from([0x80, 0x9f, 0xe9, 0x41, 0xff]);
    for (const chunk of CHUNKS) {
      expect(decode(bytes, 'latin1', chunk)).toEqual({ text: '\u0080\u009féAÿ', damaged: false });
      expect(decode(bytes, 'windows-1252', chunk)).toEqual({ text: '€ŸéAÿ', damaged: false });
    }
  });

  it('reads UTF-16LE split anywhere, even inside a surrogate pair, and marks lone surrogates and an odd last byte', () => {
    const good = Buffer.from('\ufeffé€😀A\n', 'utf16le');
    for (const chunk of CHUNKS) expect(decode(good, 'utf-16le', chunk)).toEqual({ text: '\ufeffé€😀A\n', damaged: false });
    const bad = Buffer.concat([Buffer.from('a', 'utf16le'), Buffer.from([0x00, 0xd8]), Buffer.from('b', 'utf16le'), Buffer.from([0x41])]);
    for (const chunk of CHUNKS) {
      const { text, damaged } = decode(bad, 'utf-16le', chunk);
      expect(damaged).toBe(true);
      expect(withoutMarks(text)).toBe('a\uFFFDb\uFFFD');
      expect(undecodableIn(text)).toEqual({ index: 1, value: 0xd800, offset: 2 });
      expect(undecodableMessage(undecodableIn(text)!, 'utf-16le')).toMatch(/^the unit 0xD800 \(a lone surrogate\) at byte offset 2 of the file is not valid UTF-16LE/);
    }
  });
});
