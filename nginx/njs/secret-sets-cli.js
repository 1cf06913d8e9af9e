// secret-gate: guards nothing itself (secret-sets.js does); the secret-set watcher's one step
// (nginx/bin/sg-secret-sets), run by the njs CLI or Node:
//   secret-sets-cli.js publish SETS_DIR SECRETS_FILE CLIENTS_ISSUER [shared]  (SECRETS from the
//   environment; `shared`: readable by NGINX's workers running as another user)
//   secret-sets-cli.js withdraw SETS_DIR
// Prints one line for the watcher to act on: `ok <generation>`, `problem <text>` or
// `failed <code>`. The text never quotes a value of the secrets source.
import secretSets from './secret-sets.js';

var args = process.argv.slice(process.argv.indexOf('--') + 1);
var setsDir = args[1] || '';
/** @type {import('./secret-sets.js').PublishResult} */
var result = { problem: 'usage: secret-sets-cli.js publish|withdraw SETS_DIR ...' };
if (args[0] === 'withdraw') {
  secretSets.withdraw(setsDir);
  result = { generation: 'withdrawn' };
} else if (args[0] === 'publish') {
  result = secretSets.publish({
    setsDir: setsDir,
    secretsFile: args[2] || '',
    clientsIssuer: args[3] || '',
    envText: process.env.SECRETS,
    shared: args[4] === 'shared',
  });
}
if ('generation' in result) console.log('ok ' + result.generation);
else if ('problem' in result) console.log('problem ' + result.problem);
else console.log('failed ' + result.failed);
