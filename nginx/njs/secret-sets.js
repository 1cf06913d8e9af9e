// The secret sets as NGINX serves them: one small JSON file per set, `<set name>/secret`, in a
// generation directory named by the content it came from, and a `current` symlink swapped in one
// step. NGINX serves `current/<set name>/secret` for the URI /secret with its static handler (the
// set name is in `root`, so no try_files lookup either): an allowed /secret runs no njs.
// Written by the secret-set watcher (nginx/bin/sg-secret-sets) outside NGINX, with the njs CLI in
// the image or Node locally: this module uses only what both runtimes share.
import fs from 'fs';
import crypto from 'crypto';
import secretStore from './secret-store.js';

/** The set of every client without one of its own. */
var DEFAULT_SET = 'default';

/** @param {string} text */
function digest(text) {
  return crypto.createHash('sha256').update(text).digest('hex').slice(0, 32);
}

/**
 * The directory name of the set of (`issuer`, `clientId`): the verifier answers the
 * same name as `X-Auth-Set` (verifier/src/decision/secret-set.ts). A digest, so no client id can name a
 * path, and the issuer is part of it, so equal client ids of two issuers never share a file.
 * @param {string} issuer
 * @param {string} clientId
 */
function setName(issuer, clientId) {
  return 'c' + digest(issuer + '\n' + clientId);
}

/** A directory and everything below it (generations are two levels deep). @param {string} dir */
function removeTree(dir) {
  var names;
  try {
    names = fs.readdirSync(dir);
  } catch (e) {
    return;
  }
  for (var i = 0; i < names.length; i++) {
    var path = dir + '/' + names[i];
    try {
      if (fs.lstatSync(path).isDirectory()) removeTree(path);
      else fs.unlinkSync(path);
    } catch (e) {
      // already gone
    }
  }
  try {
    fs.rmdirSync(dir);
  } catch (e) {
    // already gone
  }
}

/** @param {string} path */
function exists(path) {
  try {
    fs.lstatSync(path);
    return true;
  } catch (e) {
    return false;
  }
}

/**
 * Modes of what is written: the watcher's alone (0700 / 0600) when it runs as NGINX's workers do
 * (the image, an unprivileged local run); readable by them (0755 / 0644) when it runs as root and
 * they as `nobody`, inside a memory directory only they can enter (0700, theirs).
 * @param {boolean} shared
 */
function modesFor(shared) {
  return shared ? { dir: 0o755, file: 0o644 } : { dir: 0o700, file: 0o600 };
}

/**
 * @param {string} setsDir
 * @param {number} mode
 */
function ensureDir(setsDir, mode) {
  try {
    fs.mkdirSync(setsDir, mode);
  } catch (e) {
    if (!exists(setsDir)) throw e;
  }
}

/**
 * Writes every set of `store` into a private temporary directory and renames it to `target`, so
 * a request never sees half a generation. On any failure (a full memory directory) the partial
 * copy is removed before the error goes on.
 * @param {string} setsDir
 * @param {string} target
 * @param {import('./secret-store.js').SecretStore} store
 * @param {{ dir: number, file: number }} modes
 */
function writeGeneration(setsDir, target, store, modes) {
  var tmp = setsDir + '/.tmp-' + Math.random().toString(36).slice(2);
  try {
    fs.mkdirSync(tmp, modes.dir);
    var write = function (/** @type {string} */ name, /** @type {unknown} */ set) {
      fs.mkdirSync(tmp + '/' + name, modes.dir);
      fs.writeFileSync(tmp + '/' + name + '/secret', JSON.stringify(set) + '\n', {
        mode: modes.file,
      });
    };
    write(DEFAULT_SET, store.default);
    var issuers = Object.keys(store.issuers);
    for (var i = 0; i < issuers.length; i++) {
      var sets = store.issuers[issuers[i]];
      var ids = Object.keys(sets);
      for (var j = 0; j < ids.length; j++) write(setName(issuers[i], ids[j]), sets[ids[j]]);
    }
    fs.renameSync(tmp, target);
  } catch (e) {
    removeTree(tmp);
    throw e;
  }
}

/**
 * Points `setsDir/current` at `generation` in one rename and removes every other generation
 * (a file NGINX still has open stays readable until it is closed).
 * @param {string} setsDir
 * @param {string} generation
 */
function switchTo(setsDir, generation) {
  var link = setsDir + '/.current-' + Math.random().toString(36).slice(2);
  fs.symlinkSync(generation, link);
  try {
    fs.renameSync(link, setsDir + '/current');
  } catch (e) {
    fs.unlinkSync(link);
    throw e;
  }
  removeOthers(setsDir, generation);
}

/**
 * Removes the `current` link, so every /secret answers 503 instead of a set that no longer
 * holds, and every generation with it.
 * @param {string} setsDir
 */
function withdraw(setsDir) {
  try {
    fs.unlinkSync(setsDir + '/current');
  } catch (e) {
    // nothing published
  }
  removeOthers(setsDir, '');
}

/**
 * @param {string} setsDir
 * @param {string} keep
 */
function removeOthers(setsDir, keep) {
  var names = fs.readdirSync(setsDir);
  for (var i = 0; i < names.length; i++) {
    var path = setsDir + '/' + names[i];
    if (names[i] === keep || names[i] === 'current') continue;
    var st;
    try {
      st = fs.lstatSync(path);
    } catch (e) {
      continue;
    }
    // A link left by an interrupted switch goes; only directories are generations.
    if (st.isSymbolicLink()) fs.unlinkSync(path);
    else if (st.isDirectory()) removeTree(path);
  }
}

/**
 * @typedef {{ generation: string } | { problem: string } | { failed: string }} PublishResult
 */

/**
 * Publishes the sets of the secrets source: `SECRETS` when set and not empty, else the file.
 * `problem`: the source is broken or ambiguous (the caller decides when to withdraw); `failed`:
 * it is fine but could not be written (e.g. ENOSPC), nothing partial is left behind.
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
  var result = secretStore.resolveStore(file, envText, options.clientsIssuer);
  if ('problem' in result) return { problem: result.problem };
  var generation =
    'g' + digest((fromEnv ? 'env\n' + envText : 'file\n' + text) + '\n' + options.clientsIssuer);
  var modes = modesFor(options.shared === true);
  try {
    ensureDir(options.setsDir, modes.dir);
    var target = options.setsDir + '/' + generation;
    if (!exists(target)) writeGeneration(options.setsDir, target, result.store, modes);
    switchTo(options.setsDir, generation);
  } catch (e) {
    return { failed: /** @type {{ code?: string }} */ (e).code || 'write error' };
  }
  return { generation: generation };
}

export default { publish, withdraw, setName };
