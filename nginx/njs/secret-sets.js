// secret-gate: guards which secret set a caller can ever receive. It turns the secrets file into
// the files NGINX serves for /secret: one small JSON file per set, `<set name>/secret`, in a
// generation directory named by the content it came from, and a `current` symlink swapped in one
// rename. NGINX serves `current/<set name>/secret` with its static handler (the set name, the
// verifier's opaque X-Auth-Set, is in `root`): an allowed /secret runs no njs.
// Run by the secret-set watcher (bin/sg-secret-sets, via secret-sets-cli.js) in the njs CLI or in
// Node, so only what both share is used; stack/nginx/secrets-check.ts applies it at a local start.
//
// Client ids are unique only within one issuer, so a set belongs to an (issuer, client id) pair:
// `issuers: { "<iss>": { "<client id>": {...} } }`. The flat `clients` map belongs to the one
// issuer SG_SECRETS_ISSUER names; a token of any other issuer never receives one of its sets.
// The format is documented from stack/nginx/reference.ts.
import fs from 'fs';
import crypto from 'crypto';

/**
 * @typedef {{ [name: string]: unknown }} SecretSet
 * @typedef {{ name: string, set: SecretSet }} NamedSet
 * @typedef {{ default: SecretSet, sets: NamedSet[] }} SecretStore
 * @typedef {{ store: SecretStore } | { problem: string }} StoreResult
 * @typedef {{ generation: string } | { problem: string } | { failed: string }} PublishResult
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
 * The store of a parsed secrets file, or why it cannot be served: not an object; none of
 * `default`, `issuers`, `clients` (most likely the study's flat format put in a file,
 * docs/study.md); a part of the wrong shape; a flat `clients` map with no issuer to own it; a
 * client id listed both flat and under its issuer.
 * @param {unknown} file
 * @param {string} [clientsIssuer] the issuer the flat `clients` map belongs to
 * @returns {StoreResult}
 */
function storeFromFile(file, clientsIssuer) {
  if (!isObject(file)) return { problem: 'secrets file must hold a JSON object' };
  if (!has(file, 'default') && !has(file, 'issuers') && !has(file, 'clients')) {
    return {
      problem:
        'secrets file needs a "default" set, an "issuers" map, a "clients" map, or some of them',
    };
  }
  var defaults = has(file, 'default') ? file['default'] : {};
  if (!isObject(defaults)) return { problem: 'secrets file "default" must be a JSON object' };
  var issuers = has(file, 'issuers') ? file['issuers'] : {};
  if (!isObject(issuers)) return { problem: 'secrets file "issuers" must be a JSON object' };
  /** @type {NamedSet[]} */
  var sets = [];
  var names = Object.keys(issuers);
  for (var i = 0; i < names.length; i++) {
    var problem = addSets(sets, names[i], issuers[names[i]], '"issuers" values');
    if (problem) return { problem: problem };
  }
  var flat = has(file, 'clients') ? file['clients'] : {};
  if (isObject(flat) && Object.keys(flat).length > 0 && !clientsIssuer) {
    return {
      problem:
        'secrets file "clients" is ambiguous: client ids are unique only within one issuer; set SG_SECRETS_ISSUER or move them under "issuers"',
    };
  }
  var flatProblem = addSets(sets, clientsIssuer || '', flat, '"clients"');
  if (flatProblem) return { problem: flatProblem };
  return { store: { default: defaults, sets: sets } };
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

/** A directory and everything below it: Node's rmSync, or njs 0.7.9's recursive rmdirSync. */
function removeTree(/** @type {string} */ dir) {
  var rm = /** @type {'rmdirSync'} */ ('rmSync' in fs ? 'rmSync' : 'rmdirSync');
  try {
    fs[rm](dir, { recursive: true });
  } catch (e) {
    // already gone
  }
}

/** @param {string} path */
function exists(path) {
  try {
    fs.accessSync(path);
    return true;
  } catch (e) {
    return false;
  }
}

/**
 * Removes every generation but `keep` and what an interrupted switch left (a file NGINX still has
 * open stays readable until it is closed); the watcher's own files (`.version`) stay.
 * @param {string} setsDir
 * @param {string} keep
 */
function removeOthers(setsDir, keep) {
  var names = exists(setsDir) ? fs.readdirSync(setsDir) : [];
  for (var i = 0; i < names.length; i++) {
    var path = setsDir + '/' + names[i];
    if (names[i] === keep || (keep && names[i] === 'current')) continue;
    try {
      var st = fs.lstatSync(path);
      if (st.isSymbolicLink()) fs.unlinkSync(path);
      else if (st.isDirectory()) removeTree(path);
    } catch (e) {
      // already gone
    }
  }
}

/**
 * Removes the `current` link, so every /secret answers 503 instead of a set that no longer
 * holds, and every generation with it.
 * @param {string} setsDir
 */
function withdraw(setsDir) {
  removeOthers(setsDir, '');
}

/**
 * Publishes the sets of the secrets source (`SECRETS` when set and not empty, else the file) and
 * points `current` at them in one rename. `problem`: the source is broken or ambiguous (the
 * caller decides when to withdraw); `failed`: it is fine but could not be written (e.g. ENOSPC),
 * nothing partial is left behind.
 * @param {{ setsDir: string, secretsFile: string, clientsIssuer: string, envText?: string, shared?: boolean }} options
 * @returns {PublishResult}
 */
function publish(options) {
  var envText = options.envText;
  var fromEnv = typeof envText === 'string' && envText.length > 0;
  var text = '';
  var file;
  if (!fromEnv) {
    try {
      text = fs.readFileSync(options.secretsFile, 'utf8');
      file = JSON.parse(text);
    } catch (e) {
      return { problem: 'secrets file cannot be read as JSON' };
    }
  }
  var result = resolveStore(file, envText, options.clientsIssuer);
  if ('problem' in result) return { problem: result.problem };
  var generation =
    'g' + digest((fromEnv ? 'env\n' + envText : 'file\n' + text) + '\n' + options.clientsIssuer);
  var dir = options.setsDir;
  // Modes: the watcher's alone when it runs as NGINX's workers do (the image, an unprivileged
  // local run); readable by them when it runs as root and they as `nobody`, inside a memory
  // directory only they can enter.
  var dirMode = options.shared ? 0o755 : 0o700;
  // `default`: the set of every client without one of its own.
  var sets = result.store.sets.concat([{ name: 'default', set: result.store.default }]);
  // Written into a private temporary directory renamed into place, so a request never sees half
  // a generation; on any failure (a full memory directory) the partial copy is removed.
  var tmp = dir + '/.tmp-' + Math.random().toString(36).slice(2);
  try {
    if (!exists(dir)) fs.mkdirSync(dir, dirMode);
    if (!exists(dir + '/' + generation)) {
      fs.mkdirSync(tmp, dirMode);
      for (var i = 0; i < sets.length; i++) {
        var path = tmp + '/' + sets[i].name;
        fs.mkdirSync(path, dirMode);
        var mode = options.shared ? 0o644 : 0o600;
        fs.writeFileSync(path + '/secret', JSON.stringify(sets[i].set) + '\n', { mode: mode });
      }
      fs.renameSync(tmp, dir + '/' + generation);
    }
    // A link left by a failed swap is a stray one removeOthers takes away next time.
    fs.symlinkSync(generation, tmp + '-current');
    fs.renameSync(tmp + '-current', dir + '/current');
    removeOthers(dir, generation);
  } catch (e) {
    removeTree(tmp);
    return { failed: /** @type {{ code?: string }} */ (e).code || 'write error' };
  }
  return { generation: generation };
}

export default { publish, withdraw, setName, resolveStore };
