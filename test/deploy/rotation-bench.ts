// Measures the two ways NGINX can pick up a rotated secrets file, so the choice in docs/deploy.md
// rests on numbers from this machine:
//   (a) per-request: njs reads and parses the file on every request (njs 0.7.9 starts a fresh VM
//       per request, so there is no cache to check against — the read is the change check);
//   (b) preload: `js_preload_object` parses it once per configuration; a watcher runs
//       `nginx -s reload` when the file changes.
// Prints throughput ratios (wrk) and the failures / mixed bodies seen while rotating under load.
// Then two figures the suites only bound loosely (they must not fail on a slow machine):
//   visible    through the real stack (npm start's), how long after a write of the secrets file
//              /secret serves the new set (the secret-set watcher's poll + NGINX's open_file_cache)
//   stop time  how long `docker stop` takes for each image as PID 1 without --init (when an engine
//              answers; the images are built as the container suites build them)
// Run: npm run bench:rotation [-- --seconds 5] [--connections 32] [--rotations 10]
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdtempSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../../stack/ports.js';
import { startStack } from '../../stack/start-stack.js';
import { IMAGES, buildImages, docker, missingEngine } from '../containers/engine.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    rotations: { type: 'string', default: '10' },
  },
});
const seconds = Number(args.seconds);
const connections = Number(args.connections);

const NJS = `import fs from 'fs';
function send(r, set) {
  r.headersOut['Content-Type'] = 'application/json';
  r.return(200, JSON.stringify(set));
}
function perRequest(r) {
  const all = JSON.parse(fs.readFileSync(r.variables.secrets_file, 'utf8'));
  send(r, all.default);
}
function readOnly(r) {
  r.headersOut['Content-Type'] = 'application/json';
  r.return(200, fs.readFileSync(r.variables.secrets_file, 'utf8'));
}
function preloaded(r) {
  send(r, secrets.default);
}
export default { perRequest, readOnly, preloaded };
`;

/** A secrets file whose two fields always carry the same generation number. */
function secretsFor(generation: number): string {
  return JSON.stringify({
    default: { 'x-api-key': `key-${generation}`, 'api-base': `https://api/${generation}` },
  });
}

function writeAtomically(path: string, text: string): void {
  writeFileSync(`${path}.next`, text);
  renameSync(`${path}.next`, path);
}

async function startNginx(dir: string, port: number, secretsFile: string) {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  writeFileSync(join(dir, 'gate.js'), NJS);
  writeFileSync(
    join(dir, 'nginx.conf'),
    `load_module /usr/lib/nginx/modules/ngx_http_js_module.so;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp-body;
  proxy_temp_path ${dir}/tmp-proxy;
  fastcgi_temp_path ${dir}/tmp-fastcgi;
  uwsgi_temp_path ${dir}/tmp-uwsgi;
  scgi_temp_path ${dir}/tmp-scgi;
  js_import gate from ${dir}/gate.js;
  js_preload_object secrets from ${secretsFile};
  server {
    listen 127.0.0.1:${port};
    set $secrets_file ${secretsFile};
    location /a { js_content gate.perRequest; }
    location /b { js_content gate.preloaded; }
    location /raw { js_content gate.readOnly; }
  }
}
`,
  );
  const conf = ['-p', dir, '-c', join(dir, 'nginx.conf')];
  const started = spawnSync('nginx', [...conf], { encoding: 'utf8' });
  if (started.status !== 0) throw new Error(`nginx did not start: ${started.stderr}`);
  await waitForOk(`http://127.0.0.1:${port}/b`);
  return {
    reload: () => spawnSync('nginx', [...conf, '-s', 'reload']),
    stop: () => spawnSync('nginx', [...conf, '-s', 'quit']),
  };
}

async function waitForOk(url: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} never answered 200`);
}

function wrkRate(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const wrk = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, url]);
    let out = '';
    wrk.stdout.on('data', (d: Buffer) => (out += d.toString()));
    wrk.on('error', reject);
    wrk.on('close', () => {
      const rate = /Requests\/sec:\s+([\d.]+)/.exec(out)?.[1];
      if (rate) resolve(Number(rate));
      else reject(new Error(`wrk said: ${out}`));
    });
  });
}

type Tally = {
  ok: number;
  failed: number;
  mixed: number;
  generations: Set<number>;
  why: Map<string, number>;
};

/** Keeps `connections` keep-alive clients busy on `url` until `until` resolves. */
async function steadyLoad(url: string, until: Promise<void>): Promise<Tally> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const tally: Tally = { ok: 0, failed: 0, mixed: 0, generations: new Set(), why: new Map() };
  const fail = (why: string) => {
    tally.failed++;
    tally.why.set(why, (tally.why.get(why) ?? 0) + 1);
  };
  let done = false;
  void until.then(() => (done = true));
  const one = () =>
    new Promise<void>((resolve) => {
      const req = request(url, { agent }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => {
          if (res.statusCode !== 200) fail(`status ${res.statusCode}`);
          else {
            const set = JSON.parse(body) as Record<string, string>;
            const a = Number(set['x-api-key']?.slice(4));
            const b = Number(set['api-base']?.split('/').pop());
            if (a !== b) tally.mixed++;
            tally.generations.add(a);
            tally.ok++;
          }
          resolve();
        });
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        fail(e.code ?? e.message);
        resolve();
      });
      req.end();
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (!done) await one();
    }),
  );
  agent.destroy();
  return tally;
}

async function rotateUnderLoad(
  url: string,
  secretsFile: string,
  afterWrite: () => void,
): Promise<Tally & { rotations: number }> {
  let rotations = 0;
  const rotating = (async () => {
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      await new Promise((r) => setTimeout(r, 250));
      writeAtomically(secretsFile, secretsFor(++rotations));
      afterWrite();
    }
  })();
  const tally = await steadyLoad(url, rotating);
  return { ...tally, rotations };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sg-rotation-bench-'));
  const secretsFile = join(dir, 'secrets.json');
  // Workers run as an unprivileged user when the bench runs as root: let them read the file.
  chmodSync(dir, 0o755);
  writeFileSync(secretsFile, secretsFor(0), { mode: 0o644 });
  const port = await freePort();
  const nginx = await startNginx(dir, port, secretsFile);
  try {
    const base = `http://127.0.0.1:${port}`;
    const rates = { a: [] as number[], b: [] as number[], raw: [] as number[] };
    for (let round = 0; round < 2; round++) {
      rates.a.push(await wrkRate(`${base}/a`));
      rates.b.push(await wrkRate(`${base}/b`));
      rates.raw.push(await wrkRate(`${base}/raw`));
    }
    const best = (xs: number[]) => Math.max(...xs);
    console.log(`throughput, requests/s (best of 2, ${connections} connections, 1 nginx worker):`);
    console.log(`  (a) per-request read  ${best(rates.a).toFixed(0)}`);
    console.log(`  (b) js_preload_object ${best(rates.b).toFixed(0)}`);
    console.log(`  (a) without the parse ${best(rates.raw).toFixed(0)}`);
    console.log(`  ratio a/b = ${(best(rates.a) / best(rates.b)).toFixed(2)}`);
    const extraMicros = 1e6 / best(rates.a) - 1e6 / best(rates.b);
    console.log(`  (a) costs ${extraMicros.toFixed(0)} µs of NGINX CPU more per request than (b)`);

    // Keep-alive clients, as browsers are: a reload closes their idle connections under them.
    const a = await rotateUnderLoad(`${base}/a`, secretsFile, () => {});
    const b = await rotateUnderLoad(`${base}/b`, secretsFile, () => nginx.reload());
    const show = (name: string, t: Tally & { rotations: number }) =>
      console.log(
        `  ${name}: ${t.ok} ok, ${t.failed} failed, ${t.mixed} mixed, ` +
          `${t.generations.size} generations seen over ${t.rotations} rotations` +
          (t.failed ? ` (${[...t.why].map(([k, n]) => `${k}: ${n}`).join(', ')})` : ''),
      );
    console.log('rotation every 250 ms under keep-alive load:');
    show('(a) per-request read ', a);
    show('(b) preload + reload ', b);
  } finally {
    nginx.stop();
    const errors = readFileSync(join(dir, 'logs', 'error.log'), 'utf8')
      .split('\n')
      .filter((l) => /\[(error|crit|alert|emerg)\]/.test(l));
    if (errors.length) console.log(`nginx errors:\n${errors.slice(0, 5).join('\n')}`);
    rmSync(dir, { recursive: true, force: true });
  }
}

const spread = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `min ${at(0).toFixed(0)}, median ${at(0.5).toFixed(0)}, max ${at(1).toFixed(0)} ms`;
};

/** Through the stack: write generation n, then poll /secret until it serves it. */
async function visibleRow(rotations: number): Promise<void> {
  const stack = await startStack();
  try {
    const token = await stack.mintToken({ clientId: 'spa-demo' });
    const took: number[] = [];
    for (let n = 1; n <= rotations; n++) {
      const set = { 'x-api-key': `rotated-g${n}` };
      writeFileSync(
        stack.files.secrets,
        JSON.stringify({ default: set, clients: { 'spa-demo': set } }),
      );
      const started = performance.now();
      for (;;) {
        const answer = await fetch(stack.urls.secret, {
          headers: { authorization: `Bearer ${token}` },
        });
        if (answer.ok && (await answer.text()).includes(`rotated-g${n}`)) break;
        if (performance.now() - started > 30_000) throw new Error(`generation ${n} never served`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      took.push(performance.now() - started);
    }
    console.log(
      `visible: a rotated secrets file served after ${spread(took)} (${rotations} rotations)`,
    );
  } finally {
    await stack.stop();
  }
}

/** `docker stop` of each image running alone, as PID 1 without --init. */
async function stopTimeRow(): Promise<void> {
  const noEngine = await missingEngine();
  if (noEngine !== undefined) {
    console.log(`stop time: not measured (no container engine: ${noEngine})`);
    return;
  }
  await buildImages();
  const files = mkdtempSync(join(tmpdir(), 'sg-stop-time-'));
  chmodSync(files, 0o755);
  writeFileSync(join(files, 'secrets.json'), '{"default":{}}', { mode: 0o644 });
  const runs: Record<string, string[]> = {
    idp: [IMAGES.idp],
    verifier: [
      '-e',
      'VERIFIER_ISSUER=https://idp.test',
      '-e',
      'VERIFIER_AUDIENCE=api',
      IMAGES.verifier,
    ],
    nginx: ['--tmpfs', '/tmp', '-v', `${files}:/etc/secret-gate:ro`, IMAGES.nginx],
  };
  const took: string[] = [];
  for (const [name, args] of Object.entries(runs)) {
    const id = await docker('run', '-d', '--rm', '--read-only', ...args);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const started = performance.now();
    await docker('stop', '-t', '30', id);
    took.push(`${name} ${(performance.now() - started).toFixed(0)} ms`);
  }
  rmSync(files, { recursive: true, force: true });
  console.log(`stop time (docker stop, no --init): ${took.join(', ')}`);
}

await main();
await visibleRow(Number(args.rotations));
await stopTimeRow();
