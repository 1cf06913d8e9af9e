// For comparison only: RS256 verification inside njs 0.7.9. The VM is fresh for every request and
// there is no JWK import, so the SPKI key is imported again each time — that cost is the point.

const BEARER = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/;
const ALGORITHM = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
const REQUIRED_SCOPE = 'secrets:read';
const CLOCK_TOLERANCE_S = 30;

function deny(r) {
  r.headersOut['WWW-Authenticate'] = 'Bearer realm="njs-verify", error="invalid_token"';
  r.return(401, '{"error":"unauthorized"}');
}

function decodeJson(segment) {
  return JSON.parse(Buffer.from(segment, 'base64url').toString());
}

function hasAudience(aud, expected) {
  return Array.isArray(aud) ? aud.indexOf(expected) !== -1 : aud === expected;
}

function hasScope(claims) {
  const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : claims.scp;
  return Array.isArray(scopes) && scopes.indexOf(REQUIRED_SCOPE) !== -1;
}

function claimsAcceptable(claims) {
  const now = Math.floor(Date.now() / 1000);
  return (
    claims.iss === process.env.NJS_VERIFY_ISSUER &&
    hasAudience(claims.aud, process.env.NJS_VERIFY_AUDIENCE) &&
    typeof claims.exp === 'number' &&
    claims.exp + CLOCK_TOLERANCE_S > now &&
    (claims.nbf === undefined || claims.nbf - CLOCK_TOLERANCE_S <= now) &&
    hasScope(claims)
  );
}

async function secret(r) {
  const match = BEARER.exec(r.headersIn.Authorization || '');
  if (!match) {
    return deny(r);
  }
  try {
    if (decodeJson(match[1]).alg !== 'RS256') {
      return deny(r);
    }
    const key = await crypto.subtle.importKey(
      'spki',
      Buffer.from(process.env.NJS_VERIFY_SPKI, 'base64'),
      ALGORITHM,
      false,
      ['verify'],
    );
    const valid = await crypto.subtle.verify(
      ALGORITHM,
      key,
      Buffer.from(match[3], 'base64url'),
      Buffer.from(match[1] + '.' + match[2]),
    );
    if (!valid || !claimsAcceptable(decodeJson(match[2]))) {
      return deny(r);
    }
  } catch (e) {
    return deny(r);
  }
  r.headersOut['Cache-Control'] = 'no-store';
  r.return(200, process.env.SECRETS || '{}');
}

export default { secret };
