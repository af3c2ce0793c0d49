// The library API of track.
export { startEmulator, withEmulator, execWithEmulator } from './library/public.js';
export type { FixtureOptions } from './library/fixture.js';
export type { ExecOptions, ExecResult } from './library/exec.js';
export { upload, type Rows, type UploadCallOptions } from './library/upload.js';
export type { UploadSummary, ReadProgress } from './upload/upload.js';
export type { Emulator } from './emulator/server.js';
export type { LoggedRequest, RequestLogQuery } from './emulator/request-log.js';
export type { RequestsQuery } from './emulator/request-log-query.js';
export { DatabaseInUseError } from './emulator/db-lock.js';
export type { EmulatorOptions } from './emulator/options.js';
export { FAULT_HEADER } from './emulator/faults.js';
export { reportDeviceLanguage } from './emulator/apply.js';
export * from './model/index.js';
export { UsageError, InputError, DeliveryError, OutputError, SourceError, StoppedError } from './errors.js';
