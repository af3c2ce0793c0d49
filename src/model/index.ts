// The shared request model: types, limits, identity rules and the validator.
export * from './types.js';
export * from './limits.js';
export * from './codes.js';
export * from './fields.js';
export * from './identity.js';
// reading times only: the text of stored times is the emulator's, not part of the library API
export { isCalendarDate, isIsoTime, isTimeValue, parseIsoTime, parseTimeValue } from './time.js';
export * from './validate.js';
export * from './request.js';
export * from './csv-reasons.js';
export * from './shape.js';
export * from './places.js';
