// Jazzer.js target: the pushed event tokens on inputs signed again by a trusted key (sign-again.ts), so mutated claims and events reach the event checks, under fuzz-target.ts's invariants.
import { createFuzzTarget } from './fuzz-target.js';

export const fuzz = createFuzzTarget('event-signed');
