// A small Kustomize renderer for the manifest tests, so they run where no kubectl is installed.
// It knows exactly the features deploy/kubernetes uses and throws on any other field, so it can
// never render something different from `kubectl kustomize` without failing loudly
// (manifests.test.ts compares the two whenever kubectl is present).
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
};

type Generator = {
  name: string;
  behavior?: 'create' | 'merge' | 'replace';
  envs?: string[];
  files?: string[];
  literals?: string[];
  options?: { disableNameSuffixHash?: boolean };
};

/** A JSON 6902 patch of one resource, as the redis overlays write them (`add` and `replace`). */
type Patch = { target: { kind: string; name: string }; patch: string };
type PatchOperation = { op: string; path: string; value?: unknown };

type Kustomization = {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  resources?: string[];
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean }[];
  images?: { name: string; newName?: string; newTag?: string }[];
  replicas?: { name: string; count: number }[];
  configMapGenerator?: Generator[];
  secretGenerator?: Generator[];
  patches?: Patch[];
};

const KNOWN_FIELDS = new Set([
  'apiVersion',
  'kind',
  'namespace',
  'resources',
  'labels',
  'images',
  'replicas',
  'configMapGenerator',
  'secretGenerator',
  'patches',
]);

/** Every YAML document of a file, parsed strictly (a syntax error throws). */
export function readYamlDocuments(file: string): unknown[] {
  return parseYaml(readFileSync(file, 'utf8'), file);
}

/**
 * YAML as Kubernetes reads it: version 1.1, where `0440` is octal (YAML 1.2 would make it 440).
 */
export function parseYaml(text: string, where: string): unknown[] {
  return parseAllDocuments(text, { version: '1.1' }).map((doc) => {
    if (doc.errors.length > 0) throw new SyntaxError(`${where}: ${doc.errors[0]?.message}`);
    return doc.toJS() as unknown;
  });
}

/**
 * `build` (a directory) with the line docs/configuration.md gives your overlay: the verifier file
 * replaced by `policies` (NGINX reads its set names from the same ConfigMap).
 */
export function renderWithPolicyFile(build: string, policies: object): Manifest[] {
  const scratch = mkdtempSync(join(tmpdir(), 'sg-overlay-'));
  try {
    writeFileSync(join(scratch, 'policies.json'), JSON.stringify(policies));
    writeFileSync(
      join(scratch, 'kustomization.yaml'),
      [
        'resources:',
        `  - ${relative(scratch, build)}`,
        'configMapGenerator:',
        '  - name: secret-gate-verifier',
        '    behavior: replace',
        '    files:',
        '      - verifier.json=policies.json',
        '',
      ].join('\n'),
    );
    return renderKustomization(scratch);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Renders the kustomization in `dir`. Generated names get no hash suffix here (kubectl adds one);
 * references to generated ConfigMaps and Secrets therefore keep their plain names.
 */
export function renderKustomization(dir: string): Manifest[] {
  const root = resolve(dir);
  const [kustomization] = readYamlDocuments(join(root, 'kustomization.yaml')) as [Kustomization];
  for (const field of Object.keys(kustomization)) {
    if (!KNOWN_FIELDS.has(field))
      throw new TypeError(`${root}: kustomization field "${field}" is not supported here`);
  }

  let manifests: Manifest[] = [];
  for (const resource of kustomization.resources ?? []) {
    const path = join(root, resource);
    manifests.push(
      ...(statSync(path).isDirectory()
        ? renderKustomization(path)
        : (readYamlDocuments(path) as Manifest[])),
    );
  }
  manifests = applyGenerators(root, manifests, kustomization.configMapGenerator ?? [], 'ConfigMap');
  manifests = applyGenerators(root, manifests, kustomization.secretGenerator ?? [], 'Secret');
  applyPatches(root, manifests, kustomization.patches ?? []);

  for (const manifest of manifests) {
    if (kustomization.namespace && manifest.kind !== 'Namespace')
      manifest.metadata.namespace = kustomization.namespace;
    for (const { pairs, includeSelectors } of kustomization.labels ?? []) {
      manifest.metadata.labels = { ...manifest.metadata.labels, ...pairs };
      if (includeSelectors) addSelectorLabels(manifest, pairs);
    }
    if (manifest.kind === 'Deployment') {
      const count = kustomization.replicas?.find((r) => r.name === manifest.metadata.name)?.count;
      if (count !== undefined) (manifest.spec as { replicas: number }).replicas = count;
      const pod = podSpec(manifest);
      for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
        const image = kustomization.images?.find((i) => container.image.split(':')[0] === i.name);
        if (!image) continue;
        const [name, tag] = container.image.split(':');
        container.image = `${image.newName ?? name}:${image.newTag ?? tag}`;
      }
    }
  }
  return manifests;
}

function applyGenerators(
  root: string,
  manifests: Manifest[],
  generators: Generator[],
  kind: 'ConfigMap' | 'Secret',
): Manifest[] {
  for (const generator of generators) {
    const data: Record<string, string> = {};
    for (const env of generator.envs ?? [])
      Object.assign(data, parseEnvFile(readFileSync(join(root, env), 'utf8')));
    for (const literal of generator.literals ?? []) {
      const at = literal.indexOf('=');
      data[literal.slice(0, at)] = literal.slice(at + 1);
    }
    for (const file of generator.files ?? []) {
      const [key, path] = file.includes('=')
        ? (file.split('=') as [string, string])
        : [basename(file), file];
      data[key] = readFileSync(join(root, path), 'utf8');
    }
    const field = kind === 'Secret' ? 'stringData' : 'data';
    const existing = manifests.find((m) => m.kind === kind && m.metadata.name === generator.name);
    const behavior = generator.behavior ?? 'create';
    if (behavior === 'create') {
      if (existing) throw new TypeError(`${kind} "${generator.name}" generated twice`);
      const generated: Manifest = {
        apiVersion: 'v1',
        kind,
        metadata: { name: generator.name },
        [field]: data,
      };
      if (kind === 'Secret') generated.type = 'Opaque';
      manifests.push(generated);
    } else if (!existing) {
      throw new TypeError(`${kind} "${generator.name}": behavior ${behavior} needs it in the base`);
    } else {
      existing[field] = behavior === 'merge' ? { ...(existing[field] as object), ...data } : data;
    }
  }
  return manifests;
}

function applyPatches(root: string, manifests: Manifest[], patches: Patch[]): void {
  for (const { target, patch } of patches) {
    const operations = parseYaml(patch, `${root}: patch`)[0] as PatchOperation[];
    const matching = manifests.filter(
      (m) => m.kind === target.kind && m.metadata.name === target.name,
    );
    if (matching.length === 0)
      throw new TypeError(`${root}: patch target ${target.kind}/${target.name} not found`);
    for (const manifest of matching) for (const operation of operations) apply(manifest, operation);
  }
}

/** One `add` or `replace` (RFC 6902) at a path whose parents exist; anything else throws. */
function apply(document: unknown, { op, path, value }: PatchOperation): void {
  if (op !== 'add' && op !== 'replace')
    throw new TypeError(`patch op "${op}" is not supported here`);
  const keys = path
    .split('/')
    .slice(1)
    .map((key) => key.replaceAll('~1', '/').replaceAll('~0', '~'));
  const last = keys.pop() ?? '';
  let at = document as Record<string, unknown> | unknown[];
  for (const key of keys) {
    const next = Array.isArray(at) ? at[Number(key)] : at[key];
    if (typeof next !== 'object' || next === null)
      throw new TypeError(`patch path "${path}" does not exist`);
    at = next as Record<string, unknown> | unknown[];
  }
  if (!Array.isArray(at)) at[last] = value;
  else if (last === '-') at.push(value);
  else at.splice(Number(last), op === 'add' ? 0 : 1, value);
}

/** The env-file format kustomize reads: KEY=VALUE lines, `#` comments, value taken verbatim. */
export function parseEnvFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const at = line.indexOf('=');
    if (at < 1) throw new SyntaxError(`env file line without KEY=: "${line}"`);
    values[line.slice(0, at)] = line.slice(at + 1);
  }
  return values;
}

function addSelectorLabels(manifest: Manifest, pairs: Record<string, string>): void {
  const spec = manifest.spec as Record<string, unknown> | undefined;
  if (!spec) return;
  const merge = (holder: Record<string, unknown>, key: string) => {
    holder[key] = { ...(holder[key] as object), ...pairs };
  };
  switch (manifest.kind) {
    case 'Deployment':
      merge(spec.selector as Record<string, unknown>, 'matchLabels');
      merge((spec.template as { metadata: Record<string, unknown> }).metadata, 'labels');
      break;
    case 'Service':
      merge(spec, 'selector');
      break;
    case 'PodDisruptionBudget':
      merge(spec.selector as Record<string, unknown>, 'matchLabels');
      break;
    case 'NetworkPolicy':
      merge(spec.podSelector as Record<string, unknown>, 'matchLabels');
      break;
  }
}

export type Container = {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
};
export type Probe = {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
};
export type Volume = {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  secret?: { secretName: string; optional?: boolean };
  configMap?: { name: string };
};
export type PodSpec = {
  initContainers?: Container[];
  containers: Container[];
  volumes?: Volume[];
  securityContext?: Record<string, unknown>;
  automountServiceAccountToken?: boolean;
};

/** The pod template's spec of a Deployment. */
export function podSpec(deployment: Manifest): PodSpec {
  return (deployment.spec as { template: { spec: PodSpec } }).template.spec;
}
