// secret-gate: guards which secret set a caller can ever receive: the secrets file's rules. A set
// belongs to a policy (the top level to `secret`, `policies.<name>` to <name>) and to an
// (issuer, client id) pair: client ids are unique only within one issuer, so
// `issuers: { "<iss>": { "<client id>": {...} } }`, and the flat `clients` map belongs to the one
// issuer SG_SECRETS_ISSUER names; a token of any other issuer never receives one of its sets.
// Used by the watcher's step (secret-sets.js) in the njs CLI or Node, so only what both share is
// used; stack/nginx/secrets-check.ts applies it at a local start. The format is documented from
// stack/nginx/reference.ts.
import crypto from 'crypto';

/**
 * @typedef {{ [name: string]: unknown }} SecretSet
 * @typedef {{ name: string, set: SecretSet }} NamedSet
 * @typedef {{ default: SecretSet, sets: NamedSet[] }} PolicySets
 * @typedef {{ default: SecretSet, sets: NamedSet[], policies?: ({ name: string } & PolicySets)[] }} SecretStore
 * @typedef {{ store: SecretStore } | { problem: string }} StoreResult
 */

/** @param {string} text */
function digest(text) {
  return crypto.createHash('sha256').update(text).digest('hex').slice(0, 32);
}

/**
 * The directory name of the set of (`issuer`, `clientId`): the verifier answers the same name as
 * `X-Auth-Set` (verifier/src/http/verify-answer.ts). A digest, so no client id can name a path, and the
 * issuer is part of it, so equal client ids of two issuers never share a file.
 * @param {string} issuer
 * @param {string} clientId
 */
function setName(issuer, clientId) {
  return 'c' + digest(issuer + '\n' + clientId);
}

/** @param {unknown} value @returns {value is { [key: string]: unknown }} */
function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Own properties only, so `__proto__` never reaches an inherited object. @param {object} o @param {string} key */
function has(o, key) {
  return Object.prototype.hasOwnProperty.call(o, key);
}

/**
 * Adds the sets of one issuer's client map to `sets`. Returns the problem, if any; it never
 * quotes a value, so a broken file cannot leak into a log.
 * @param {NamedSet[]} sets @param {string} issuer @param {unknown} clients @param {string} where
 */
function addSets(sets, issuer, clients, where) {
  if (!isObject(clients)) return 'secrets file ' + where + ' must be a JSON object';
  var ids = Object.keys(clients);
  for (var i = 0; i < ids.length; i++) {
    var set = clients[ids[i]];
    if (!isObject(set)) return 'secrets file ' + where + ' entries must be JSON objects';
    var name = setName(issuer, ids[i]);
    // Only a flat client listed under its issuer too can name a set twice.
    if (sets.some((entry) => entry.name === name)) {
      return 'secrets file lists a client id both in "clients" and under its issuer';
    }
    sets.push({ name: name, set: set });
  }
  return undefined;
}

/**
 * The sets of one policy's part of the file (the top level, or a `policies` entry), or why it
 * cannot be served: none of `default`, `issuers`, `clients` (most likely the study's flat format
 * put in a file, docs/study.md); a part of the wrong shape; a flat `clients` map with no issuer to
 * own it; a client id listed both flat and under its issuer.
 * @param {{ [key: string]: unknown }} part @param {string} clientsIssuer @param {string} where
 * @returns {PolicySets | { problem: string }}
 */
function policySets(part, clientsIssuer, where) {
  if (!has(part, 'default') && !has(part, 'issuers') && !has(part, 'clients')) {
    return {
      problem:
        'secrets file ' +
        where +
        'needs a "default" set, an "issuers" map, a "clients" map, or some of them',
    };
  }
  var defaults = has(part, 'default') ? part['default'] : {};
  if (!isObject(defaults))
    return { problem: 'secrets file ' + where + '"default" must be a JSON object' };
  var issuers = has(part, 'issuers') ? part['issuers'] : {};
  if (!isObject(issuers))
    return { problem: 'secrets file ' + where + '"issuers" must be a JSON object' };
  /** @type {NamedSet[]} */
  var sets = [];
  var names = Object.keys(issuers);
  for (var i = 0; i < names.length; i++) {
    var problem = addSets(sets, names[i], issuers[names[i]], where + '"issuers" values');
    if (problem) return { problem: problem };
  }
  var flat = has(part, 'clients') ? part['clients'] : {};
  if (isObject(flat) && Object.keys(flat).length > 0 && !clientsIssuer) {
    return {
      problem:
        'secrets file ' +
        where +
        '"clients" is ambiguous: client ids are unique only within one issuer; set SG_SECRETS_ISSUER or move them under "issuers"',
    };
  }
  var flatProblem = addSets(sets, clientsIssuer || '', flat, where + '"clients"');
  if (flatProblem) return { problem: flatProblem };
  return { default: defaults, sets: sets };
}

// A policy's name is a directory name under current/policies and the capture of NGINX's secret
// location (`/secret/<name>`): the same shape in both. `secret` is the top level's own.
var POLICY_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/**
 * The store of a parsed secrets file: the top level's sets (policy `secret`) and those of each
 * `policies` entry, which has the top level's shape; or the first reason it cannot be served.
 * Problems never quote a value or a name of the file, so a broken file cannot leak into a log.
 * @param {unknown} file
 * @param {string} [clientsIssuer] the issuer the flat `clients` maps belong to
 * @returns {StoreResult}
 */
function storeFromFile(file, clientsIssuer) {
  if (!isObject(file)) return { problem: 'secrets file must hold a JSON object' };
  var top = policySets(file, clientsIssuer || '', '');
  if ('problem' in top) return top;
  var policies = has(file, 'policies') ? file['policies'] : {};
  if (!isObject(policies)) return { problem: 'secrets file "policies" must be a JSON object' };
  /** @type {({ name: string } & PolicySets)[]} */
  var named = [];
  var names = Object.keys(policies);
  for (var i = 0; i < names.length; i++) {
    if (!POLICY_NAME.test(names[i]) || names[i] === 'secret') {
      return {
        problem:
          'secrets file "policies" names must match [a-z][a-z0-9-]{0,31} and not be "secret" (the top level)',
      };
    }
    var part = policies[names[i]];
    if (!isObject(part) || has(part, 'policies')) {
      return { problem: 'secrets file "policies" values must be JSON objects without "policies"' };
    }
    var sets = policySets(part, clientsIssuer || '', '"policies" entry ');
    if ('problem' in sets) return sets;
    named.push({ name: names[i], default: sets.default, sets: sets.sets });
  }
  /** @type {SecretStore} */
  var store = { default: top.default, sets: top.sets };
  if (named.length > 0) store.policies = named;
  return { store: store };
}

/**
 * The store in effect: the original study's `SECRETS` (one flat JSON object every signed-in
 * caller receives, whatever its issuer) replaces the file when it is set and not empty.
 * @param {unknown} file the parsed secrets file
 * @param {string | undefined} envText the `SECRETS` environment variable
 * @param {string} [clientsIssuer] the issuer the flat `clients` map belongs to
 * @returns {StoreResult}
 */
function resolveStore(file, envText, clientsIssuer) {
  if (typeof envText !== 'string' || envText.length === 0) {
    return storeFromFile(file, clientsIssuer);
  }
  var parsed;
  try {
    parsed = JSON.parse(envText);
  } catch (e) {
    return { problem: 'SECRETS is not valid JSON' };
  }
  if (!isObject(parsed)) return { problem: 'SECRETS must be a flat JSON object' };
  return { store: { default: parsed, sets: [] } };
}

export default { setName, resolveStore, digest };
