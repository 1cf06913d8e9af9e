// `node verifier/dist/probe.js [/readyz|/healthz]`: exit 0 when the verifier answers 200 on that
// path, 1 otherwise. It asks the listener VERIFIER_LISTEN names (TCP or unix socket), so the
// image's HEALTHCHECK, compose and Kubernetes exec probes follow the configuration.
import { request } from 'node:http';
import { DEFAULT_LISTEN, listen as listenKind } from './config/values.js';

const TIMEOUT_MS = 2000;
const PATHS = new Set(['/readyz', '/healthz']);

/** Where to connect: a wildcard listen address is reached over loopback. */
function probeTarget(
  listenValue: string | undefined,
): { socketPath: string } | { host: string; port: number } {
  const parsed = listenKind.safeParse(listenValue?.trim() || DEFAULT_LISTEN);
  if (!parsed.success)
    throw new Error(
      parsed.error.issues.map((issue) => `VERIFIER_LISTEN: ${issue.message}`).join('; '),
    );
  const listen = parsed.data;
  if (listen.kind === 'unix') return { socketPath: listen.path };
  const host = listen.host === '0.0.0.0' ? '127.0.0.1' : listen.host === '::' ? '::1' : listen.host;
  return { host, port: listen.port };
}

function main(): void {
  const path = process.argv[2] ?? '/readyz';
  if (!PATHS.has(path)) {
    process.stderr.write(`usage: probe.js [/readyz|/healthz], got "${path}"\n`);
    process.exit(2);
  }
  const fail = (why: string) => {
    process.stderr.write(`${path}: ${why}\n`);
    process.exit(1);
  };
  let target: ReturnType<typeof probeTarget>;
  try {
    target = probeTarget(process.env.VERIFIER_LISTEN);
  } catch (error) {
    return fail((error as Error).message);
  }
  request({ ...target, path, timeout: TIMEOUT_MS }, (answer) => {
    answer.resume();
    if (answer.statusCode === 200) process.exit(0);
    fail(`status ${answer.statusCode}`);
  })
    .on('timeout', () => fail(`no answer within ${TIMEOUT_MS} ms`))
    .on('error', (error) => fail(error.message))
    .end();
}

main();
