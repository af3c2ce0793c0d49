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
    expect(descriptorOf('/dev/fd/3')).toBeUndefined();
    expect(descriptorOf('/dev/stdin')).toBeUndefined();
    expect(isStream('/dev/stdout')).toBe(true);
    expect(isStream('/dev/null')).toBe(true);
    // a file under /dev is a file
    if (existsSync('/dev/shm')) expect(isStream('/dev/shm/no-such-file')).toBe(false);
    expect(isStream(join(dir, 'x.json'))).toBe(false);
  });

  it.skipIf(!linux)('refuses the pipes node holds for itself, not a file opened on a descriptor', () => {
    // a pipe this process holds the reading end of is node's own: a write there would crash it
    const own = readdirSync('/proc/self/fd').find((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith('pipe:') && (parseInt(/^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'))![1], 8) & 3) === 0;
      } catch {
        return false;
      }
    });
    expect(Number(own)).toBeGreaterThan(2);
    expect(ownDescriptorProblem(`/dev/fd/${own}`)).toMatch(/^pipe:\[\d+\]$/);
    const fd = openSync(join(dir, 'given.log'), 'w');
    try {
      expect(ownDescriptorProblem(`/dev/fd/${fd}`)).toBeUndefined();
    } finally {
      closeSync(fd);
    }
    expect(ownDescriptorProblem('/dev/fd/1')).toBeUndefined();
    expect(ownDescriptorProblem(join(dir, 'x.json'))).toBeUndefined();
  });
});
