// The library API of track.
export { startEmulator, type Emulator } from './emulator/server.js';
export { DatabaseInUseError } from './emulator/db-lock.js';
export type { EmulatorOptions } from './emulator/options.js';
export { FAULT_HEADER } from './emulator/faults.js';
export * from './model/index.js';
export { UsageError, InputError, DeliveryError } from './errors.js';
