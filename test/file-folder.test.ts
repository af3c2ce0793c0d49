// Where the run's files land: the folder a file is to be made in, the file a link names, and the
// paths that are this process's open files (written to as they are, or not at all).
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { descriptorOf, folderProblem, isStream, linkTarget, ownDescriptorProblem } from '../src/file-folder.js';

const dir = mkdtempSync(join(tmpdir(), 'track-file-folder-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const linux = existsSync('/proc/self/fdinfo');

describe('the file a path names', () => {
  it('follows links as the file system does, and tells a loop', () => {
    mkdirSync(join(dir, 'deep', 'a', 'b'), { recursive: true });
    symlinkSync(join('deep', 'a', 'b'), join(dir, 'via'));
    symlinkSync(join('..', 'x.json'), join(dir, 'deep', 'a', 'b', 'up'));
    // `..` from the folder the link is in, as the file system finds it: deep/a, not the folder of `via`
    expect(linkTarget(join(dir, 'via', 'up'))).toBe(`${join(dir, 'deep', 'a', 'b')}/../x.json`);
    expect(folderProblem(join(dir, 'via', 'up'))).toBeUndefined();
    symlinkSync('loop-b', join(dir, 'loop-a'));
    symlinkSync('loop-a', join(dir, 'loop-b'));
    expect(folderProblem(join(dir, 'loop-a'))).toMatch(/^it is a link whose links go round in a loop/);
  });

  it('names standard output and error however the path is written, and no other descriptor', () => {
    expect(descriptorOf('/dev/stdout')).toBe(1);
    expect(descriptorOf('//dev/./stderr')).toBe(2);
    expect(descriptorOf('/dev/fd/1')).toBe(1);
    expect(descriptorOf(`/proc/${process.pid}/fd/2`)).toBe(2);
    expect(descriptorOf('/dev/fd/3')).toBe(3);
    expect(descriptorOf('/dev/stdin')).toBe(0);
    expect(descriptorOf(join(dir, 'x.json'))).toBeUndefined();
    expect(isStream('/dev/stdout')).toBe(true);
    expect(isStream('/dev/null')).toBe(true);
    // a file under /dev is a file
    if (existsSync('/dev/shm')) expect(isStream('/dev/shm/no-such-file')).toBe(false);
    expect(isStream(join(dir, 'x.json'))).toBe(false);
  });

  it.skipIf(!linux)('refuses the pipes node holds for itself, not a file opened on a descriptor', () => {
    // node's wake-up pipes: this process holds both ends; a write to either would crash it
    const mode = (fd: string): number => parseInt(/^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'))![1], 8) & 3;
    const pipes = readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        const target = readlinkSync(`/proc/self/fd/${fd}`);
        return target.startsWith('pipe:') ? [{ fd, target, mode: mode(fd) }] : [];
      } catch {
        return [];
      }
    });
    const writeEnd = pipes.find((p) => p.mode === 1 && pipes.some((q) => q.target === p.target && q.mode === 0));
    expect(Number(writeEnd?.fd)).toBeGreaterThan(2);
    expect(ownDescriptorProblem(`/dev/fd/${writeEnd!.fd}`)).toBe(`one of this program's own descriptors (${writeEnd!.target})`);
    const fd = openSync(join(dir, 'given.log'), 'w');
    try {
      expect(ownDescriptorProblem(`/dev/fd/${fd}`)).toBeUndefined();
    } finally {
      closeSync(fd);
    }
    expect(ownDescriptorProblem('/dev/fd/1')).toBeUndefined();
    // standard input is read; a descriptor not open now would be one the program opens later for itself
    expect(ownDescriptorProblem('/dev/stdin')).toBe('standard input, which is read, not written');
    expect(ownDescriptorProblem('/dev/fd/987')).toMatch(/^descriptor 987, which is not open/);
    // one open for reading only
    const read = openSync(join(dir, 'given.log'), 'r');
    try {
      expect(ownDescriptorProblem(`/proc/self/fd/${read}`)).toBe(`descriptor ${read}, which is open for reading only`);
    } finally {
      closeSync(read);
    }
    expect(ownDescriptorProblem(join(dir, 'x.json'))).toBeUndefined();
  });
});
