// Jazzer.js target: the pushed event tokens (revocation/event-token.ts: back-channel logout tokens and SSF SETs), under fuzz-target.ts's invariants.
import { createFuzzTarget } from './fuzz-target.js';

export const fuzz = createFuzzTarget('event');
