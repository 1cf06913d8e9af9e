// secret-gate: guards nothing itself (policy-names.js does); the named sets of the verifier's policy
// file for bin/sg-render, run by the njs CLI or Node:
//   policy-names-cli.js -- POLICY_FILE SECRETS_FILE CLIENTS_ISSUER   (SECRETS from the environment)
// Prints one line: `names <name> <name>…` (possibly none) or `problem <text>`. The text names
// policies and files, never a value of the secrets source.
import fs from 'fs';
import policyNames from './policy-names.js';

var args = process.argv.slice(process.argv.indexOf('--') + 1);
var policyFile = args[0] || '';
var secretsFile = args[1] || '';

/** @param {string} path @returns {string | undefined} */
function readText(path) {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch (e) {
    return undefined;
  }
}

var text = readText(policyFile);
if (text === undefined) {
  console.log('problem policy file ' + policyFile + ' cannot be read');
} else {
  var result = policyNames.namesOf(text, policyFile);
  if ('problem' in result) {
    console.log('problem ' + result.problem);
  } else {
    var secrets;
    try {
      secrets = JSON.parse(readText(secretsFile) || '');
    } catch (e) {
      secrets = undefined;
    }
    var problem = policyNames.mismatch(result.names, secrets, process.env.SECRETS, args[2] || '', {
      policyFile: policyFile,
      secretsFile: secretsFile,
    });
    console.log(problem ? 'problem ' + problem : ('names ' + result.names.join(' ')).trim());
  }
}
