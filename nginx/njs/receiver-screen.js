// secret-gate: guards the verifier from the junk a flood pushes at the revocation receivers
// (docs/revocation.md, "Junk and real logouts"). A body that cannot be a logout token or a SET is
// answered here, 400 with the verifier's own JSON, and never costs the verifier a request; any body
// that could be one goes on unchanged (snippets/revocation-receiver.conf). Never stricter than the
// verifier: each refusal below is one the verifier makes before it reads a key
// (verifier/src/revocation/receiver.ts and event-token.ts), so a push a sender could have signed
// always reaches it, and the issuer, `kid` and signature stay the verifier's to check.

/** The verifier's cap on an event token (MAX_EVENT_TOKEN_BYTES in event-token.ts). */
const MAX_TOKEN_BYTES = 8192;
/** The compact JWS serialisation, as the verifier's token-shape.ts reads it. */
const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const LOGOUT_FIELD = 'logout_token=';
/** Characters that make a form body one the verifier's form parser must decode. */
const FORM_ENCODED = /[&%+]/;

/**
 * The receivers by path: the media type each takes, how its token is read from the body, and the
 * verifier's answer to a request it refuses before any key (jsonRefusal in receiver.ts).
 */
const RECEIVERS = {
  '/backchannel-logout': {
    type: 'application/x-www-form-urlencoded',
    token: (/** @type {string} */ body) =>
      // The form an IdP sends; any other (encoded, several fields) is the verifier's to parse.
      body.startsWith(LOGOUT_FIELD) && !FORM_ENCODED.test(body)
        ? body.slice(LOGOUT_FIELD.length)
        : undefined,
    refusal: '{"error":"invalid_request"}',
  },
  '/ssf/events': {
    type: 'application/secevent+jwt',
    token: (/** @type {string} */ body) => body.trim(),
    refusal: '{"err":"invalid_request"}',
  },
};

/** @param {string | undefined} contentType @returns {string} its media type, lower case */
function mediaType(contentType) {
  var given = contentType || '';
  var end = given.indexOf(';');
  return (end === -1 ? given : given.slice(0, end)).trim().toLowerCase();
}

/**
 * Whether a base64url segment decodes to a JSON object, as the verifier decodes it: a leading byte
 * order mark dropped, then JSON.parse (njs and Node decode the base64url alphabet alike).
 * @param {string} segment
 */
function isJsonObject(segment) {
  var text = Buffer.from(segment, 'base64url').toString();
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  var json;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return false;
  }
  return json !== null && typeof json === 'object' && !Array.isArray(json);
}

/**
 * Why the verifier would refuse this push before reading any key (`request_invalid`: not the
 * receiver's media type; `token_malformed`: no JWT), or undefined when it must see it.
 * @param {string} path the receiver's path
 * @param {string | undefined} contentType
 * @param {string | undefined} body undefined when NGINX holds none in memory
 * @returns {'request_invalid' | 'token_malformed' | undefined}
 */
function refusalOf(path, contentType, body) {
  var receiver = RECEIVERS[/** @type {keyof typeof RECEIVERS} */ (path)];
  if (receiver === undefined || typeof body !== 'string') return undefined;
  if (mediaType(contentType) !== receiver.type) return 'request_invalid';
  var token = receiver.token(body);
  if (token === undefined) return undefined;
  if (token.length > MAX_TOKEN_BYTES || !JWS_COMPACT.test(token)) return 'token_malformed';
  var dot = token.indexOf('.');
  var header = token.slice(0, dot);
  // The verifier reads the header strictly: a length of 4n + 1 leaves a character over.
  if (header.length % 4 === 1 || !isJsonObject(header)) return 'token_malformed';
  var payload = token.slice(dot + 1, token.indexOf('.', dot + 1));
  // A payload of 4n + 1 is read leniently there (the character dropped): left to the verifier.
  if (payload.length % 4 !== 1 && !isJsonObject(payload)) return 'token_malformed';
  return undefined;
}

/**
 * js_content of a receiver: the push on to the verifier (`@sg_receiver`, the body already read), or
 * the verifier's 400 with the reason in the access log (`$sg_auth_reason`).
 * @param {NginxHTTPRequest} r
 */
function screen(r) {
  var body;
  try {
    body = r.requestText;
  } catch (e) {
    body = undefined;
  }
  var reason = refusalOf(r.uri, r.headersIn['Content-Type'], body);
  if (reason === undefined) {
    r.internalRedirect('@sg_receiver');
    return;
  }
  r.variables.sg_auth_reason = reason;
  r.headersOut['Content-Type'] = 'application/json';
  r.headersOut['Cache-Control'] = 'no-store';
  r.return(400, RECEIVERS[/** @type {keyof typeof RECEIVERS} */ (r.uri)].refusal);
}

export default { screen, refusalOf, MAX_TOKEN_BYTES };
