// Jazzer.js target: the DPoP proof check (dpop/proof.ts), under fuzz-target.ts's invariants.
import { createFuzzTarget } from './fuzz-target.js';

export const fuzz = createFuzzTarget('dpop');
