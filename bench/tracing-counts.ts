// bench:tracing's counted rows: the built verifier's instructions per cached /verify under callgrind,
// per tracing mode. Timings on the shared machine move by ±10 % between rounds; instruction counts
// of the same configuration agree within ~1 %, so they resolve what the header and 1 % cost.
// The verifier runs as deployed (VERIFIER_NODE_FLAGS), as one process under valgrind (its JIT code
// included: --smc-check); a kept-alive client sends BENCH_COUNT_WARMUP requests (15,000: until the
// JIT stops compiling, which under valgrind runs on the same serialised thread), the counters are
// zeroed, BENCH_COUNT_REQUESTS more (5,000) are sent and counted, all threads included.
// BENCH_COUNT_MODES (a regular expression over the names below) counts some modes only.
// `1 %, ratio 1 %, warm` is `1 %, warm` under parentbased_traceidratio at 0.01.
// `1 %, export held` holds the batch (OTEL_BSP_SCHEDULE_DELAY of an hour, batch and queue 2,048)
// so no export runs in the window: against `1 %` it splits a sampled span into the SDK's part and
// the export's. `100 %, export held` does the same for every request (heldBatch).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createKeepAliveClient } from '../perf/keepalive-client.js';
import { startMeasuredProcess } from '../perf/measured-process.js';
import { benchedVerifierEnv } from '../perf/systems.js';
import { freePort } from '../stack/ports.js';
import { VERIFIER_NODE_FLAGS } from '../stack/service-env.js';
import { AUDIENCE, ISSUER, mintToken, startJwksServer } from '../verifier/src/testing/fixtures.js';

interface CountMode {
  readonly name: string;
  /** A traceparent on each request, sampled on one in `every` (0: never); undefined: none. */
  readonly sampleEvery: number | undefined;
  /** The warm-up's sampling, when not `sampleEvery`'s (see `1 %, warm`). */
  readonly warmEvery?: number;
  /** The header's name: `traceparent` unless set. */
  readonly header?: string;
  readonly otel: boolean;
  readonly env?: Readonly<Record<string, string>>;
  /** Export the warm-up's spans in whole batches, none of the counted requests' (heldBatch). */
  readonly holdsCount?: boolean;
}

/**
 * The batch size that exports the warm-up's spans in whole batches and none of the counted ones: a
 * divisor of `warmup` above `requests` (15,000 and 5,000: 7,500), the batch timer an hour. Holding
 * every span instead (a batch above both) keeps 20,000 spans alive in the verifier's 96 MB heap, and
 * its major GCs made that row 87,309 in one run and 145,128 in the next, for span code the profile
 * shows ~4,800 cheaper in the second (docs/performance.md, "Ninth round").
 */
function heldBatch(warmup: number, requests: number): Record<string, string> {
  let batches = Math.floor(warmup / (requests + 1));
  while (batches > 1 && warmup % batches !== 0) batches--;
  const batch = batches >= 1 && warmup % batches === 0 ? warmup / batches : warmup + requests + 1;
  return {
    OTEL_BSP_SCHEDULE_DELAY: '3600000',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: String(batch),
    // Never full: a span dropped in the warm-up would leave a part batch that the count completes.
    OTEL_BSP_MAX_QUEUE_SIZE: String(warmup + requests + 1),
  };
}
const COUNT_MODES: readonly CountMode[] = [
  { name: 'off', sampleEvery: undefined, otel: false },
  // The same bytes under a name the verifier never reads: what of the header's cost is the wire's.
  { name: 'off + x-unread', sampleEvery: 0, otel: false, header: 'x-unread' },
  { name: 'off + header', sampleEvery: 0, otel: false },
  // OpenTelemetry on, every header unsampled: what a request NGINX left out costs, with no span
  // (nor its export) in the window to blur it; under the default sampler and under a 1 % ratio.
  { name: 'none sampled', sampleEvery: 0, otel: true },
  {
    name: 'none sampled, ratio 1 %',
    sampleEvery: 0,
    otel: true,
    env: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' },
  },
  { name: '1 %', sampleEvery: 100, otel: true },
  {
    name: '1 %, export held',
    sampleEvery: 100,
    otel: true,
    env: {
      OTEL_BSP_SCHEDULE_DELAY: '3600000',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2048',
      OTEL_BSP_MAX_QUEUE_SIZE: '2048',
    },
  },
  // The span's code as a verifier that has run for a while has it: at 1 % TurboFan optimises it
  // only after ~300,000 requests (docs/performance.md, "Tracing"), so the warm-up samples one in 4
  // (3,750 spans), then 1 % is counted.
  { name: '1 %, warm', sampleEvery: 100, warmEvery: 4, otel: true },
  // The same under parentbased_traceidratio at 1 %: an unsampled header is checked whole only for
  // the requests the ratio's draw lets through (tracing/edge-sampling.ts).
  {
    name: '1 %, ratio 1 %, warm',
    sampleEvery: 100,
    warmEvery: 4,
    otel: true,
    env: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' },
  },
  { name: '100 %', sampleEvery: 1, otel: true },
  // No span exported in the window: against `100 %` the export's part of a recorded span (OTLP
  // encoding, the HTTP send), against `off + header` the SDK's span and our code around it. The
  // warm-up's spans are exported in whole batches before the count (heldBatch), the counted ones
  // stay queued: no more than a batch is alive at once, as when exporting.
  { name: '100 %, export held', sampleEvery: 1, otel: true, holdsCount: true },
];

export interface CountRowsOptions {
  /** The OTLP receiver's base URL (in the bench process). */
  readonly otlp: string;
  /** Scratch directory for callgrind's files. */
  readonly dir: string;
  readonly log: (line: string) => void;
}

/** A fresh trace id per request, as NGINX sends; sampled on one in `every` (0: never). */
function traceHeader(
  every: number | undefined,
  i: number,
  name = 'traceparent',
): Record<string, string> {
  if (every === undefined) return {};
  const id = (i + 1).toString(16).padStart(8, '0');
  const flags = every > 0 && i % every === 0 ? '01' : '00';
  return { [name]: `00-4bf92f3577b34da6a3ce929d${id}-00f067aa${id}-${flags}` };
}

async function countMode(
  mode: CountMode,
  index: number,
  options: CountRowsOptions & { jwksUri: string; token: string; warmup: number; requests: number },
): Promise<number> {
  const port = await freePort();
  const dir = join(options.dir, `verifier-${index}`);
  mkdirSync(dir);
  const verifier = await startMeasuredProcess({
    name: `${mode.name}: the verifier under callgrind`,
    command: process.execPath,
    args: [...VERIFIER_NODE_FLAGS, 'verifier/dist/main.js'],
    env: {
      PATH: process.env.PATH ?? '',
      ...benchedVerifierEnv({ issuer: ISSUER, audience: AUDIENCE, jwksUri: options.jwksUri, port }),
      ...(mode.otel ? { OTEL_EXPORTER_OTLP_ENDPOINT: options.otlp } : {}),
      ...mode.env,
      ...(mode.holdsCount ? heldBatch(options.warmup, options.requests) : {}),
    },
    callgrind: { dir, jit: true },
    ready: { url: `http://127.0.0.1:${port}/readyz` },
    readyTimeoutMs: 120_000,
    stopSignal: 'SIGKILL',
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    const client = createKeepAliveClient(url);
    const next = (i: number, every = mode.sampleEvery) => ({
      path: '/verify',
      headers: { authorization: `Bearer ${options.token}`, ...traceHeader(every, i, mode.header) },
    });
    await client.send(options.warmup, (i) => next(i, mode.warmEvery ?? mode.sampleEvery), 204);
    // The warm-up's spans exported before the count (the batch's 5 s timer), not inside it.
    if (mode.warmEvery !== undefined || mode.holdsCount)
      await new Promise((resolve) => setTimeout(resolve, 15_000));
    await verifier.zero();
    await client.send(options.requests, (i) => next(options.warmup + i), 204);
    const counted = await verifier.dump('counted');
    client.close();
    return counted / options.requests;
  } finally {
    await verifier.stop();
  }
}

/** The counted rows' report lines: instructions per cached decision and against `off`. */
export async function countRows(options: CountRowsOptions): Promise<string[]> {
  const warmup = Number(process.env.BENCH_COUNT_WARMUP ?? 15_000);
  const requests = Number(process.env.BENCH_COUNT_REQUESTS ?? 5_000);
  const jwks = await startJwksServer(['rsaA']);
  // Valid for the whole run: the slowest mode under valgrind takes minutes.
  const token = await mintToken({ claims: { exp: Math.floor(Date.now() / 1000) + 7200 } });
  const counted = new Map<string, number>();
  // BENCH_COUNT_MODES, a regular expression, picks modes by name; `off` and `off + header` always
  // run, every row is reported against them.
  const picked = new RegExp(process.env.BENCH_COUNT_MODES ?? '');
  const modes = COUNT_MODES.filter(
    ({ name }) => name === 'off' || name === 'off + header' || picked.test(name),
  );
  try {
    // Two at a time: counts do not depend on the machine's load, and each takes one core.
    for (let first = 0; first < modes.length; first += 2) {
      const pair = modes.slice(first, first + 2);
      const results = await Promise.all(
        pair.map((mode, k) =>
          countMode(mode, first + k, { ...options, jwksUri: jwks.url, token, warmup, requests }),
        ),
      );
      for (const [k, mode] of pair.entries()) {
        counted.set(mode.name, results[k]!);
        options.log(`counted ${mode.name}: ${Math.round(results[k]!)} instructions per request`);
      }
    }
  } finally {
    await jwks.close();
  }
  const off = counted.get('off')!;
  const header = counted.get('off + header')!;
  const lines = [
    `verifier instructions per cached /verify (callgrind, all threads; ${requests.toLocaleString('en')} requests on one kept-alive connection after ${warmup.toLocaleString('en')} of warm-up):`,
    'mode                     instructions  against off  per sampled span',
  ];
  for (const mode of modes) {
    const count = counted.get(mode.name)!;
    const against = mode.name === 'off' ? '–' : `${((count / off - 1) * 100).toFixed(1)} %`;
    const perSpan =
      mode.otel && mode.sampleEvery ? ((count - header) * mode.sampleEvery).toFixed(0) : '';
    lines.push(
      `${mode.name.padEnd(23)}  ${Math.round(count).toLocaleString('en').padStart(12)}  ${against.padStart(11)}  ${perSpan.padStart(16)}`,
    );
  }
  return lines;
}
