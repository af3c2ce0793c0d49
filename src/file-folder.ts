// Where a file is to be made (an output, a journal, a state, an emulator's database): its folder,
// checked before anything is written, so that a path in a folder that is not there is told as the
// person's to fix, with the folder named, not as an error code from the file system; the file a
// link there names, as the file system follows it; and the paths that are a process's open files
// (standard output: written as it is) or this program's own descriptors (never written).
import { accessSync, closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve } from 'node:path';

/** Links followed at most (as the kernel follows them: ELOOP past 40). */
const MOST_LINKS = 40;

/**
 * The path a file written at `path` lands at: `path` itself, or where the link there points, link by
 * link (the last may name no file yet: a link to a file to be made). A relative link is read from
 * its folder as the file system finds it (`..` from a folder reached through a link is that
 * folder's parent, not the link's). An open file's link (/dev/stdout, anything under /proc) is not
 * followed: see isStream. Past MOST_LINKS links (a loop), the last one reached: a link still.
 */
export function linkTarget(path: string): string {
  let at = path;
  for (let hops = 0; hops < MOST_LINKS; hops += 1) {
    if (!isLink(at) || isOpenFileLink(at)) return at;
    const folder = dirname(at);
    let real: string;
    try {
      // (the system's own: node's resolves `..` as text before it follows the links)
      real = realpathSync.native(folder);
    } catch {
      real = resolve(folder);
    }
    // joined as text, not resolved: `..` in the link is the file system's to read (see above)
    const link = readlinkSync(at);
    at = isAbsolute(link) ? link : `${real === '/' ? '' : real}/${link}`;
  }
  return at;
}

/** Paths that name a process's open file: /dev/stdout, /dev/fd/N, /proc/self/fd/N (whose links are not followed: see isStream). */
const OPEN_FILE = /^\/(?:dev\/(?:stdin|stdout|stderr|fd\/\d+)|proc\/(?:self|thread-self|\d+)\/fd\/\d+)$/;

/** A link linkTarget stops at: an open file's, or any under /proc (its targets are the kernel's names, such as `pipe:[123]`). */
const isOpenFileLink = (path: string): boolean => {
  const at = placeOf(path);
  return OPEN_FILE.test(at) || at.startsWith('/proc/');
};

/**
 * Whether `path` names one of a process's open files (/dev/stdout, /dev/fd/N, /proc/self/fd/N: a
 * terminal, a pipe, or the file a shell sent them to) or anything under /dev or /proc that is not a
 * file (a device): written to as it is, never removed nor replaced. The link of an open file is not
 * followed (its target may be the file standard output was sent to: removing it would lose that
 * file). A file under /dev (/dev/shm) is a file.
 */
export function isStream(path: string): boolean {
  const absolute = placeOf(path);
  if (OPEN_FILE.test(absolute)) return true;
  if (!/^\/(dev|proc)\//.test(absolute)) return false;
  try {
    return !statSync(absolute).isFile();
  } catch {
    return false;
  }
}

/**
 * Why a file SQLite reads back and writes in place (an emulator's database, the delta state) cannot
 * be at `path`: it names standard output or a device (itself, or through a link); undefined when not.
 */
export const notAFileProblem = (path: string): string | undefined =>
  isStream(linkTarget(path)) ? 'names standard output or a device; give the path of a file' : undefined;

/**
 * For a named pipe at `path`: whether no process has it open for reading (opening it to write would
 * wait until one does, where no signal can end the wait: it holds the thread that would take the
 * signal, or one the process's exit waits for). When one does, the pipe is held open to write until
 * `release()`, called once the output's own open is done: a reader that finds no writer left (the
 * look's own, closed) takes the pipe for ended and goes.
 */
export function pipeReader(path: string): { missing: boolean; release(): void } {
  const none = { missing: false, release: () => undefined };
  try {
    if (!statSync(path).isFIFO()) return none;
  } catch {
    return none;
  }
  try {
    // without waiting: ENXIO says no reader is there
    const fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    return { missing: false, release: () => closeSync(fd) };
  } catch (error) {
    return { missing: (error as NodeJS.ErrnoException).code === 'ENXIO', release: () => undefined };
  }
}

/**
 * The descriptor of this process a path names when it is open on a regular file (standard output
 * sent to one): written through, since opened anew the file would be emptied, or its lines written
 * over. Undefined otherwise: a pipe or a terminal is opened anew, as it always was (one the process
 * reads as a stream may not be waited on by a write).
 */
export function givenFileDescriptor(path: string): number | undefined {
  const fd = descriptorOf(linkTarget(path));
  if (fd === undefined) return undefined;
  try {
    return fstatSync(fd).isFile() ? fd : undefined;
  } catch {
    return undefined;
  }
}

/** The descriptor of this process a path names (/dev/stdout: 1, ../../dev/stdout, /dev/fd/3, /proc/self/fd/3), however written; undefined for any other path. */
export function descriptorOf(path: string): number | undefined {
  const at = placeOf(path);
  const named = ({ '/dev/stdin': 0, '/dev/stdout': 1, '/dev/stderr': 2 } as Record<string, number>)[at];
  if (named !== undefined) return named;
  const fd = new RegExp(`^/(?:dev/fd|proc/(?:self|thread-self|${process.pid})/fd)/(\\d+)$`).exec(at)?.[1];
  return fd === undefined ? undefined : Number(fd);
}

/**
 * Why an output may not be written to the descriptor a path names, or undefined (not a descriptor's
 * path, or one the shell gave the run to write to: written through that descriptor, as it is).
 * Refused: standard input (the run may read it, and a file behind it is the person's input); a
 * descriptor not open when the run starts (it would be one the program opens later for itself); one
 * open for reading only; and the program's own (an event queue, or a pipe whose reading end it holds:
 * node's wake-up pipes; one given it to write to, 3> >(cmd), it holds written ends of only).
 */
export function ownDescriptorProblem(path: string): string | undefined {
  const fd = descriptorOf(linkTarget(path));
  if (fd === undefined || fd === 1 || fd === 2) return undefined;
  if (fd === 0) return 'standard input, which is read, not written';
  let target: string;
  try {
    target = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    // (no /proc: not told apart)
    if (!existsSync('/proc/self/fd')) return undefined;
    return `descriptor ${fd}, which is not open: the shell gives the run one with ${fd}> FILE`;
  }
  if (accessMode(fd) === 0) return `descriptor ${fd}, which is open for reading only`;
  if (target.startsWith('anon_inode:')) return `one of this program's own descriptors (${target})`;
  if (!target.startsWith('pipe:')) return undefined;
  for (const other of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${other}`) === target && accessMode(Number(other)) === 0) return `one of this program's own descriptors (${target})`;
    } catch {
      // (one closed meanwhile)
    }
  }
  return undefined;
}

/** A descriptor's access mode (0 reads, 1 writes, 2 both), the last octal digit of its flags; undefined when not known. */
function accessMode(fd: number): number | undefined {
  try {
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'))?.[1];
    return flags === undefined ? undefined : parseInt(flags, 8) & 3;
  } catch {
    return undefined;
  }
}

/** The path with its folder as the file system finds it (`..` read there), its last part as it is (not followed). */
function placeOf(path: string): string {
  try {
    const folder = realpathSync.native(dirname(path));
    return `${folder === '/' ? '' : folder}/${basename(path)}`;
  } catch {
    return resolve(path);
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Why no file can be made at `path`: its folder does not exist, is not a folder, or is not the
 * person's to write in; undefined when it can. The folder is the path's as written: `x/..` is no
 * folder when `x` is none (the file system resolves it so, where a text resolution would not); for
 * a link, its target's.
 */
export function folderProblem(path: string): string | undefined {
  // a link is written through: the folder is its target's (a link into a folder that is not there is no place to write)
  const target = linkTarget(path);
  // (a link still, and not one linkTarget stops at: its links went round)
  if (isLink(target) && !isOpenFileLink(target)) return `it is a link whose links go round in a loop (or through more than ${MOST_LINKS}); give a file, or a link to one`;
  const through = target === path ? '' : `it links to ${target}, and `;
  const problem = targetFolderProblem(target);
  return problem === undefined ? undefined : `${through}${problem}`;
}

function targetFolderProblem(path: string): string | undefined {
  const folder = dirname(path);
  const shown = folder === '.' ? resolve(folder) : folder;
  let isFolder: boolean;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `the folder ${shown} does not exist; create it, or give a path in a folder that does`;
    if (code === 'ENOTDIR') return `${shown} is not a folder`;
    return `cannot reach the folder ${shown} (${code ?? String(error)})`;
  }
  if (!isFolder) return `${shown} is not a folder`;
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (error) {
    return `cannot write in the folder ${shown} (${(error as NodeJS.ErrnoException).code ?? String(error)}); give a path in a folder you can write in`;
  }
  return undefined;
}
