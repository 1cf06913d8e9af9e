// The fast path of /secret: every secret set as its own small JSON file, written once per
// generation of the secrets file into a memory-backed directory and then served by NGINX's static
// handler. Per request this costs one stat of the secrets file and one existence check instead of
// reading and parsing the whole file; a rotated file (a new inode, size or mtime, as the kubelet's
// `..data` swap gives) is a new generation, materialised by the first request that sees it, so
// rotation needs no reload and no watcher.
import fs from 'fs';
import crypto from 'crypto';
import secretStore from './secret-store.js';

/** try_files falls through to the njs handler (secrets.js) for this path: it never exists. */
var DYNAMIC = '/-';

/** @param {string} text */
function digest(text) {
  return crypto.createHash('sha256').update(text).digest('hex').slice(0, 32);
}

/**
 * File name (without `.json`) of the set of (`issuer`, `clientId`): a digest, so no id can name a
 * path, and the issuer is part of it, so equal client ids of two issuers never share a file.
 * @param {string} issuer
 * @param {string} clientId
 */
function setFileName(issuer, clientId) {
  return 'c' + digest(issuer + '\n' + clientId);
}

/**
 * The generation of the source: the SECRETS variable's content, or the secrets file's identity as
 * `stat` sees it through any symlinks; the issuer owning the flat `clients` map is part of it.
 * @param {string} file
 * @param {string | undefined} envText
 * @param {string} clientsIssuer
 */
function generationOf(file, envText, clientsIssuer) {
  if (typeof envText === 'string' && envText.length > 0) {
    return 'e' + digest(envText + '\n' + clientsIssuer);
  }
  var st = fs.statSync(file);
  return 'f' + digest([st.dev, st.ino, st.size, st.mtimeMs, st.ctimeMs, clientsIssuer].join('\n'));
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

/** @param {string} dir */
function removeTree(dir) {
  try {
    var names = fs.readdirSync(dir);
    for (var i = 0; i < names.length; i++) fs.unlinkSync(dir + '/' + names[i]);
    fs.rmdirSync(dir);
  } catch (e) {
    // Another worker may be removing it too; whatever is left goes with the next generation.
  }
}

/**
 * Writes every set of `store` into `setsDir/generation` in one step: a private temporary
 * directory renamed into place, so a request never sees half a generation. Older generations
 * are removed (a file being served stays readable until it is closed).
 * @param {string} setsDir
 * @param {string} generation
 * @param {import('./secret-store.js').SecretStore} store
 */
function materialise(setsDir, generation, store) {
  try {
    fs.mkdirSync(setsDir, 0o700);
  } catch (e) {
    // exists already
  }
  var tmp = setsDir + '/.tmp-' + generation + '-' + Math.random().toString(36).slice(2);
  fs.mkdirSync(tmp, 0o700);
  var write = function (/** @type {string} */ name, /** @type {unknown} */ set) {
    fs.writeFileSync(tmp + '/' + name + '.json', JSON.stringify(set) + '\n', { mode: 0o600 });
  };
  write('default', store.default);
  var issuers = Object.keys(store.issuers);
  for (var i = 0; i < issuers.length; i++) {
    var sets = store.issuers[issuers[i]];
    var ids = Object.keys(sets);
    for (var j = 0; j < ids.length; j++) write(setFileName(issuers[i], ids[j]), sets[ids[j]]);
  }
  try {
    fs.renameSync(tmp, setsDir + '/' + generation);
  } catch (e) {
    // Another worker won the race with the same content.
    removeTree(tmp);
  }
  var names = fs.readdirSync(setsDir);
  for (var k = 0; k < names.length; k++) {
    if (names[k] !== generation && names[k].indexOf('.tmp-') !== 0) {
      removeTree(setsDir + '/' + names[k]);
    }
  }
}

/**
 * `js_set $sg_secret_set secret_sets.path;` — evaluated by try_files, after auth_request allowed
 * the call. The URI (under `$sg_secret_sets_dir`) of the caller's set for this generation, or
 * `/-` so try_files hands over to the njs handler: CloudFront cookies to set, SG_SECRETS_READ
 * other than `sets`,
 * or a source that cannot be read or is ambiguous (that handler answers 503 and logs why).
 * @param {NginxHTTPRequest} r
 */
function path(r) {
  var v = r.variables;
  if (v.sg_cf_policy || v.sg_secrets_read !== 'sets') return DYNAMIC;
  var setsDir = v.sg_secret_sets_dir || '';
  var clientsIssuer = v.sg_secrets_issuer || '';
  var envText = process.env.SECRETS;
  var generation;
  try {
    generation = generationOf(v.sg_secrets_file || '', envText, clientsIssuer);
    if (!exists(setsDir + '/' + generation)) {
      var file =
        typeof envText === 'string' && envText.length > 0
          ? undefined
          : JSON.parse(fs.readFileSync(v.sg_secrets_file || '', 'utf8'));
      var result = secretStore.resolveStore(file, envText, clientsIssuer);
      if ('problem' in result) return DYNAMIC;
      materialise(setsDir, generation, result.store);
    }
  } catch (e) {
    return DYNAMIC;
  }
  var issuer = v.sg_auth_issuer || '';
  var client = v.sg_auth_client || '';
  if (issuer && client) {
    var own = '/' + generation + '/' + setFileName(issuer, client) + '.json';
    if (exists(setsDir + own)) return own;
  }
  return '/' + generation + '/default.json';
}

export default { path, setFileName, generationOf, materialise };
