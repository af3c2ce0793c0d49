// The run's events as NDJSON: one JSON object a line, on stderr (--progress ndjson) or in a file
// (--events FILE). Each line is written whole in one write, at once: a process killed at any point
// (kill -9 included) leaves a file whose every complete line parses.
import { closeSync, openSync, writeSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { descriptorOf, folderProblem, linkTarget, pipeReader } from '../../file-folder.js';
import { checkNotOwnDescriptor } from '../../upload/check.js';
import type { RunConsumer, RunEvent } from './run-events.js';

/** Writes each event as a line to `write`; progress every `progressEvery` seconds. */
export function ndjsonEvents(write: (line: string) => void, progressEvery: number): RunConsumer {
  return { progressEvery, event: (event: RunEvent) => write(`${JSON.stringify(event)}\n`) };
}

/** The events written to a file, created (or emptied) before the run starts. */
export function eventsFile(path: string, progressEvery: number, warn: (message: string) => void): RunConsumer {
  let fd: number | undefined;
  // a descriptor the shell gave (/dev/stdout, /dev/fd/3) is written through as it is: opened anew, a
  // file behind it would be emptied, and written over by the run's other lines
  const given = descriptorOf(linkTarget(path));
  if (path.endsWith('/')) throw new UsageError(`cannot write --events ${path}: names a folder; give the path of a file`);
  checkNotOwnDescriptor('--events', path);
  const reader = given === undefined ? pipeReader(path) : undefined;
  if (reader?.missing === true) throw new UsageError(`cannot write --events ${path}: a named pipe no process reads; start its reader first`);
  try {
    fd = given ?? openSync(path, 'w');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // a path in a folder that is not there is told by the folder, as every output's is
    const problem = code === 'ENOENT' || code === 'ENOTDIR' ? folderProblem(path) : code === 'EISDIR' ? 'it is a folder; give the path of a file' : undefined;
    throw new UsageError(`cannot write --events ${path}${problem === undefined ? ` (${code ?? (error as Error).message})` : `: ${problem}`}`);
  } finally {
    reader?.release();
  }
  let failed = false;
  const consumer = ndjsonEvents((line) => {
    if (fd === undefined || failed) return;
    try {
      writeSync(fd, line);
    } catch (error) {
      // a full disk must not stop the upload: the events file stops where it could
      failed = true;
      warn(`--events ${path}: stopped writing (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
  }, progressEvery);
  return {
    ...consumer,
    close: async () => {
      if (fd !== undefined && given === undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
