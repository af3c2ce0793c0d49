#!/usr/bin/env node
// a stop signal is held from the first moment, while the CLI's modules load (src/cli/held-signals.ts)
import { holdStopSignals } from '../dist/cli/held-signals.js';
holdStopSignals();
await import('../dist/cli/main.js');
