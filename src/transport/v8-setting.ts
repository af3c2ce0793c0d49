// A setting of V8's (process-wide) held while any of its holders is open: the first to come sets
// it, the last to go sets it back; a process started with flags of its own for it is left as it is.

/** The process was started with a V8 flag matching `pattern`, on its command line or in NODE_OPTIONS. */
export function startedWithV8Flag(pattern: RegExp): boolean {
  // V8 reads `_` in a flag's name as `-` (--no_liftoff)
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((flag) => pattern.test(flag.replaceAll('_', '-')));
}

/** Returns hold(): each call holds the setting until the release it returns is called (once is enough). */
export function heldSetting(setting: { set(): void; unset(): void; leftAlone: boolean }): () => () => void {
  let holders = 0;
  return () => {
    if (setting.leftAlone) return () => {};
    if (holders === 0) setting.set();
    holders += 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      holders -= 1;
      if (holders === 0) setting.unset();
    };
  };
}
