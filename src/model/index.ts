// The shared request model: types, limits, identity rules and the validator.
export * from './types.js';
export * from './limits.js';
export * from './codes.js';
export * from './fields.js';
export * from './identity.js';
export * from './time.js';
export * from './validate.js';
export * from './plan.js';
export * from './shape.js';
export * from './places.js';
