// Jazzer.js target: the access-token JWS path (an Authorization header's token through token-verifier.ts's route to jwt-verifier.ts), under fuzz-target.ts's invariants.
import { createFuzzTarget } from './fuzz-target.js';

export const fuzz = createFuzzTarget('jws');
