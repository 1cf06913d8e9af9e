// `npm run stress:policy-reload`: hot reload under load, the long run (issue 36). `npm start`'s stack
// with a policy file; keep-alive clients ask for /secret with a token every version allows, a probe
// with one only the looser versions allow, while the policy file is replaced ten times per round
// (stricter, broken, looser, a change only a restart applies). Exits 1 when a request of the allowed
// token failed or a probe was answered by a version older than the acknowledged one plus the bound.
// Options: --hold SECONDS (each version, default 6), --clients N (default 8), --rounds N (default 3),
// --users N (the study's locust users beside them, default 500).
import { runReloadUnderLoad } from '../test/support/policy-reload-load.js';

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0)
    throw new TypeError(`${name} must be a positive number`);
  return value;
}

const report = await runReloadUnderLoad({
  holdMs: option('--hold', 6) * 1000,
  clients: option('--clients', 8),
  rounds: option('--rounds', 3),
  locustUsers: option('--users', 500),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(
  [
    `requests of the allowed token: ${report.requests}, failed: ${report.failures.length}`,
    `locust (the study's scenario): ${report.locust?.requests ?? 0} requests, ${report.locust?.failures ?? 0} failed`,
    `probe requests: ${report.probes}, answered by a version older than the bound allows: ${report.stale.length}`,
    `versions applied: ${report.applied}, refused by the verifier: ${report.refusedByVerifier}`,
    ...report.failures.slice(0, 10).map((failure) => `failure: ${JSON.stringify(failure)}`),
    ...report.stale.slice(0, 10).map((stale) => `stale: ${JSON.stringify(stale)}`),
  ].join('\n') + '\n',
);
process.exit(
  report.failures.length + report.stale.length + (report.locust?.failures ?? 0) > 0 ? 1 : 0,
);
