// Where the secret sets come from and which one a caller gets. Pure functions: the njs handler in
// secrets.js feeds them the preloaded file and the SECRETS environment variable.

/**
 * @typedef {{ [name: string]: unknown }} SecretSet
 * @typedef {{ default: SecretSet, clients: { [clientId: string]: SecretSet } }} SecretStore
 * @typedef {{ store: SecretStore } | { problem: string }} StoreResult
 */

/** @param {unknown} value @returns {value is { [key: string]: unknown }} */
function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Normalises the secrets file (`{ "default": {...}, "clients": { "<client id>": {...} } }`).
 * A file with neither key is a configuration mistake (most likely the study's flat format put in
 * a file; docs/study.md): reported as a problem instead of silently handing out an empty set.
 * @param {unknown} file
 * @returns {StoreResult}
 */
function storeFromFile(file) {
  if (!isPlainObject(file)) {
    return { problem: 'secrets file must hold a JSON object' };
  }
  var hasDefault = Object.prototype.hasOwnProperty.call(file, 'default');
  var hasClients = Object.prototype.hasOwnProperty.call(file, 'clients');
  if (!hasDefault && !hasClients) {
    return { problem: 'secrets file needs a "default" set, a "clients" map, or both' };
  }
  var defaults = hasDefault ? file['default'] : {};
  var clients = hasClients ? file['clients'] : {};
  if (!isPlainObject(defaults)) {
    return { problem: 'secrets file "default" must be a JSON object' };
  }
  if (!isPlainObject(clients)) {
    return { problem: 'secrets file "clients" must be a JSON object' };
  }
  var names = Object.keys(clients);
  for (var i = 0; i < names.length; i++) {
    if (!isPlainObject(clients[names[i]])) {
      return { problem: 'secrets file "clients" entries must be JSON objects' };
    }
  }
  return { store: { default: defaults, clients: /** @type {SecretStore['clients']} */ (clients) } };
}

/**
 * Reads the original study's `SECRETS` variable: one flat JSON object that every signed-in caller
 * receives. The problem text never quotes the value, so a broken variable cannot leak into a log.
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
  return { store: { default: parsed, clients: {} } };
}

/**
 * The store in effect: `SECRETS` replaces the file when it is set and not empty.
 * @param {unknown} file the object NGINX preloaded with `js_preload_object`
 * @param {string | undefined} envText the `SECRETS` environment variable
 * @returns {StoreResult}
 */
function resolveStore(file, envText) {
  if (typeof envText === 'string' && envText.length > 0) {
    return storeFromEnv(envText);
  }
  return storeFromFile(file);
}

/**
 * The set for `clientId` when the store lists it, else the default set. Only own properties
 * count, so a client id such as `__proto__` or `constructor` can never reach an inherited object.
 * @param {SecretStore} store
 * @param {string | undefined} clientId the verifier's `X-Auth-Client`
 * @returns {SecretSet}
 */
function selectSecretSet(store, clientId) {
  if (clientId && Object.prototype.hasOwnProperty.call(store.clients, clientId)) {
    return /** @type {SecretSet} */ (store.clients[clientId]);
  }
  return store.default;
}

export default { storeFromFile, storeFromEnv, resolveStore, selectSecretSet };
