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
