// The key binding of a DPoP-bound access token (RFC 9449 §6): `cnf.jkt`, read the same way from a
// JWT's claims (§6.1) and from an introspection answer (§6.2), so an opaque token bound to a key
// is held to its proofs exactly like a JWT.
import { VerifyError } from '../errors.js';

/**
 * `cnf.jkt`, undefined for an unbound token. A `cnf` this gate cannot honour (another confirmation
 * method, a malformed thumbprint) refuses the token: accepting it as a bearer token would drop the
 * binding its issuer asked for. `where` names the source in the message ("claim", "in the
 * introspection answer").
 */
export function readJkt(cnf: unknown, where = 'claim'): string | undefined {
  if (cnf === undefined) return undefined;
  if (cnf !== null && typeof cnf === 'object' && !Array.isArray(cnf)) {
    const { jkt } = cnf as Record<string, unknown>;
    if (typeof jkt === 'string' && /^[A-Za-z0-9_-]{43}$/.test(jkt)) return jkt;
  }
  throw new VerifyError(
    'claim_invalid',
    `"cnf" ${where} is not a DPoP key binding this gate understands`,
  );
}
