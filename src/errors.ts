// The named errors a person can act on; src/cli/ turns them into messages and exit codes.

/** The command line or configuration is wrong; nothing was sent. Exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** An input file cannot be read at all (missing, unreadable, changed since the journal). Exit 2. */
export class InputError extends Error {
  override name = 'InputError';
  constructor(
    message: string,
    readonly file?: string,
    readonly line?: number,
  ) {
    super(file === undefined ? message : `${file}${line === undefined ? '' : `:${line}`}: ${message}`);
  }
}

/** A person's mistake to fix (a usage or an input error): a run it stops before anything is sent ends with exit 2, and leaves its records as they were. */
export const isMistake = (error: unknown): boolean => error instanceof UsageError || error instanceof InputError;

/**
 * An input could not be read to its end: the network failed while reading an object in storage and
 * the retries ran out. Not the person's mistake: the run stops as a failure (exit 3), resumable.
 */
export class SourceError extends Error {
  override name = 'SourceError';
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(`${file}: ${message}`);
  }
}

/** The run was stopped (Ctrl-C, SIGTERM) while it waited on an input in storage, before it sent anything. Exit 130. */
export class StoppedError extends Error {
  override name = 'StoppedError';
}

/** An error a reader passes on as it is, not wrapped as its own: the input's, the source's, or the run's stop. */
export const passesThrough = (error: unknown): boolean => error instanceof InputError || error instanceof SourceError || error instanceof StoppedError;

/** Delivery stopped: the server refused the key, retries ran out, or it cannot be reached. Exit 3. */
export class DeliveryError extends Error {
  override name = 'DeliveryError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * A file the run writes (the rejects file, the journal, --out) cannot be written: a full disk, say.
 * The run stops as for a fatal delivery error (exit 3; 2 when nothing was sent yet).
 */
export class OutputError extends Error {
  override name = 'OutputError';
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}
