// secret-gate: guards which names /secret/<name> serves where NGINX reads the verifier's own policy
// file (SG_POLICY_FILE: docker compose, Kubernetes): the named sets are that file's policies other
// than `secret` (and `default`), so there is no second list to keep in step. Run by bin/sg-render
// (policy-names-cli.js) at start and whenever the secret-set watcher sees the file change, in the
// njs CLI or in Node, so only what both share is used. Only the names are read: whether the rest
// of the document is a configuration the verifier takes is the verifier's own check.
import store from './secret-store.js';

/**
 * @typedef {{ names: string[] } | { problem: string }} NamesResult
 */

// The shape NGINX's secret location captures (`/secret/<name>`) and the secret-set tree uses.
var SET_NAME = /^[a-z][a-z0-9-]{0,31}$/;
// The policies NGINX asks for without a name: `/secret`, and a /verify without X-SG-Policy.
var UNNAMED = ['secret', 'default'];

/** @param {unknown} value @returns {value is { [key: string]: unknown }} */
function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The named sets of a verifier configuration document, in the file's order, or why NGINX cannot
 * serve them: not JSON, no `policies` object, a name the secret location cannot route.
 * @param {string} text the policy file's content
 * @param {string} where how problems name the file
 * @returns {NamesResult}
 */
function namesOf(text, where) {
  var document;
  try {
    document = JSON.parse(text);
  } catch (e) {
    return { problem: 'policy file ' + where + ' is not JSON' };
  }
  if (!isObject(document) || !isObject(document['policies'])) {
    return { problem: 'policy file ' + where + ' has no "policies" object' };
  }
  var names = Object.keys(document['policies']).filter((name) => UNNAMED.indexOf(name) < 0);
  for (var i = 0; i < names.length; i++) {
    if (!SET_NAME.test(names[i])) {
      return {
        problem:
          'policy "' +
          names[i] +
          '" in ' +
          where +
          ' is not a name /secret/<name> can serve (a-z, then a-z 0-9 -, at most 32)',
      };
    }
  }
  return { names: names };
}

/**
 * The policy names against the secrets source's sets (`policies` of the secrets file): a policy
 * without a set answers 503 to every caller it allows, a set without a policy is never served.
 * One problem naming both files, or none. The study's flat `SECRETS` holds no named sets and a
 * secrets file that cannot be served says so through the watcher: neither is compared here.
 * @param {string[]} names
 * @param {unknown} secrets the parsed secrets file
 * @param {string | undefined} envText `SECRETS`
 * @param {string} clientsIssuer
 * @param {{ policyFile: string, secretsFile: string }} files
 * @returns {string | undefined}
 */
function mismatch(names, secrets, envText, clientsIssuer, files) {
  if (typeof envText === 'string' && envText.length > 0) return undefined;
  var resolved = store.resolveStore(secrets, undefined, clientsIssuer);
  if ('problem' in resolved) return undefined;
  var sets = (resolved.store.policies || []).map((p) => p.name);
  var problems = names
    .filter((name) => sets.indexOf(name) < 0)
    .map((name) => 'policy "' + name + '" has no set in the secrets file ' + files.secretsFile)
    .concat(
      sets
        .filter((name) => names.indexOf(name) < 0)
        .map(
          (name) => 'set "' + name + '" in the secrets file has no policy in ' + files.policyFile,
        ),
    );
  if (problems.length === 0) return undefined;
  return (
    problems.join(', ') +
    ' (the policy file ' +
    files.policyFile +
    ' and the secrets file ' +
    files.secretsFile +
    ' must name the same sets)'
  );
}

export default { namesOf, mismatch };
