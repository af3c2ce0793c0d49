// A local file's bytes, read a chunk at a time by plain reads; a file cut, or replaced, while it is
// read is an error naming it, not an end.
import { closeSync, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { InputError } from '../errors.js';

/**
 * A file's bytes read a chunk at a time by plain reads: the page cache answers them at once, where a
 * read handed to the thread pool (open, read, close) woke a thread each, and thousands of small files
 * spent more time in those than in their rows (a dry run of 10,000 files of 100 rows: 7.4 s of CPU,
 * now 3.5 s). A read that did not fill its buffer leaves the rest to the next read (the one that
 * finds the end, for a small file read whole): a buffer is allocated only once the last is full.
 * `opened`: the file as it was when opened, for checkUnchanged() at its end.
 */
export async function* fileChunks(file: string, chunk: number, opened: Stats): AsyncGenerator<Buffer> {
  const fd = openSync(file, 'r');
  try {
    let buffer = Buffer.allocUnsafeSlow(chunk);
    let at = 0;
    let total = 0;
    for (;;) {
      // a turn of the event loop between reads, as a read handed off gives: a signal (Ctrl-C), a
      // timer and the sockets are seen to while a folder of files is read
      await new Promise((resolve) => setImmediate(resolve));
      if (at === chunk) {
        buffer = Buffer.allocUnsafeSlow(chunk);
        at = 0;
      }
      // (what was handed on before `at` is never written again)
      const read = readSync(fd, buffer, at, chunk - at, null);
      if (read === 0) return checkUnchanged(file, fd, opened, total);
      total += read;
      yield at === 0 && read === chunk ? buffer : buffer.subarray(at, at + read);
      at += read;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Buffers that transient reads are done with, for the next: a folder of 10,000 small files read
 * into a new buffer each left as many buffers for the collector to find, outside the heap, and the
 * process grew by megabytes before it did (more than two buffers are kept only while more files are
 * read at once).
 */
const spareBuffers: Buffer[] = [];
const SPARE_BUFFERS = 2;

/**
 * A file's bytes read a chunk at a time into one buffer (a spare one when there is one), each chunk
 * valid until the next is asked for; `opened` as for fileChunks().
 */
export async function* transientChunks(file: string, chunk: number, opened: Stats): AsyncGenerator<Buffer> {
  const fd = openSync(file, 'r');
  const spare = spareBuffers.findIndex((buffer) => buffer.length === chunk);
  const buffer = spare === -1 ? Buffer.allocUnsafeSlow(chunk) : spareBuffers.splice(spare, 1)[0];
  let total = 0;
  try {
    for (;;) {
      // (a turn of the event loop between reads, as in fileChunks)
      await new Promise((resolve) => setImmediate(resolve));
      const read = readSync(fd, buffer, 0, chunk, null);
      if (read === 0) return checkUnchanged(file, fd, opened, total);
      total += read;
      yield read === chunk ? buffer : buffer.subarray(0, read);
    }
  } finally {
    closeSync(fd);
    if (spareBuffers.length < SPARE_BUFFERS) spareBuffers.push(buffer);
  }
}

/**
 * A file read to its end that holds fewer bytes than it did when it was opened (`read`: the bytes
 * read) was cut while it was read, and one whose name now gives another file was replaced: either
 * is an error naming it, not an end, or the rows after the cut would go unsent unsaid and its last
 * row, cut through, would be rejected as a bad row. (A file that grows is read on: a log written to.)
 */
function checkUnchanged(file: string, fd: number, opened: Stats, read: number): void {
  const count = (bytes: number): string => `${bytes.toLocaleString('en-US')} bytes`;
  if (read < opened.size) {
    const now = fstatSync(fd).size;
    throw new InputError(`changed while it was read: it was ${count(opened.size)} when opened and ${count(now)} at the end (read to byte ${read.toLocaleString('en-US')}); ${AFTER_CHANGE}`, file);
  }
  let there: Stats | undefined;
  try {
    there = statSync(file);
  } catch {
    // removed while it was read: every byte it held was read all the same
    return;
  }
  if (there.ino !== opened.ino || there.dev !== opened.dev) {
    throw new InputError(`changed while it was read: another file took its name (it was ${count(opened.size)} when opened, the file there now is ${count(there.size)}); ${AFTER_CHANGE}`, file);
  }
}

/** What to do about an input that changed while it was read. */
const AFTER_CHANGE = 'put the file back as it was and run again (an upload: with --resume, to send the rows after the change)';
