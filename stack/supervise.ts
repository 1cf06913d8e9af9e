// The part every runner shares once its processes are described: start them in order, hand out
// one Stack handle, and make sure they all stop again (on stop(), on a failed start, on exit).
import { SERVICE_NAMES, type ServiceName } from './service-env.js';
import type { ServiceProcess } from './service-process.js';
import type { Stack, StackUrls } from './stack.js';
import { trackStack, untrackStack } from './teardown.js';

export interface StackParts extends Omit<
  Stack,
  'mintToken' | 'isRunning' | 'pid' | 'stopService' | 'startService' | 'stop'
> {
  /** Undefined for a service this run does not start (the dev IdP beside an own IdP). */
  readonly services: Readonly<Record<ServiceName, ServiceProcess | undefined>>;
  readonly readyTimeoutMs?: number;
  /** Says what is starting; `label` may add how (e.g. "as nobody"). */
  readonly log: (line: string) => void;
  readonly label?: (name: ServiceName) => string;
  /** Runs once after every service stopped: remove what the runner created. */
  readonly cleanUp: () => void;
}

/** Starts the services in order (IdP, verifier, NGINX); on any failure stops them and rethrows. */
export async function superviseStack(parts: StackParts): Promise<Stack> {
  const { services, readyTimeoutMs, log, label, cleanUp, ...described } = parts;
  let stopped = false;
  let cleaned = false;
  const cleanUpOnce = () => {
    if (cleaned) return;
    cleaned = true;
    cleanUp();
  };
  const stack: Stack = {
    ...described,
    mintToken: (mint = {}) =>
      services.idp === undefined
        ? Promise.reject(new Error('no dev IdP in this stack: get tokens from your own IdP'))
        : parts.idp.mintToken(mint),
    isRunning: (name) => services[name]?.running ?? false,
    pid: (name) => (services[name]?.running ? services[name].pid : undefined),
    stopService: async (name, signal) => services[name]?.stop(signal),
    startService: (name) =>
      services[name]?.start(readyTimeoutMs) ??
      Promise.reject(new Error(`${name} is not part of this stack`)),
    async stop() {
      if (stopped) return;
      stopped = true;
      untrackStack(tracker);
      // NGINX first so no request reaches a verifier that is going away, then the rest.
      await services.nginx?.stop();
      await Promise.all([services.verifier?.stop(), services.idp?.stop()]);
      cleanUpOnce();
    },
  };
  const tracker = {
    stop: () => stack.stop(),
    // Also on the way out of a process that ends before stop() is done (an uncaught error,
    // exit(), a stop slower than the grace): what the run left in memory goes with it.
    killNow: () => {
      for (const name of SERVICE_NAMES) services[name]?.killNow();
      cleanUpOnce();
    },
  };
  trackStack(tracker);

  try {
    for (const name of SERVICE_NAMES) {
      const process = services[name];
      if (process === undefined) {
        log(`${name}: not started (own IdP)`);
        continue;
      }
      log(`starting ${name}${label?.(name) ?? ''}`);
      await process.start(readyTimeoutMs);
    }
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return stack;
}

/** The addresses a Stack reports, from NGINX's origin, the issuer and the verifier's address. */
export function stackUrls(gate: string, issuer: string, verifier: string): StackUrls {
  return {
    gate,
    hello: `${gate}/hello`,
    secret: `${gate}/secret`,
    config: `${gate}/config.json`,
    idp: issuer,
    issuer,
    tokenEndpoint: `${issuer}/token`,
    verifier,
  };
}

/** Only what a child needs from our environment: never our own VERIFIER_/IDP_/SG_ settings. */
export function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'NODE_EXTRA_CA_CERTS']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
