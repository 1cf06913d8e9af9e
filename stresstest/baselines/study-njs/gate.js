// For comparison only: the study's njs gate, with its cost per request (decode the JWT payload,
// one ngx.fetch to the user-info endpoint) but not its bug: the secrets go out only on a 200.
// The study: docs/study.md.

const BEARER = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]*)$/;

function deny(r) {
  r.headersOut['WWW-Authenticate'] = 'Bearer realm="study-njs"';
  r.return(401, '{"error":"unauthorized"}');
}

function decodePayload(segment) {
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString());
  } catch (e) {
    return null;
  }
}

async function secret(r) {
  const match = BEARER.exec(r.headersIn.Authorization || '');
  const claims = match && decodePayload(match[2]);
  if (!claims || typeof claims !== 'object') {
    return deny(r);
  }
  try {
    const reply = await ngx.fetch(process.env.USERINFO_URL, {
      headers: { Authorization: r.headersIn.Authorization },
    });
    if (reply.status !== 200) {
      return deny(r);
    }
  } catch (e) {
    return deny(r);
  }
  r.headersOut['Cache-Control'] = 'no-store';
  r.return(200, process.env.SECRETS || '{}');
}

export default { secret };
