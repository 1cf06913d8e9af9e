// Jazzer.js target: the access-token JWS path on inputs signed again by a trusted key (sign-again.ts), so mutated headers and claims reach the claim checks, under fuzz-target.ts's invariants.
import { createFuzzTarget } from './fuzz-target.js';

export const fuzz = createFuzzTarget('jws-signed');
