// Where the secret sets come from and which one a caller gets. Pure functions: the secret-set
// watcher (secret-sets.js) feeds them the secrets file and the SECRETS environment variable;
// selectSecretSet is the rule the published files and NGINX's try_files carry out together.
//
// Client ids are unique only within one issuer, so a set belongs to an (issuer, client id) pair:
// `issuers: { "<iss>": { "<client id>": {...} } }`. The flat `clients` map of one-issuer setups
// belongs to the one issuer named by SG_SECRETS_ISSUER (by default the SPA's SG_OIDC_ISSUER); a
// token of any other issuer never receives one of its sets.

/**
 * @typedef {{ [name: string]: unknown }} SecretSet
 * @typedef {{ [clientId: string]: SecretSet }} ClientSets
 * @typedef {{ default: SecretSet, issuers: { [iss: string]: ClientSets } }} SecretStore
 * @typedef {{ store: SecretStore } | { problem: string }} StoreResult
 */

/**
 * Own properties only, so a name such as `__proto__` never reaches an inherited object.
 * @param {object} object
 * @param {string} name
 */
function hasOwn(object, name) {
  return Object.prototype.hasOwnProperty.call(object, name);
}

/** @param {unknown} value @returns {value is { [key: string]: unknown }} */
function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * @param {unknown} sets
 * @param {string} where
 * @returns {string | undefined} the problem, if any
 */
function clientSetsProblem(sets, where) {
  if (!isPlainObject(sets)) return 'secrets file ' + where + ' must be a JSON object';
  var names = Object.keys(sets);
  for (var i = 0; i < names.length; i++) {
    if (!isPlainObject(sets[names[i]])) {
      return 'secrets file ' + where + ' entries must be JSON objects';
    }
  }
  return undefined;
}

/**
 * Normalises the secrets file: `default`, `issuers` (sets per issuer and client id) and the flat
 * `clients` map of the issuer `clientsIssuer`. A file with none of them is a configuration
 * mistake (most likely the study's flat format put in a file; docs/study.md). Ambiguous files
 * are refused: a flat `clients` map with no issuer to own it, or a client id listed both flat and
 * under its issuer.
 * @param {unknown} file
 * @param {string} [clientsIssuer] the issuer the flat `clients` map belongs to
 * @returns {StoreResult}
 */
function storeFromFile(file, clientsIssuer) {
  if (!isPlainObject(file)) {
    return { problem: 'secrets file must hold a JSON object' };
  }
  var hasDefault = hasOwn(file, 'default');
  var hasClients = hasOwn(file, 'clients');
  var hasIssuers = hasOwn(file, 'issuers');
  if (!hasDefault && !hasClients && !hasIssuers) {
    return {
      problem:
        'secrets file needs a "default" set, an "issuers" map, a "clients" map, or some of them',
    };
  }
  var defaults = hasDefault ? file['default'] : {};
  if (!isPlainObject(defaults)) {
    return { problem: 'secrets file "default" must be a JSON object' };
  }
  /** @type {{ [iss: string]: ClientSets }} */
  var issuers = {};
  if (hasIssuers) {
    var byIssuer = file['issuers'];
    if (!isPlainObject(byIssuer))
      return { problem: 'secrets file "issuers" must be a JSON object' };
    var names = Object.keys(byIssuer);
    for (var i = 0; i < names.length; i++) {
      var problem = clientSetsProblem(byIssuer[names[i]], '"issuers" values');
      if (problem) return { problem: problem };
      issuers[names[i]] = /** @type {ClientSets} */ (byIssuer[names[i]]);
    }
  }
  if (hasClients) {
    var flat = file['clients'];
    var flatProblem = clientSetsProblem(flat, '"clients"');
    if (flatProblem) return { problem: flatProblem };
    var flatNames = Object.keys(/** @type {object} */ (flat));
    if (flatNames.length > 0) {
      if (!clientsIssuer) {
        return {
          problem:
            'secrets file "clients" is ambiguous: client ids are unique only within one issuer; set SG_SECRETS_ISSUER or move them under "issuers"',
        };
      }
      var scoped = hasOwn(issuers, clientsIssuer) ? issuers[clientsIssuer] : {};
      /** @type {ClientSets} */
      var merged = {};
      var listed = Object.keys(/** @type {object} */ (scoped));
      for (var j = 0; j < listed.length; j++) merged[listed[j]] = scoped[listed[j]];
      for (var k = 0; k < flatNames.length; k++) {
        if (hasOwn(merged, flatNames[k])) {
          return {
            problem: 'secrets file lists a client id both in "clients" and under its issuer',
          };
        }
        merged[flatNames[k]] = /** @type {SecretSet} */ (
          /** @type {ClientSets} */ (flat)[flatNames[k]]
        );
      }
      issuers[clientsIssuer] = merged;
    }
  }
  return { store: { default: defaults, issuers: issuers } };
}

/**
 * Reads the original study's `SECRETS` variable: one flat JSON object that every signed-in caller
 * receives, whatever its issuer. The problem text never quotes the value, so a broken variable
 * cannot leak into a log.
 * @param {string} text
 * @returns {StoreResult}
 */
function storeFromEnv(text) {
  var parsed;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return { problem: 'SECRETS is not valid JSON' };
  }
  if (!isPlainObject(parsed)) {
    return { problem: 'SECRETS must be a flat JSON object' };
  }
  return { store: { default: parsed, issuers: {} } };
}

/**
 * The store in effect: `SECRETS` replaces the file when it is set and not empty.
 * @param {unknown} file the parsed secrets file
 * @param {string | undefined} envText the `SECRETS` environment variable
 * @param {string} [clientsIssuer] the issuer the flat `clients` map belongs to
 * @returns {StoreResult}
 */
function resolveStore(file, envText, clientsIssuer) {
  if (typeof envText === 'string' && envText.length > 0) {
    return storeFromEnv(envText);
  }
  return storeFromFile(file, clientsIssuer);
}

/**
 * The set of (`issuer`, `clientId`) when the store lists it, else the default set. Only own
 * properties count, so an id such as `__proto__` or `constructor` never reaches an inherited
 * object.
 * @param {SecretStore} store
 * @param {string | undefined} issuer the issuer that signed the token (NGINX never sees it: the
 *   verifier's `X-Auth-Set` is a digest of it and the client id, verifier/src/decision/secret-set.ts)
 * @param {string | undefined} clientId the client id the verifier read from the token
 * @returns {SecretSet}
 */
function selectSecretSet(store, issuer, clientId) {
  if (issuer && clientId && hasOwn(store.issuers, issuer)) {
    var sets = store.issuers[issuer];
    if (hasOwn(sets, clientId)) return /** @type {SecretSet} */ (sets[clientId]);
  }
  return store.default;
}

export default { storeFromFile, storeFromEnv, resolveStore, selectSecretSet };
