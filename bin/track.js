#!/usr/bin/env node
// Heap settings depend on the command and must come before the rest is loaded (see src/cli/heap.ts).
import { tuneHeapsFor } from '../dist/cli/heap.js';

tuneHeapsFor(process.argv.slice(2));
await import('../dist/cli/main.js');
