// secret-gate: guards the merge of a set with minted values: the body of /secret for such a set.
// The static set's file (written by the secret-set watcher) and the verifier's minted values
// (X-Auth-Set: the set's name, a space, one JSON object with its `expires_at`) as one JSON object.
// Reached only from the secret location after the verifier allowed the call with minted values; a
// set without them never runs this (its file is sent as it is).
import fs from 'fs';

var SET_NAME = /^(?:c[0-9a-f]{32}|default)$/;

/**
 * The static set's file: the caller's own set, else the policy's default set.
 * @param {string} root
 * @param {string} name
 * @returns {string | undefined}
 */
function staticSet(root, name) {
  var paths = [root + '/' + name + '/secret', root + '/default/secret'];
  for (var i = 0; i < paths.length; i++) {
    try {
      return fs.readFileSync(paths[i], 'utf8');
    } catch (e) {
      // The next candidate, as try_files would.
    }
  }
  return undefined;
}

/**
 * Both objects in one; a static value that has the name of a minted one (or `expires_at`) is a
 * configuration mistake, answered like a missing set rather than with either value silently.
 */
/**
 * @param {string} staticBody
 * @param {string} mintedBody
 * @returns {string | undefined}
 */
function merge(staticBody, mintedBody) {
  /** @type {Record<string, unknown>} */
  var values = JSON.parse(staticBody);
  /** @type {Record<string, unknown>} */
  var minted = JSON.parse(mintedBody);
  var names = Object.keys(minted);
  for (var i = 0; i < names.length; i++) {
    if (Object.prototype.hasOwnProperty.call(values, names[i])) return undefined;
    values[names[i]] = minted[names[i]];
  }
  return JSON.stringify(values);
}

/** @param {NginxHTTPRequest} r */
function deliver(r) {
  var body;
  var answer = r.variables.sg_auth_set || '';
  var space = answer.indexOf(' ');
  var name = answer.slice(0, space);
  // The name's shape is the one NGINX's map accepted; nothing else names a directory here.
  var text = SET_NAME.test(name) ? staticSet(r.variables.sg_minted_root || '', name) : undefined;
  try {
    body = text === undefined ? undefined : merge(text, answer.slice(space + 1));
  } catch (e) {
    body = undefined;
  }
  if (body === undefined) {
    r.error('minted set: no static set to merge into, or a static value named like a minted one');
    r.headersOut['Retry-After'] = '30';
    return r.return(503, '{"error":"secrets_unavailable"}\n');
  }
  r.return(200, body + '\n');
}

export default { deliver, merge };
