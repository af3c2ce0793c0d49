// The shared request model: types, limits, identity rules and the validator.
export * from './types.js';
export * from './limits.js';
export * from './codes.js';
export * from './fields.js';
export * from './identity.js';
export * from './time.js';
export * from './validate.js';
export * from './request.js';
export * from './csv-reasons.js';
export * from './shape.js';
export * from './places.js';
