// `node verifier/dist/probe.js [/readyz|/healthz]`: exit 0 when the verifier answers 200 on that
// path, 1 otherwise. It asks the listener VERIFIER_LISTEN names (TCP or unix socket), so the
// image's HEALTHCHECK, compose and Kubernetes exec probes follow the configuration.
import { request } from 'node:http';
import { DEFAULT_LISTEN, parseListen } from './config/listen.js';

/**
 * Inside the image's HEALTHCHECK timeout (10 s) and the Kubernetes probes' (10 s): a verifier
 * busy with a full CPU quota answers late, not never, and a failed liveness probe restarts it.
 */
const TIMEOUT_MS = 8000;
/** A wildcard listen address is reached over loopback. */
const LOOPBACK = new Map(Object.entries({ '0.0.0.0': '127.0.0.1', '::': '::1' }));
const path = process.argv[2] ?? '/readyz';

function fail(why: string, code = 1): never {
  process.stderr.write(`${why}\n`);
  process.exit(code);
}

if (path !== '/readyz' && path !== '/healthz')
  fail(`usage: probe.js [/readyz|/healthz], got "${path}"`, 2);
const listen = parseListen(process.env.VERIFIER_LISTEN?.trim() || DEFAULT_LISTEN);
if ('problem' in listen) fail(`${path}: VERIFIER_LISTEN: ${listen.problem}`);
const target =
  listen.kind === 'unix'
    ? { socketPath: listen.path }
    : { host: LOOPBACK.get(listen.host) ?? listen.host, port: listen.port };
request({ ...target, path, timeout: TIMEOUT_MS }, (answer) => {
  answer.resume();
  if (answer.statusCode === 200) process.exit(0);
  fail(`${path}: status ${answer.statusCode}`);
})
  .on('timeout', () => fail(`${path}: no answer within ${TIMEOUT_MS} ms`))
  .on('error', (error) => fail(`${path}: ${error.message}`))
  .end();
