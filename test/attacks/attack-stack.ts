// The real stack as the attack and chaos suites need it: canary secret values (so a leak is
// unambiguous), the verifier with its default checks (RFC 9068 `typ` included), a raw HTTP client that sends paths
// and duplicate headers exactly as written, a leak watch fed by every response, and every log.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../stack/ports.js';
import { verifierConfig } from '../../stack/service-env.js';
import { startStack, type Stack, type StackOptions } from '../../stack/start-stack.js';
import { createLeakWatch, type LeakWatch } from './leak-watch.js';

export interface Canaries {
  /** Every secret value NGINX may hand out. */
  readonly values: readonly string[];
  /** The set each client id gets (`default` for unknown ones). */
  readonly sets: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export interface RawRequest {
  readonly method?: string;
  /** Sent verbatim as the request target (no normalisation). */
  readonly path: string;
  /** A value array sends the header once per value. */
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  /** What the leak watch calls this request. */
  readonly label: string;
  /** True when a valid token for /secret was sent, so a secret in a 200 is earned. */
  readonly earned?: boolean;
}

export interface AttackStack {
  readonly stack: Stack;
  readonly canaries: Canaries;
  readonly watch: LeakWatch;
  /** Labels of requests answered with a 5xx. */
  readonly serverErrors: readonly string[];
  /** Sends one request to NGINX and records the answer (and any token sent) in the watch. */
  send(req: RawRequest): Promise<Answer>;
  /** Every log the stack wrote: service output plus NGINX's access and error logs. */
  readLogs(): Array<{ name: string; text: string }>;
  /** Sends SIGHUP to the NGINX master (graceful reload of config and secrets). */
  reloadNginx(): void;
  /** PID of the NGINX master, from its pid file. */
  nginxPid(): number;
  stop(): Promise<void>;
}

const CLIENTS = ['spa-demo', 'partner-app'];

function canarySecrets(): Canaries {
  const value = (what: string) => `sg-canary-${what}-${randomBytes(9).toString('hex')}`;
  const sets: Record<string, Record<string, string>> = {
    default: { 'x-api-key': value('default') },
  };
  for (const client of CLIENTS)
    sets[client] = {
      'x-api-key': value(client),
      'api-base': `https://api.example/${value('base')}`,
    };
  const values = Object.values(sets).flatMap((set) => Object.values(set));
  return { values, sets };
}

/** The verifier's configuration file as a suite may reshape it before the stack starts. */
export interface VerifierConfigFile {
  issuers: Array<Record<string, unknown>>;
  policies: Record<string, { issuers: string[]; scopes: string[] }>;
  cache?: Record<string, unknown>;
}

export interface AttackStackOptions extends StackOptions {
  /** Changes to the verifier's configuration (extra issuers, cache settings, tolerances). */
  readonly configure?: (config: VerifierConfigFile) => void;
  /** Named policies' sets, served at `/secret/<name>` (the secrets file's `policies`). */
  readonly policySets?: Record<string, { default: Record<string, string> }>;
}

/** Starts the stack with canary secrets and a strict-typ verifier; extra options pass through. */
export async function startAttackStack(options: AttackStackOptions = {}): Promise<AttackStack> {
  const dir = mkdtempSync(join(tmpdir(), 'sg-attacks-'));
  const canaries = canarySecrets();
  const { default: fallback, ...clients } = canaries.sets;
  const secretsFile = join(dir, 'secrets.json');
  const policies = options.policySets;
  writeFileSync(secretsFile, JSON.stringify({ default: fallback, clients, policies }), {
    mode: 0o600,
  });

  const idpPort = options.ports?.idp ?? (await freePort());
  const issuer = `http://127.0.0.1:${idpPort}`;
  const config = verifierConfig({
    issuer,
    jwksUri: `${issuer}/jwks`,
    audience: options.audience ?? 'secret-gate-api',
  }) as VerifierConfigFile;
  // No `requireTyp`: RFC 9068 `typ: at+jwt` is the default, and the typ attacks prove it.
  options.configure?.(config);
  const configFile = join(dir, 'verifier.json');
  writeFileSync(configFile, JSON.stringify(config));

  const stack = await startStack({
    ...options,
    ports: { ...options.ports, idp: idpPort },
    secretsFile,
    env: {
      ...options.env,
      // The suites send hundreds of distinct tokens from one address; the limits have a suite of
      // their own (rate-limits.test.ts).
      verifier: {
        VERIFIER_CONFIG: configFile,
        VERIFIER_VERIFY_RATE: '100000r/s',
        VERIFIER_VERIFY_BURST: '100000',
        ...options.env?.verifier,
      },
      nginx: {
        SG_SECRET_RATE: '100000r/s',
        SG_SECRET_BURST: '100000',
        ...options.env?.nginx,
      },
    },
  });
  const watch = createLeakWatch(canaries.values);
  const serverErrors: string[] = [];
  const gate = new URL(stack.urls.gate);
  // Paths relative to the NGINX prefix (nginx/templates/nginx.conf.template).
  const logDir = join(stack.files.nginxPrefix, 'logs');
  const pidFile = join(stack.files.nginxPrefix, 'run', 'nginx.pid');

  function send(req: RawRequest): Promise<Answer> {
    for (const value of [req.headers?.authorization ?? []].flat()) {
      const token = value.replace(/^\S+\s+/, '');
      watch.recordToken(token);
    }
    const tokenInPath = /[?&]access_token=([^&]+)/.exec(req.path)?.[1];
    if (tokenInPath) watch.recordToken(decodeURIComponent(tokenInPath));
    return new Promise((resolve, reject) => {
      const out = request({
        host: gate.hostname,
        port: gate.port,
        method: req.method ?? 'GET',
        path: req.path,
        agent: false,
      });
      for (const [name, value] of Object.entries(req.headers ?? {})) out.setHeader(name, value);
      out.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const answer = {
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          };
          if (answer.status >= 500) serverErrors.push(`${req.label}: ${answer.status}`);
          watch.recordResponse({
            label: req.label,
            status: answer.status,
            body: answer.body,
            earned: req.earned === true,
          });
          resolve(answer);
        });
        res.on('error', reject);
      });
      out.on('error', reject);
      out.end();
    });
  }

  function readLogs(): Array<{ name: string; text: string }> {
    const logs = Object.entries(stack.files.logs).map(([name, path]) => ({ name, path }));
    for (const file of safeList(logDir))
      logs.push({ name: `nginx/${file}`, path: join(logDir, file) });
    return logs.map(({ name, path }) => ({ name, text: safeRead(path) }));
  }

  const nginxPid = () => Number(readFileSync(pidFile, 'utf8').trim());

  return {
    stack,
    canaries,
    watch,
    serverErrors,
    send,
    readLogs,
    nginxPid,
    reloadNginx: () => process.kill(nginxPid(), 'SIGHUP'),
    async stop() {
      // SG_KEEP_LOGS=DIR keeps a copy of every log for a closer look after a red run.
      if (process.env.SG_KEEP_LOGS)
        for (const log of readLogs())
          writeFileSync(join(process.env.SG_KEEP_LOGS, log.name.replace('/', '-')), log.text);
      await stack.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).filter((f) => f.endsWith('.log'));
  } catch {
    return [];
  }
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
