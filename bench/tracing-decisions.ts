// One mode of bench:tracing's in-process rows, run by bench/tracing.ts in a process of its own
// (the OpenTelemetry SDK registers its context manager once per process): the verifier service as
// main.ts builds it, tracing started as main.ts starts it, and the CPU each decision costs with no
// socket and no load generator in the figure. Cached: one token, a fresh traceparent per decision
// as NGINX sends. Distinct: a new RS256 token each, from the file the parent signed. Decisions run
// in chunks with the event loop turned between them, so the batch processor's exports (the OTLP
// serialisation and the HTTP request to the parent's receiver) run and are counted; each row's
// measurement ends after the spans are flushed. Prints one JSON line: µs of CPU per decision.
import { readFileSync } from 'node:fs';
import { setImmediate as turn } from 'node:timers/promises';
import { ExportResultCode } from '@opentelemetry/core';
import { loadConfig } from '../verifier/src/config/load.js';
import type { VerifyRequest } from '../verifier/src/decision/decision.js';
import { createLogger } from '../verifier/src/log.js';
import { createVerifierService } from '../verifier/src/service.js';
import { AUDIENCE, ISSUER, startJwksServer } from '../verifier/src/testing/fixtures.js';
import { startTracing } from '../verifier/src/tracing/otel.js';

/** What a mode sets: the header's sampled share (undefined: no header) and the exporter. */
export interface DecisionMode {
  readonly name: string;
  readonly sampleEvery: number | undefined;
  readonly exporter: 'none' | 'http/protobuf' | 'http/json' | 'drop';
}

const CHUNK = 256;

/** Fresh ids per decision, as NGINX sends them; sampled on one in `every` (0: never). */
function traceparents(every: number): string[] {
  return Array.from({ length: 1024 }, (_, i) => {
    const flags = every > 0 && i % every === 0 ? '01' : '00';
    const id = (i + 1).toString(16).padStart(8, '0');
    return `00-4bf92f3577b34da6a3ce929d${id}-00f067aa${id}-${flags}`;
  });
}

async function main(): Promise<void> {
  const [modeArg, tokensFile, callsArg] = process.argv.slice(2);
  if (modeArg === undefined || tokensFile === undefined)
    throw new TypeError('usage: tracing-decisions.ts MODE-JSON TOKENS-FILE [CACHED-CALLS]');
  const mode = JSON.parse(modeArg) as DecisionMode;
  const cachedCalls = Number(callsArg ?? 40_000);
  const tokens = readFileSync(tokensFile, 'utf8').trim().split('\n');
  const jwks = await startJwksServer(['rsaA']);
  const tracing =
    mode.exporter === 'none'
      ? undefined
      : await startTracing(
          {
            protocol: mode.exporter === 'http/json' ? 'http/json' : 'http/protobuf',
            serviceName: 'bench',
          },
          mode.exporter === 'drop'
            ? {
                export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
                shutdown: () => Promise.resolve(),
              }
            : undefined,
        );
  const service = createVerifierService(
    loadConfig({
      VERIFIER_ISSUER: ISSUER,
      VERIFIER_AUDIENCE: AUDIENCE,
      VERIFIER_JWKS_URI: jwks.url,
      VERIFIER_REQUIRED_SCOPES: 'secrets:read',
      VERIFIER_VERIFY_RATE: '1000000r/s',
      VERIFIER_VERIFY_BURST: '1000000',
    }),
    { logger: createLogger('warn'), defaultMetrics: false, tracing },
  );
  await service.start();
  const headers = mode.sampleEvery === undefined ? undefined : traceparents(mode.sampleEvery);
  const request = (i: number, token: string): VerifyRequest => ({
    authorization: `Bearer ${token}`,
    traceparent: headers?.[i & 1023],
  });

  /** CPU µs per decision over `count` decisions, the flush of their spans included. */
  async function measure(count: number, token: (i: number) => string): Promise<number> {
    const before = process.cpuUsage();
    for (let start = 0; start < count; start += CHUNK) {
      const pending: Promise<unknown>[] = [];
      for (let i = start; i < Math.min(count, start + CHUNK); i++) {
        const decision = service.authorize(request(i, token(i)));
        if (decision instanceof Promise) pending.push(decision);
      }
      await Promise.all(pending);
      await turn();
    }
    await tracing?.forceFlush();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / count;
  }

  const cachedToken = tokens[0]!;
  // Warm-up: the token cached, the code paths compiled, a few batches exported.
  await measure(cachedCalls / 4, () => cachedToken);
  const cached = await measure(cachedCalls, () => cachedToken);
  const fresh = tokens.slice(1);
  const half = Math.floor(fresh.length / 4);
  await measure(half, (i) => fresh[i]!);
  const distinct = await measure(fresh.length - half, (i) => fresh[half + i]!);
  await Promise.all([service.stop(0), tracing?.shutdown(), jwks.close()]);
  console.log(JSON.stringify({ cached, distinct }));
}

await main();
