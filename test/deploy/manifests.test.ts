// The Kubernetes manifests as a specification: the pod's security and sizing invariants, and
// agreement with the code they deploy — ports, probe paths, env names and mount paths are read
// from the verifier's config module, the NGINX templates and the stress profiles, never copied.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENVIRONMENT, loadConfig } from '../../verifier/src/config/load.js';
import { OTEL_VARIABLES, readTracingSettings } from '../../verifier/src/tracing/otel-env.js';
import {
  nginxPaths,
  nginxDefaults,
  nginxVariables,
  referencedNames,
  renderNginxConfig,
  renderScript,
} from '../../stack/nginx/render.js';
import { secretSetsScript } from '../../stack/nginx/secret-sets-watcher.js';
import { findNginx } from '../../stack/prerequisites.js';
import { PROFILES } from '../../perf/limits.js';
import { REPO_ROOT } from '../../stack/start-stack.js';
import { freePort } from '../../stack/ports.js';
import {
  parseYaml,
  podSpec,
  readYamlDocuments,
  renderKustomization,
  type Container,
  type Manifest,
  type PodSpec,
  renderWithPolicyFile,
} from './kustomize.js';

const KUBERNETES = join(REPO_ROOT, 'deploy', 'kubernetes');
const BUILDS = {
  base: join(KUBERNETES, 'base'),
  'example overlay': join(KUBERNETES, 'overlays', 'example'),
};

/** Every SG_ name any NGINX template references, read from the templates themselves. */
function templateVariables(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.template')) {
        for (const name of referencedNames(readFileSync(path, 'utf8')))
          if (name.startsWith('SG_')) names.add(name);
      }
    }
  };
  walk(nginxPaths.templatesDir);
  // The render script writes /config.json from some; the secret-set watcher beside NGINX reads
  // the secrets file's settings.
  const scripts = readFileSync(renderScript, 'utf8') + readFileSync(secretSetsScript, 'utf8');
  // SG_EDGE_KEY_FILE is set by whoever makes the edge key (compose, the runner): the pod reaches
  // its verifier on a unix socket, which needs none.
  const scriptOnly = ['SG_SECRETS_POLL', 'SG_JS_RUNTIME', 'SG_EDGE_KEY_FILE'];
  for (const m of scripts.matchAll(/\$\{?(SG_[A-Z_]+)/g))
    if (!scriptOnly.includes(m[1] as string)) names.add(m[1] as string);
  return names;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry.name) ? [path] : [];
  });
}

/** `250m` → 0.25, `1` → 1. */
function cpu(quantity: string | undefined): number {
  if (quantity === undefined) return Number.NaN;
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
}
/** `64Mi` → 64, `1Gi` → 1024 (MiB). */
function mebibytes(quantity: string | undefined): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity ?? '');
  if (!match) return Number.NaN;
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

function within(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith('/');
}

describe('every manifest file', () => {
  it.each(yamlFiles(KUBERNETES).map((file) => [relative(KUBERNETES, file), file]))(
    '%s parses as YAML',
    (_, file) => {
      const documents = readYamlDocuments(file);
      expect(documents.length).toBeGreaterThan(0);
      for (const doc of documents)
        expect(doc).toMatchObject({ apiVersion: expect.any(String), kind: expect.any(String) });
    },
  );
});

describe.each(Object.entries(BUILDS))('the %s', (_, dir) => {
  const manifests = renderKustomization(dir);
  const one = (kind: string): Manifest => {
    const found = manifests.filter((m) => m.kind === kind);
    expect(found, kind).toHaveLength(1);
    return found[0] as Manifest;
  };
  const configMap = (name: string) => {
    const found = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === name);
    if (!found) throw new Error(`no ConfigMap ${name}`);
    return found.data as Record<string, string>;
  };
  const deployment = one('Deployment');
  const pod: PodSpec = podSpec(deployment);
  const container = (name: string): Container => {
    const found = pod.containers.find((c) => c.name === name);
    if (!found) throw new Error(`no container ${name}`);
    return found;
  };
  const nginx = container('nginx');
  const verifier = container('verifier');
  const nginxRef = nginx.envFrom?.[0]?.configMapRef?.name ?? '';
  const nginxEnv = configMap(nginxRef);
  // Kubernetes lays the container's `env` over its `envFrom`.
  const verifierEnv = {
    ...configMap(verifier.envFrom?.[0]?.configMapRef?.name ?? ''),
    ...Object.fromEntries((verifier.env ?? []).map((e) => [e.name, e.value ?? ''])),
  };
  const verifierFromEnvFile = configMap(verifier.envFrom?.[0]?.configMapRef?.name ?? '');
  const podLabels = (
    deployment.spec as { template: { metadata: { labels: Record<string, string> } } }
  ).template.metadata.labels;
  const mountOf = (c: Container, volume: string) => c.volumeMounts?.find((m) => m.name === volume);
  const volume = (name: string) => pod.volumes?.find((v) => v.name === name);
  // The port the image listens on unless nginx.env says otherwise (nginx/settings.env).
  const listenPort = Number(/(\d+)$/.exec({ ...nginxDefaults(), ...nginxEnv }.SG_LISTEN)?.[1]);

  it('runs NGINX and the verifier side by side in one pod, and nothing else', () => {
    expect(pod.containers.map((c) => c.name).sort()).toEqual(['nginx', 'verifier']);
  });

  it('runs the pod as a non-root user under the RuntimeDefault seccomp profile, without a service account token', () => {
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.securityContext?.runAsUser).not.toBe(0);
    expect(pod.automountServiceAccountToken).toBe(false);
  });

  it.each(['nginx', 'verifier'])(
    'locks the %s container down: read-only root, no privilege escalation, every capability dropped',
    (name) => {
      const { securityContext } = container(name);
      expect(securityContext).toMatchObject({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      expect(securityContext).not.toHaveProperty('privileged', true);
      expect(securityContext?.capabilities).not.toHaveProperty('add');
    },
  );

  it('gives each container the CPU of the tight stress profile, requested and limited', () => {
    for (const c of pod.containers) {
      expect(cpu(c.resources?.requests?.cpu), c.name).toBe(PROFILES.tight.cpu);
      expect(cpu(c.resources?.limits?.cpu), c.name).toBe(PROFILES.tight.cpu);
    }
  });

  it('gives NGINX the memory of the tight profile plus its memory directory, the verifier at least the profile, requests never above limits', () => {
    // tmpfs pages count against the container that writes them: the edge cache and set files.
    const memoryDir = volume(
      nginx.volumeMounts?.find((m) => m.mountPath === nginxEnv.SG_MEMORY_DIR)?.name ?? '',
    );
    expect(mebibytes(nginx.resources?.limits?.memory)).toBe(
      PROFILES.tight.memoryMb + mebibytes(memoryDir?.emptyDir?.sizeLimit),
    );
    expect(mebibytes(verifier.resources?.requests?.memory)).toBeGreaterThanOrEqual(
      PROFILES.tight.memoryMb,
    );
    for (const c of pod.containers) {
      expect(mebibytes(c.resources?.requests?.memory)).toBeLessThanOrEqual(
        mebibytes(c.resources?.limits?.memory),
      );
    }
  });

  it('exposes NGINX at the port its SG_LISTEN names; the verifier only its metrics listener, never /verify', () => {
    expect(nginx.ports).toEqual([{ name: 'http', containerPort: listenPort, protocol: 'TCP' }]);
    const config = loadConfig({
      ...verifierEnv,
      VERIFIER_CONFIG: undefined,
      VERIFIER_ISSUER: 'https://idp.test',
      VERIFIER_AUDIENCE: 'api',
    });
    expect(config.listen.kind).toBe('unix');
    expect(config.metricsListen).toMatchObject({ kind: 'tcp' });
    const metricsPort = config.metricsListen?.kind === 'tcp' ? config.metricsListen.port : -1;
    expect(verifier.ports).toEqual([
      { name: 'metrics', containerPort: metricsPort, protocol: 'TCP' },
    ]);
  });

  it('probes NGINX on /hello, a location the site template defines without auth', () => {
    const site = readFileSync(
      join(nginxPaths.templatesDir, 'conf.d', 'default.conf.template'),
      'utf8',
    );
    const hello = /location = (\/hello) \{([^}]*)\}/.exec(site);
    expect(hello?.[2]).not.toContain('protect.conf');
    for (const probe of [nginx.readinessProbe, nginx.livenessProbe]) {
      expect(probe?.httpGet).toEqual({ path: hello?.[1], port: 'http' });
    }
  });

  it('probes the verifier on /readyz and /healthz with the image probe script', () => {
    expect(verifier.readinessProbe?.exec?.command).toEqual([
      'node',
      'verifier/dist/probe.js',
      '/readyz',
    ]);
    expect(verifier.livenessProbe?.exec?.command).toEqual([
      'node',
      'verifier/dist/probe.js',
      '/healthz',
    ]);
  });

  it('sets, over the image defaults, every SG_ variable the NGINX templates and the secret-set watcher reference, and no other', () => {
    const set = Object.keys(nginxEnv).filter((name) => name.startsWith('SG_'));
    const effective = Object.keys({ ...nginxDefaults(), ...nginxEnv }).filter((name) =>
      name.startsWith('SG_'),
    );
    expect(new Set(effective)).toEqual(templateVariables());
    expect(new Set(effective)).toEqual(new Set(nginxVariables.map((v) => v.name)));
    expect(set.filter((name) => !effective.includes(name))).toEqual([]);
  });

  it('lists in nginx.env only the SG_ settings that differ from nginx/settings.env', () => {
    const defaults: Record<string, string> = nginxDefaults();
    const repeated = Object.entries(nginxEnv).filter(
      ([name, value]) => name.startsWith('SG_') && defaults[name] === value,
    );
    expect(repeated).toEqual([]);
  });

  it("takes the verifier's settings from verifier.env, except where it listens and its file", () => {
    expect(verifierFromEnvFile).toMatchObject({ VERIFIER_METRICS_LISTEN: '0.0.0.0:9464' });
    // The Deployment's `env` would win over these silently: they must never be in the file.
    expect(Object.keys(verifierFromEnvFile)).not.toContain('VERIFIER_LISTEN');
    expect(Object.keys(verifierFromEnvFile)).not.toContain('VERIFIER_CONFIG');
    expect((verifier.env ?? []).map((e) => e.name).sort()).toEqual([
      'VERIFIER_CONFIG',
      'VERIFIER_LISTEN',
    ]);
  });

  it('gives the verifier only VERIFIER_ variables its configuration module accepts', () => {
    expect(Object.keys(verifierEnv).length).toBeGreaterThan(0);
    const known = ENVIRONMENT.map((row) => row.env);
    for (const name of Object.keys(verifierEnv)) expect(known).toContain(name);
  });

  it('connects NGINX to the verifier through a socket in an emptyDir both containers mount at the same path', () => {
    expect(nginxEnv.SG_VERIFIER_ADDR).toBe(verifierEnv.VERIFIER_LISTEN);
    const socket = (verifierEnv.VERIFIER_LISTEN ?? '').replace(/^unix:/, '');
    const mount = verifier.volumeMounts?.find((m) => within(m.mountPath, socket));
    expect(mount, 'socket mount').toBeDefined();
    expect(volume(mount?.name ?? '')?.emptyDir).toBeDefined();
    expect(mountOf(nginx, mount?.name ?? '')?.mountPath).toBe(mount?.mountPath);
  });

  it('mounts the secrets file read-only where SG_SECRETS_FILE points, as a directory so rotations arrive', () => {
    const file = nginxEnv.SG_SECRETS_FILE ?? '';
    const mount = nginx.volumeMounts?.find((m) => m.mountPath === dirname(file));
    expect(mount).toMatchObject({ readOnly: true });
    expect(mount).not.toHaveProperty('subPath');
    expect(volume(mount?.name ?? '')?.secret?.secretName).toBe('secret-gate-secrets');
  });

  it("lets only the pod's own users read the Secret files (mode 0440, group = fsGroup), each Secret mounted only where it is read", () => {
    const secrets = (pod.volumes ?? []).filter((v) => v.secret);
    expect(secrets.length).toBeGreaterThan(0);
    for (const v of secrets)
      expect((v.secret as { defaultMode?: number }).defaultMode, v.name).toBe(0o440);
    expect(pod.securityContext?.fsGroup).toBeGreaterThan(0);
    const mountedIn = (name: string) =>
      [...(pod.initContainers ?? []), ...pod.containers]
        .filter((c) => c.volumeMounts?.some((m) => m.name === name))
        .map((c) => c.name);
    expect(mountedIn('secrets')).toEqual(['nginx']);
    for (const name of ['cloudfront-key', 'introspection-client'])
      expect(mountedIn(name), name).toEqual(['verifier']);
  });

  it('runs NGINX and the verifier as two users that share only the socket group (the fsGroup)', () => {
    const userOf = (c: Container) => ({
      uid: c.securityContext?.runAsUser,
      gid: c.securityContext?.runAsGroup,
    });
    const fsGroup = pod.securityContext?.fsGroup;
    expect(userOf(nginx).uid).toBeGreaterThan(0);
    expect(userOf(verifier).uid).toBeGreaterThan(0);
    expect(userOf(nginx).uid).not.toBe(userOf(verifier).uid);
    // The verifier creates its socket with the socket group; NGINX holds that group through fsGroup.
    expect(userOf(verifier).gid).toBe(fsGroup);
    expect(userOf(nginx).gid).not.toBe(fsGroup);
    for (const init of pod.initContainers ?? [])
      expect(userOf(init), init.name).toEqual(userOf(verifier));
  });

  it("keeps the socket in a directory of the socket group only (0770), made by an init container as the verifier's user", () => {
    const socketDir = dirname((verifierEnv.VERIFIER_LISTEN ?? '').replace(/^unix:/, ''));
    const init = pod.initContainers?.find((c) => c.name === 'socket-dir');
    const command = init?.command ?? [];
    expect(command.at(-1)).toBe(socketDir);
    expect(command.join(' ')).toContain('0o770');
    const mount = init?.volumeMounts?.[0];
    expect(within(mount?.mountPath ?? '', socketDir)).toBe(true);
    expect(mountOf(verifier, mount?.name ?? '')?.mountPath).toBe(mount?.mountPath);
    expect(init?.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
  });

  it("keeps NGINX's memory directory (edge cache, per-set files) in a Memory emptyDir of the NGINX container only, sized for the edge cache", () => {
    const memoryDir = nginxEnv.SG_MEMORY_DIR ?? '';
    const mount = nginx.volumeMounts?.find((m) => m.mountPath === memoryDir);
    expect(mount, 'memory dir mount').toBeDefined();
    const emptyDir = volume(mount?.name ?? '')?.emptyDir;
    expect(emptyDir?.medium).toBe('Memory');
    // Never the pod-wide /dev/shm, which the verifier shares.
    expect(memoryDir.startsWith('/dev/shm')).toBe(false);
    for (const c of [...(pod.initContainers ?? []), verifier])
      expect(
        c.volumeMounts?.some((m) => m.name === mount?.name),
        c.name,
      ).toBe(false);
    const tunables = readFileSync(join(nginxPaths.templatesDir, 'tunables.conf.template'), 'utf8');
    const maxSize = Number(/max_size=(\d+)m/.exec(tunables)?.[1]);
    expect(maxSize).toBeGreaterThan(0);
    // The cache's max_size plus room for set files and the cache manager's lag.
    expect(mebibytes(emptyDir?.sizeLimit)).toBeGreaterThanOrEqual(maxSize + 4);
  });

  it('never mounts a Secret or ConfigMap by subPath (a subPath mount never sees an update)', () => {
    for (const c of pod.containers) {
      for (const m of c.volumeMounts ?? [])
        expect(m.subPath, `${c.name}:${m.mountPath}`).toBeUndefined();
    }
  });

  it('makes writable only emptyDirs: the NGINX prefix (rendered config, pid, temp files), the socket', () => {
    const writable = nginx.volumeMounts?.filter((m) => !m.readOnly) ?? [];
    for (const m of [...writable, ...(verifier.volumeMounts?.filter((m) => !m.readOnly) ?? [])]) {
      expect(volume(m.name)?.emptyDir, m.mountPath).toBeDefined();
    }
    const writablePaths = writable.map((m) => m.mountPath);
    expect(writablePaths).toContain(nginxEnv.NGINX_ENVSUBST_OUTPUT_DIR);
  });

  it('starts NGINX on the configuration the image renders from nginx.conf.template into the writable dir', () => {
    expect(existsSync(join(nginxPaths.templatesDir, 'nginx.conf.template'))).toBe(true);
    const args = nginx.args ?? [];
    expect(args[0]).toBe('nginx');
    expect(args[args.indexOf('-c') + 1]).toBe(`${nginxEnv.NGINX_ENVSUBST_OUTPUT_DIR}/nginx.conf`);
    // Every path in the rendered configuration is relative to the prefix.
    expect(args[args.indexOf('-p') + 1]).toBe(nginxEnv.NGINX_ENVSUBST_OUTPUT_DIR);
    expect(nginxEnv.NGINX_ENVSUBST_FILTER).toBe('^SG_');
  });

  it('renders, from its values, a configuration `nginx -t` accepts (container paths mapped to local ones)', async () => {
    const { binary, njsModule } = await findNginx();
    const scratch = mkdtempSync(join(tmpdir(), 'sg-nginx-t-'));
    try {
      mkdirSync(join(scratch, 'html'));
      writeFileSync(join(scratch, 'secrets.json'), '{"default":{}}');
      // The pod's policy file, from its ConfigMap, where NGINX reads its named sets.
      writeFileSync(
        join(scratch, 'verifier.json'),
        configMap('secret-gate-verifier')['verifier.json'] ?? '',
      );
      const paths: Record<string, string> = {
        SG_SPA_ROOT: join(scratch, 'html'),
        SG_SECRETS_FILE: join(scratch, 'secrets.json'),
        SG_POLICY_FILE: join(scratch, 'verifier.json'),
        // The pod's memory volume; the renderer creates it exclusively (0700).
        SG_MEMORY_DIR: join(scratch, 'memory'),
      };
      const prefix = join(scratch, 'prefix');
      const { confPath } = await renderNginxConfig({
        templatesDir: nginxPaths.templatesDir,
        outDir: prefix,
        env: { ...nginxEnv, ...paths },
        modulesDir: dirname(njsModule),
      });
      const test = spawnSync(
        binary,
        ['-t', '-q', '-p', prefix, '-c', confPath, '-e', join(prefix, 'logs', 'error.log')],
        {
          encoding: 'utf8',
        },
      );
      expect(test.stderr).toBe('');
      expect(test.status).toBe(0);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('mounts the verifier config read-only where VERIFIER_CONFIG points', () => {
    const file = verifierEnv.VERIFIER_CONFIG ?? '';
    const mount = verifier.volumeMounts?.find((m) => m.mountPath === dirname(file));
    expect(mount).toMatchObject({ readOnly: true });
    const source = volume(mount?.name ?? '')?.configMap?.name ?? '';
    expect(Object.keys(configMap(source))).toContain(file.slice(dirname(file).length + 1));
  });

  it("has NGINX take its named sets from the verifier's own policy file, mounted read-only at the same path, never from a second list", () => {
    const file = verifierEnv.VERIFIER_CONFIG ?? '';
    expect(nginxEnv.SG_POLICY_FILE).toBe(file);
    const nginxMount = nginx.volumeMounts?.find((m) => m.mountPath === dirname(file));
    const verifierMount = verifier.volumeMounts?.find((m) => m.mountPath === dirname(file));
    expect(nginxMount).toMatchObject({ name: verifierMount?.name, readOnly: true });
    expect(nginxMount).not.toHaveProperty('subPath');
    expect(volume(nginxMount?.name ?? '')?.configMap?.name).toBe('secret-gate-verifier');
    expect({ ...nginxDefaults(), ...nginxEnv }.SG_SPA_SECRET_SETS).toBe('');
  });

  it('hands the verifier a configuration its own loader accepts, CloudFront key path inside the key mount', () => {
    const configText = configMap(
      volume(verifier.volumeMounts?.find((m) => m.name === 'verifier-config')?.name ?? '')
        ?.configMap?.name ?? '',
    )['verifier.json'] as string;
    const keyMount = mountOf(verifier, 'cloudfront-key');
    expect(keyMount).toMatchObject({ readOnly: true });
    expect(volume('cloudfront-key')?.secret?.secretName).toBe('secret-gate-cloudfront');
    const keyFiles = [...configText.matchAll(/"privateKeyFile":\s*"([^"]+)"/g)].map(
      (m) => m[1] as string,
    );
    for (const keyFile of keyFiles)
      expect(within(keyMount?.mountPath ?? '/nowhere', keyFile), keyFile).toBe(true);

    // Loaded by the verifier's own code, with a real key where the Secret would put one.
    const scratch = mkdtempSync(join(tmpdir(), 'sg-manifests-'));
    try {
      const key = join(scratch, 'private-key.pem');
      writeFileSync(
        key,
        generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
          type: 'pkcs8',
          format: 'pem',
        }),
      );
      const text = keyFiles.reduce((t, path) => t.replaceAll(path, key), configText);
      // The key file is read through the same reader, after the document validated.
      const config = loadConfig(verifierEnv, (path) => {
        expect([verifierEnv.VERIFIER_CONFIG, key]).toContain(path);
        return path === key ? readFileSync(key, 'utf8') : text;
      });
      expect([...config.policies.keys()]).toContain('secret');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('routes the Service, PodDisruptionBudget, autoscaler and NetworkPolicy to these pods', () => {
    const service = one('Service').spec as {
      selector: Record<string, string>;
      ports: { targetPort: string }[];
    };
    const pdb = one('PodDisruptionBudget').spec as {
      selector: { matchLabels: Record<string, string> };
    };
    const policy = one('NetworkPolicy').spec as {
      podSelector: { matchLabels: Record<string, string> };
    };
    for (const selector of [
      service.selector,
      pdb.selector.matchLabels,
      policy.podSelector.matchLabels,
    ]) {
      expect(podLabels).toMatchObject(selector);
    }
    expect(service.ports.map((p) => p.targetPort)).toEqual(['http']);
    const hpa = one('HorizontalPodAutoscaler').spec as Record<string, unknown>;
    expect(hpa.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deployment.metadata.name,
    });
    expect(hpa.metrics).toEqual([
      {
        type: 'Resource',
        resource: {
          name: 'cpu',
          target: { type: 'Utilization', averageUtilization: expect.any(Number) },
        },
      },
    ]);
    expect(hpa.minReplicas as number).toBeGreaterThanOrEqual(2);
  });

  it('keeps a pod available through voluntary disruptions and rolls upgrades without losing capacity', () => {
    expect(one('PodDisruptionBudget').spec).toMatchObject({ maxUnavailable: 1 });
    expect(deployment.spec).toMatchObject({ strategy: { rollingUpdate: { maxUnavailable: 0 } } });
    expect((deployment.spec as { replicas: number }).replicas).toBeGreaterThanOrEqual(2);
  });

  type Peer = {
    namespaceSelector?: { matchLabels: Record<string, string> };
    podSelector?: unknown;
    ipBlock?: { cidr: string; except?: string[] };
  };
  type Rule = { from?: Peer[]; to?: Peer[]; ports: { port: string | number; protocol: string }[] };
  const networkPolicy = () =>
    one('NetworkPolicy').spec as { policyTypes: string[]; ingress: Rule[]; egress: Rule[] };
  const namespaces = (peers: Peer[] | undefined) =>
    (peers ?? []).map((peer) => peer.namespaceSelector?.matchLabels['kubernetes.io/metadata.name']);

  it('admits NGINX traffic from the ingress controller only, and metrics from the monitoring namespace only', () => {
    const spec = networkPolicy();
    expect(spec.policyTypes).toContain('Ingress');
    expect(spec.ingress).toHaveLength(2);
    const [web, scrape] = spec.ingress as [Rule, Rule];
    expect(web.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(namespaces(web.from)).toEqual(['ingress-nginx']);
    expect(scrape.ports).toEqual([{ port: 'metrics', protocol: 'TCP' }]);
    expect(namespaces(scrape.from)).toEqual(['monitoring']);
    // A rule without `from` (or a podSelector kustomize's labels would rewrite) admits the world.
    for (const rule of spec.ingress)
      for (const peer of rule.from ?? []) expect(peer.podSelector).toBeUndefined();
  });

  it('limits egress to DNS and HTTPS to public addresses (the IdP), never the cluster or cloud metadata', () => {
    const spec = networkPolicy();
    expect(spec.policyTypes).toContain('Egress');
    const [dns, idp, ...rest] = spec.egress as [Rule, Rule];
    expect(rest).toEqual([]);
    expect(namespaces(dns.to)).toEqual(['kube-system']);
    expect(dns.ports).toEqual([
      { port: 53, protocol: 'UDP' },
      { port: 53, protocol: 'TCP' },
    ]);
    expect(idp.ports).toEqual([{ port: 443, protocol: 'TCP' }]);
    const except = idp.to?.[0]?.ipBlock?.except ?? [];
    for (const range of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'])
      expect(except).toContain(range);
  });

  it('lets an introspection issuer read its client secret from a mounted Secret, never the ConfigMap', () => {
    const mount = mountOf(verifier, 'introspection-client');
    expect(mount).toMatchObject({ readOnly: true });
    expect(volume('introspection-client')?.secret).toMatchObject({
      secretName: 'secret-gate-introspection',
      optional: true,
    });
    for (const manifest of manifests.filter((m) => m.kind === 'ConfigMap'))
      expect(JSON.stringify(manifest.data ?? {})).not.toMatch(/"clientSecret":\s*"/);
    // The documented spelling, loaded by the verifier's own code from where the Secret lands.
    const secretFile = `${mount?.mountPath ?? '/nowhere'}/client-secret`;
    const document = {
      issuers: [
        {
          type: 'introspection',
          issuer: 'https://login.example.com',
          endpoint: 'https://login.example.com/introspect',
          clientId: 'secret-gate',
          clientSecret: { file: secretFile },
          audience: 'secret-gate-api',
        },
      ],
      policies: { secret: { issuers: ['https://login.example.com'] } },
    };
    const config = loadConfig(verifierEnv, (path) =>
      path === secretFile ? 'from-the-secret\n' : JSON.stringify(document),
    );
    expect(config.issuers.get('https://login.example.com')).toMatchObject({
      clientSecret: 'from-the-secret',
    });
  });
});

describe('the example overlay', () => {
  const manifests = renderKustomization(BUILDS['example overlay']);

  it('generates secret-gate-secrets under a stable name, in the shape NGINX reads', () => {
    const kustomization = readYamlDocuments(
      join(BUILDS['example overlay'], 'kustomization.yaml'),
    )[0] as {
      secretGenerator: { name: string; options?: { disableNameSuffixHash?: boolean } }[];
    };
    expect(
      kustomization.secretGenerator.find((g) => g.name === 'secret-gate-secrets')?.options
        ?.disableNameSuffixHash,
    ).toBe(true);
    const secret = manifests.find(
      (m) => m.kind === 'Secret' && m.metadata.name === 'secret-gate-secrets',
    );
    const base = renderKustomization(BUILDS.base);
    const file =
      (base.find((m) => m.metadata.name === 'secret-gate-nginx')?.data as Record<string, string>)
        .SG_SECRETS_FILE ?? '';
    const json = JSON.parse(
      (secret?.stringData as Record<string, string>)[file.split('/').pop() ?? ''] ?? 'null',
    ) as unknown;
    expect(json).toMatchObject({ default: expect.any(Object), clients: expect.any(Object) });
  });

  it('pins both images and puts everything in its namespace', () => {
    const images = podSpec(
      manifests.find((m) => m.kind === 'Deployment') as Manifest,
    ).containers.map((c) => c.image);
    for (const image of images) expect(image).toMatch(/^registry\.example\.com\/.+:\d+\.\d+\.\d+$/);
    for (const m of manifests.filter((m) => m.kind !== 'Namespace'))
      expect(m.metadata.namespace).toBe('secret-gate');
  });
});

describe('the tracing overlay (docs/tracing.md)', () => {
  /** The pod's variables (NGINX's and the verifier's ConfigMaps) and its NetworkPolicy's egress. */
  const read = (dir: string) => {
    const manifests = renderKustomization(dir);
    const pod = podSpec(manifests.find((m) => m.kind === 'Deployment') as Manifest);
    const env = (container: string) => {
      const name = pod.containers.find((c) => c.name === container)?.envFrom?.[0]?.configMapRef
        ?.name;
      const map = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === name);
      return (map?.data ?? {}) as Record<string, string>;
    };
    const policy = manifests.find((m) => m.kind === 'NetworkPolicy')?.spec as {
      egress: unknown[];
    };
    return { nginx: env('nginx'), verifier: env('verifier'), egress: policy.egress };
  };
  const example = read(BUILDS['example overlay']);
  const tracing = read(join(KUBERNETES, 'overlays', 'tracing'));
  const endpoint = new URL(tracing.verifier.OTEL_EXPORTER_OTLP_ENDPOINT ?? '');

  it("turns the verifier's traces on with the specification's variables, its other settings the example's", () => {
    expect(readTracingSettings(tracing.verifier)).toEqual({
      protocol: 'http/protobuf',
      serviceName: 'secret-gate-verifier',
    });
    const added = Object.keys(tracing.verifier).filter((name) => !(name in example.verifier));
    expect(added.length).toBeGreaterThan(0);
    for (const name of added) expect(OTEL_VARIABLES).toContain(name);
    expect(tracing.verifier).toMatchObject(example.verifier);
  });

  it('turns the trace context on in NGINX, NGINX deciding the sampled share', () => {
    expect(tracing.nginx).toEqual({
      ...example.nginx,
      SG_TRACE_CONTEXT: 'on',
      SG_TRACE_SAMPLE_PERCENT: '1',
    });
    expect({ ...nginxDefaults(), ...tracing.nginx }.SG_TRACE_TRUST_CLIENT_SAMPLED).toBe('off');
  });

  it("lets the verifier reach the collector's OTLP port in its namespace, and nothing more", () => {
    expect(tracing.egress).toEqual([
      ...example.egress,
      {
        to: [
          {
            namespaceSelector: {
              matchLabels: { 'kubernetes.io/metadata.name': endpoint.hostname.split('.')[1] },
            },
          },
        ],
        ports: [{ port: Number(endpoint.port), protocol: 'TCP' }],
      },
    ]);
  });
});

describe('a policy file in your overlay (docs/configuration.md)', () => {
  it('replaces the verifier file with one line, and NGINX serves its named sets from the same file', async () => {
    const issuer = 'https://login.example.com/realms/apps';
    const policies = {
      issuers: [{ type: 'jwt', issuer, audience: 'secret-gate-api', preset: 'keycloak' }],
      policies: {
        secret: { issuers: [issuer], scopes: ['secrets:read'] },
        payments: { issuers: [issuer], scopes: ['secrets:read'], acrValues: ['urn:acme:mfa'] },
      },
    };
    const manifests = renderWithPolicyFile(BUILDS['example overlay'], policies);
    const data = (name: string) =>
      manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === name)?.data as Record<
        string,
        string
      >;
    const text = data('secret-gate-verifier')['verifier.json'] ?? '';
    const config = loadConfig(
      { VERIFIER_CONFIG: '/etc/secret-gate/verifier/verifier.json' },
      () => text,
    );
    expect([...config.policies.keys()].sort()).toEqual(['payments', 'secret']);
    expect(config.policies.get('payments')?.acrValues).toEqual(['urn:acme:mfa']);
    // NGINX as the image renders it from the pod's values, the ConfigMap's file where
    // SG_POLICY_FILE points and a secrets file holding the same set.
    const nginxEnv = data('secret-gate-nginx');
    expect(nginxEnv).not.toHaveProperty('SG_SPA_SECRET_SETS');
    const scratch = mkdtempSync(join(tmpdir(), 'sg-overlay-nginx-'));
    try {
      writeFileSync(join(scratch, 'verifier.json'), text);
      writeFileSync(
        join(scratch, 'secrets.json'),
        JSON.stringify({ default: {}, policies: { payments: { default: { k: 'v' } } } }),
      );
      const prefix = join(scratch, 'prefix');
      await renderNginxConfig({
        templatesDir: nginxPaths.templatesDir,
        outDir: prefix,
        env: {
          ...nginxEnv,
          SG_POLICY_FILE: join(scratch, 'verifier.json'),
          SG_SECRETS_FILE: join(scratch, 'secrets.json'),
          SG_MEMORY_DIR: join(scratch, 'memory'),
        },
      });
      const runtime = readFileSync(join(prefix, 'snippets', 'runtime-config.conf'), 'utf8');
      expect(runtime).toContain('"clientId":"shop-spa"');
      expect(runtime).toContain('"secretSets":"payments"');
      expect(readFileSync(join(prefix, 'snippets', 'secret-set-names.conf'), 'utf8')).toMatch(
        /^ {4}payments 0;$/m,
      );
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

describe("the policy file's ConfigMap (docs/configuration.md, changing policies without a restart)", () => {
  it('keeps one name in the base, so a changed file is swapped into the running pods, not rolled', () => {
    const [base] = readYamlDocuments(join(BUILDS.base, 'kustomization.yaml')) as [
      { configMapGenerator: { name: string; options?: { disableNameSuffixHash?: boolean } }[] },
    ];
    const options = (name: string) => base.configMapGenerator.find((g) => g.name === name)?.options;
    expect(options('secret-gate-verifier')?.disableNameSuffixHash).toBe(true);
    // The variables are read at start only: their ConfigMaps keep the hash, a change rolls the pods.
    expect(options('secret-gate-nginx')?.disableNameSuffixHash).toBeUndefined();
    expect(options('secret-gate-verifier-env')?.disableNameSuffixHash).toBeUndefined();
  });
});

const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

describe.skipIf(!kubectl)('kubectl kustomize', () => {
  /** kubectl's output with generated-name hashes removed and Secret data decoded. */
  function normalise(text: string): unknown[] {
    const hashless = text.replace(/\b(secret-gate(?:-[a-z]+)+)-[a-z0-9]{10}\b/g, '$1');
    return (parseYaml(hashless, 'kubectl kustomize') as Manifest[]).map((m) => {
      if (m.kind !== 'Secret' || !m.data) return m;
      const { data, ...rest } = m;
      const decoded = Object.fromEntries(
        Object.entries(data as Record<string, string>).map(([k, v]) => [
          k,
          Buffer.from(v, 'base64').toString(),
        ]),
      );
      return { ...rest, stringData: decoded };
    });
  }
  const key = (m: Manifest) => `${m.kind}/${m.metadata.name}`;
  const sorted = (ms: Manifest[]) => [...ms].sort((a, b) => key(a).localeCompare(key(b)));

  it.each(
    [
      'base',
      'overlays/example',
      'overlays/redis-sentinel',
      'overlays/redis-cluster',
      'overlays/tracing',
    ].map((build) => [build, join(KUBERNETES, build)]),
  )(
    'generates the policy ConfigMap of %s under its plain name, the variables under hashed ones',
    (_, dir) => {
      const built = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
      const names = (parseYaml(built.stdout, 'kubectl kustomize') as Manifest[])
        .filter((m) => m.kind === 'ConfigMap')
        .map((m) => m.metadata.name)
        .sort();
      expect(names).toEqual([
        expect.stringMatching(/^secret-gate-nginx-[a-z0-9]{10}$/),
        'secret-gate-verifier',
        expect.stringMatching(/^secret-gate-verifier-env-[a-z0-9]{10}$/),
      ]);
    },
  );

  it.each([
    ...Object.entries(BUILDS),
    ...['redis-sentinel', 'redis-cluster', 'tracing'].map((name) => [
      `${name} overlay`,
      join(KUBERNETES, 'overlays', name),
    ]),
  ])('renders the %s exactly as the test renderer does', (_, dir) => {
    const built = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    expect(built.stderr).toBe('');
    expect(sorted(normalise(built.stdout) as Manifest[])).toEqual(sorted(renderKustomization(dir)));
  });
});

// The probe commands themselves, run as the kubelet would against the real verifier: its files and
// socket laid out under a scratch root the way the pod's volumes would lay them out.
describe('the verifier probes, run against the real verifier', () => {
  const manifests = renderKustomization(BUILDS.base);
  const pod = podSpec(manifests.find((m) => m.kind === 'Deployment') as Manifest);
  const verifier = pod.containers.find((c) => c.name === 'verifier') as Container;
  const env = Object.fromEntries((verifier.env ?? []).map((e) => [e.name, e.value ?? '']));
  let scratch = '';
  let idp: OAuth2Server;
  let child: ReturnType<typeof spawn> | undefined;
  let podEnv: Record<string, string> = {};

  const probe = (command: string[]) =>
    spawnSync(command[0] as string, command.slice(1), {
      env: { PATH: process.env.PATH, ...podEnv },
      // The image's WORKDIR, which the relative script path is resolved against.
      cwd: REPO_ROOT,
      timeout: 20_000,
    }).status;

  async function startVerifier(issuer: string): Promise<void> {
    const configText = (
      manifests.find((m) => m.metadata.name === 'secret-gate-verifier')?.data as Record<
        string,
        string
      >
    )['verifier.json'] as string;
    const original = JSON.parse(configText) as { issuers: { issuer: string }[] };
    const inPod = (path: string) => join(scratch, path);
    for (const mount of verifier.volumeMounts ?? [])
      mkdirSync(inPod(mount.mountPath), { recursive: true });
    // The init containers first, as the kubelet runs them (their last argument is a pod path).
    for (const init of pod.initContainers ?? []) {
      const [command, ...args] = init.command ?? [];
      const run = spawnSync(command ?? '', [...args.slice(0, -1), inPod(args.at(-1) ?? '')], {
        cwd: REPO_ROOT,
        timeout: 20_000,
      });
      expect(run.status, init.name).toBe(0);
    }
    writeFileSync(
      inPod(env.VERIFIER_CONFIG ?? ''),
      configText.replaceAll(original.issuers[0]?.issuer ?? '', issuer),
    );
    podEnv = {
      ...env,
      VERIFIER_LISTEN: `unix:${inPod((env.VERIFIER_LISTEN ?? '').slice(5))}`,
      VERIFIER_CONFIG: inPod(env.VERIFIER_CONFIG ?? ''),
      // The pod's metrics port, moved to a free loopback port so parallel runs never collide.
      VERIFIER_METRICS_LISTEN: `127.0.0.1:${await freePort()}`,
    };
    const dist = join(REPO_ROOT, 'verifier', 'dist', 'main.js');
    const args = existsSync(dist)
      ? [dist]
      : ['--import', 'tsx', join(REPO_ROOT, 'verifier', 'src', 'main.ts')];
    child = spawn(process.execPath, args, {
      env: { PATH: process.env.PATH, ...podEnv },
      stdio: 'ignore',
      cwd: REPO_ROOT,
    });
  }

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'sg-probe-'));
    idp = new OAuth2Server();
    await idp.issuer.keys.generate('RS256');
    const port = await freePort();
    idp.issuer.url = `http://127.0.0.1:${port}`;
    await idp.start(port, '127.0.0.1');
    await startVerifier(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    child?.kill('SIGTERM');
    await idp?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('reports live and ready once the key set is loaded', async () => {
    const liveness = verifier.livenessProbe?.exec?.command ?? [];
    const readiness = verifier.readinessProbe?.exec?.command ?? [];
    await expect.poll(() => probe(liveness), { timeout: 15_000, interval: 200 }).toBe(0);
    await expect.poll(() => probe(readiness), { timeout: 15_000, interval: 200 }).toBe(0);
  });

  it('fails both probes when nothing listens on the socket', () => {
    const command = verifier.livenessProbe?.exec?.command ?? [];
    const saved = podEnv;
    podEnv = { ...podEnv, VERIFIER_LISTEN: `unix:${join(scratch, 'absent.sock')}` };
    try {
      expect(probe(command)).toBe(1);
      expect(probe(verifier.readinessProbe?.exec?.command ?? [])).toBe(1);
    } finally {
      podEnv = saved;
    }
  });
});
