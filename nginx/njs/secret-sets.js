// secret-gate: guards which secret set a caller can ever receive. It turns the secrets file
// (its rules: secret-store.js) into the files NGINX serves for /secret and /secret/<name>: one
// small JSON file per set, `<set name>/secret` (a policy's under `policies/<name>/`), in a
// generation directory named by the content it came from, and a `current` symlink swapped in one
// rename. NGINX serves `current[/policies/<name>]/<set name>/secret` with its static handler (the
// set name, the verifier's opaque X-Auth-Set, is in try_files): an allowed /secret runs no njs.
// Run by the secret-set watcher (bin/sg-secret-sets, via secret-sets-cli.js) in the njs CLI or in
// Node, so only what both share is used.
import fs from 'fs';
import store from './secret-store.js';

/**
 * @typedef {import('./secret-store.js').NamedSet} NamedSet
 * @typedef {{ generation: string } | { problem: string } | { failed: string }} PublishResult
 */

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
  var result = store.resolveStore(file, envText, options.clientsIssuer);
  if ('problem' in result) return { problem: result.problem };
  var generation =
    'g' +
    store.digest((fromEnv ? 'env\n' + envText : 'file\n' + text) + '\n' + options.clientsIssuer);
  var dir = options.setsDir;
  // Modes: the watcher's alone when it runs as NGINX's workers do (the image, an unprivileged
  // local run); readable by them when it runs as root and they as `nobody`, inside a memory
  // directory only they can enter.
  var dirMode = options.shared ? 0o755 : 0o700;
  var mode = options.shared ? 0o644 : 0o600;
  var top = result.store;
  // Each policy's sets in a tree of their own: the top level's (policy `secret`) at the root,
  // `policies.<name>` under policies/<name>; `default` in each is the set of every client without
  // one of its own there.
  var trees = [{ dir: '', default: top.default, sets: top.sets }].concat(
    (top.policies || []).map((p) => ({
      dir: '/policies/' + p.name,
      default: p.default,
      sets: p.sets,
    })),
  );
  // Written into a private temporary directory renamed into place, so a request never sees half
  // a generation; on any failure (a full memory directory) the partial copy is removed.
  var tmp = dir + '/.tmp-' + Math.random().toString(36).slice(2);
  try {
    if (!exists(dir)) fs.mkdirSync(dir, dirMode);
    if (!exists(dir + '/' + generation)) {
      fs.mkdirSync(tmp, dirMode);
      if (trees.length > 1) fs.mkdirSync(tmp + '/policies', dirMode);
      for (var t = 0; t < trees.length; t++) {
        var tree = tmp + trees[t].dir;
        if (trees[t].dir) fs.mkdirSync(tree, dirMode);
        var sets = trees[t].sets.concat([{ name: 'default', set: trees[t].default }]);
        for (var i = 0; i < sets.length; i++) {
          fs.mkdirSync(tree + '/' + sets[i].name, dirMode);
          var json = JSON.stringify(sets[i].set) + '\n';
          fs.writeFileSync(tree + '/' + sets[i].name + '/secret', json, { mode: mode });
        }
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

export default { publish, withdraw, setName: store.setName, resolveStore: store.resolveStore };
