// The progress events' documented schema (docs/progress-events.schema.json), compiled once with ajv:
// every event a test sees is checked against it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';
import { ROOT } from './cli.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const schema = JSON.parse(readFileSync(join(ROOT, 'docs', 'progress-events.schema.json'), 'utf8'));
const ajv = addFormats(new Ajv({ allErrors: true, strict: true }));
const validate = ajv.compile(schema);

export interface Event {
  type: string;
  time: string;
  [key: string]: any;
}

/** The event, once the schema holds it valid (the test fails naming what is wrong otherwise). */
export function checkedEvent(event: unknown): Event {
  const ok = validate(event);
  expect(ok, `${JSON.stringify(event).slice(0, 300)}: ${ajv.errorsText(validate.errors)}`).toBe(true);
  return event as Event;
}

/** Every line of NDJSON text parsed and checked against the schema. */
export function checkedLines(text: string): Event[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => checkedEvent(JSON.parse(line)));
}
