// Ctrl-C and SIGTERM while a run goes: the first asks the run to stop as it can, the second ends it.
import { EXIT } from './run.js';

/**
 * Calls `first` on the first SIGINT or SIGTERM and `second` on the next one (default: exit 130 at
 * once). Returns the function that removes the handlers.
 */
export function onStopSignals(first: () => void, second: () => void = () => process.exit(EXIT.interrupted)): () => void {
  let signals = 0;
  const onSignal = (): void => {
    signals += 1;
    if (signals === 1) first();
    else second();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
