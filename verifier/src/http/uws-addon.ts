// Loads the uWebSockets.js native addon, but only one the repository records: its sha256, the Node
// it is built for and the glibc it needs (verifier/uws-addons.json). A swapped, corrupted or
// unrecorded binary never serves; each refusal is one line that says what to run instead.
// The image build runs the same check (verifier/Dockerfile), so a mismatch also fails the build.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

type Uws = typeof import('uWebSockets.js');

export interface RecordedAddon {
  readonly sha256: string;
  /** The Node major the addon's ABI belongs to. */
  readonly node: number;
  /** The lowest glibc the addon links against. */
  readonly glibc: string;
  readonly release: string;
}

const RECORD_URL = new URL('../../uws-addons.json', import.meta.url);

/**
 * The largest request head the verifier reads (uWS answers 431 above it, which auth_request turns
 * into a 500). NGINX sends /verify at most one Authorization line of its header buffer (24 KiB,
 * tunables.conf), a DPoP proof of 2 KiB and under 1 KiB of its own headers; uWS's own default is
 * 4 KiB. The addon reads UWS_HTTP_MAX_HEADERS_SIZE once, when it loads: `loadUws` sets it.
 */
export const MAX_REQUEST_HEAD_BYTES = 32_768;
const HEAD_LIMIT_VARIABLE = 'UWS_HTTP_MAX_HEADERS_SIZE';

/**
 * Gives the addon its head limit before it loads: MAX_REQUEST_HEAD_BYTES unless the environment
 * names a larger one; a smaller one stops the start, since NGINX would then get 431s for tokens
 * the verifier is documented to accept.
 */
export function setRequestHeadLimit(env: NodeJS.ProcessEnv = process.env): void {
  const given = env[HEAD_LIMIT_VARIABLE];
  if (given === undefined || given === '') {
    env[HEAD_LIMIT_VARIABLE] = String(MAX_REQUEST_HEAD_BYTES);
    return;
  }
  if (!/^\d+$/.test(given) || Number(given) < MAX_REQUEST_HEAD_BYTES)
    throw new Error(
      `${HEAD_LIMIT_VARIABLE}=${given.slice(0, 20)} is below the ${MAX_REQUEST_HEAD_BYTES} bytes the verifier needs (a 16 KiB token, a DPoP proof and NGINX's headers): unset it or raise it`,
    );
}
const SUPPORTED = 'Node 22 (glibc >= 2.27) or Node 24 (glibc >= 2.38)';

/** The recorded addons by file name. */
export function readRecord(url: URL = RECORD_URL): ReadonlyMap<string, RecordedAddon> {
  const record = JSON.parse(readFileSync(url, 'utf8')) as {
    addons: Record<string, RecordedAddon>;
  };
  return new Map(Object.entries(record.addons));
}

/** `2.36` < `2.38`, compared as numbers part by part. */
function older(version: string, than: string): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  const [c = 0, d = 0] = than.split('.').map(Number);
  return a < c || (a === c && b < d);
}

function glibcRuntime(): string | undefined {
  const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
  return report.header?.glibcVersionRuntime;
}

/** The file name uws.js itself loads for this process. */
export function addonName(): string {
  return `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
}

/**
 * Checks the addon this process would load against the record, then loads it. Throws one line:
 * an unrecorded platform or Node, a glibc too old for the addon, or a hash that differs (naming
 * the file and both hashes).
 */
export function loadUws(record = readRecord()): Uws {
  const require = createRequire(import.meta.url);
  const name = addonName();
  const recorded = record.get(name);
  if (recorded === undefined)
    throw new Error(
      `no recorded uWebSockets.js addon for Node ${process.version} on ${process.platform}-${process.arch} (${name}): the verifier runs on ${SUPPORTED}, Linux`,
    );
  const glibc = glibcRuntime();
  if (glibc !== undefined && older(glibc, recorded.glibc))
    throw new Error(
      `uWebSockets.js's addon for Node ${recorded.node} (${name}) needs glibc >= ${recorded.glibc}, this system has ${glibc}: run ${SUPPORTED}`,
    );
  const file = join(dirname(require.resolve('uWebSockets.js')), name);
  let actual: string;
  try {
    actual = createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch (error) {
    throw new Error(`uWebSockets.js addon ${file} cannot be read: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (actual !== recorded.sha256)
    throw new Error(
      `uWebSockets.js addon ${file}: sha256 ${actual} differs from the recorded ${recorded.sha256} (verifier/uws-addons.json)`,
    );
  setRequestHeadLimit();
  let uws: Uws;
  try {
    uws = require('uWebSockets.js') as Uws;
  } catch (error) {
    const why = (error as Error).message.split('\n').at(-1) ?? '';
    throw new Error(`uWebSockets.js did not load: ${why}`, { cause: error });
  }
  if (typeof uws.getParts !== 'function')
    throw new Error(`uWebSockets.js loaded without its native addon ${name}`);
  return uws;
}
