/**
 * `deploy/kubernetes/` is generated from the chart `deploy/helm/vkubelet` with its default
 * values, and `deploy/kubernetes/ha/` with the high-availability values ({@link HA_VALUES}):
 * {@link plainManifests} renders a set (`helm template vkubelet --namespace vkubelet`), one file
 * per template, and `deno run -A tools/helm/manifests.ts` writes both. The chart tests check
 * that the files in the repository are what the chart renders now. `namespace.yaml` is written by
 * hand (Helm creates no namespace of its own).
 * @module
 */
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../cluster/build.ts";
import { ensureHelm } from "./build.ts";

/** The chart's folder. */
export const chartDir = `${repoRoot}/deploy/helm/vkubelet`;
/** The plain manifests' folder. */
export const manifestsDir = `${repoRoot}/deploy/kubernetes`;

/** The high-availability set: a ServiceAccount's RBAC, two replicas under --leader-elect. */
export const HA_VALUES: readonly string[] = [
  "--set=certificates.mode=files",
  "--set=replicas=2",
  "--set=leaderElect=true",
];

/** The sets written: folder under deploy/kubernetes (`""` for itself) -> `--set` arguments. */
export const MANIFEST_SETS: Readonly<Record<string, readonly string[]>> = {
  "": [],
  "ha": HA_VALUES,
};

/** Templates that may render with a set's values (the plain file has the template's name). */
const TEMPLATES = new Set([
  "rbac.yaml",
  "bootstrap.yaml",
  "configmap.yaml",
  "workload.yaml",
  "pdb.yaml",
]);

/** Options for {@link helm}. */
export interface HelmOptions {
  /** Written to the command's standard input (`-f -`). */
  stdin?: string;
  /** Extra environment, such as KUBECONFIG. */
  env?: Record<string, string>;
  signal?: AbortSignal;
}

/** The outcome of one helm command. */
export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `helm args` (built on first use); never throws on a non-zero exit. */
export async function helm(args: string[], options: HelmOptions = {}): Promise<HelmResult> {
  const binary = await ensureHelm({ signal: options.signal });
  const child = new Deno.Command(binary, {
    args,
    // Helm's own state (repositories, caches) stays out of the user's home.
    env: {
      HELM_CACHE_HOME: `${repoRoot}/.cache/helm/cache`,
      HELM_CONFIG_HOME: `${repoRoot}/.cache/helm/config`,
      HELM_DATA_HOME: `${repoRoot}/.cache/helm/data`,
      ...options.env,
    },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: options.signal,
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** Splits `helm template` output by its `# Source: <chart>/templates/<file>` lines. */
export function splitBySource(rendered: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const doc of rendered.split(/^---\n/m)) {
    const match = doc.match(/^# Source: [^/]+\/templates\/(.+)$/m);
    if (!match) continue;
    const body = doc.replace(/^# Source: .*\n/m, "").trimEnd() + "\n";
    const previous = out.get(match[1]);
    out.set(match[1], previous ? `${previous}---\n${body}` : body);
  }
  return out;
}

/**
 * The plain manifests the chart renders with the values of `folder` in {@link MANIFEST_SETS}
 * (default: the chart's defaults): path under deploy/kubernetes -> text.
 */
export async function plainManifests(
  folder = "",
  signal?: AbortSignal,
): Promise<Map<string, string>> {
  const set = MANIFEST_SETS[folder];
  if (!set) throw new RangeError(`no manifest set ${folder}`);
  const res = await helm(["template", "vkubelet", chartDir, "--namespace", "vkubelet", ...set], {
    signal,
  });
  if (res.code !== 0) throw new Error(`helm template of the chart failed: ${res.stderr}`);
  const values = set.length ? `the values ${set.map((s) => s.slice(6)).join(" ")}` : "its defaults";
  const out = new Map<string, string>();
  for (const [template, text] of splitBySource(res.stdout)) {
    if (!TEMPLATES.has(template)) throw new Error(`template ${template} renders: list it`);
    out.set(
      folder ? `${folder}/${template}` : template,
      `# Generated from deploy/helm/vkubelet (${values}) by tools/helm/manifests.ts;\n` +
        "# change the chart and run `deno run -A tools/helm/manifests.ts`, not this file.\n" +
        text,
    );
  }
  return out;
}

/** Options for {@link chartRbac}. */
export interface ChartRbacOptions {
  release: string;
  namespace: string;
  nodeName: string;
  /** More `--set` arguments (default: {@link HA_VALUES}). */
  set?: readonly string[];
  signal?: AbortSignal;
}

/**
 * The RBAC objects (ServiceAccount, roles, bindings) the chart renders for one node, as JSON
 * text for `kubectl apply -f -`, and the names of the cluster-scoped ones and of the namespaced
 * ones outside `namespace` for clean-up.
 */
export async function chartRbac(options: ChartRbacOptions) {
  const res = await helm([
    "template",
    options.release,
    chartDir,
    "--namespace",
    options.namespace,
    `--set=nodeName=${options.nodeName}`,
    ...(options.set ?? HA_VALUES),
  ], { signal: options.signal });
  if (res.code !== 0) throw new Error(`helm template of the chart failed: ${res.stderr}`);
  const kinds = ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"];
  const items = parseAllDocuments(res.stdout)
    .map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string } })
    .filter((o) => o && kinds.includes(o.kind));
  return {
    json: JSON.stringify({ apiVersion: "v1", kind: "List", items }),
    /** `kubectl delete` arguments for each object outside `namespace`. */
    cleanup: items.filter((o) => o.metadata.namespace !== options.namespace).map((o) =>
      o.metadata.namespace
        ? ["-n", o.metadata.namespace, "delete", o.kind.toLowerCase(), o.metadata.name]
        : ["delete", o.kind.toLowerCase(), o.metadata.name]
    ),
  };
}

if (import.meta.main) {
  for (const folder of Object.keys(MANIFEST_SETS)) {
    await Deno.mkdir(`${manifestsDir}/${folder}`, { recursive: true });
    for (const [file, text] of await plainManifests(folder)) {
      await Deno.writeTextFile(`${manifestsDir}/${file}`, text);
      console.log(`wrote deploy/kubernetes/${file}`);
    }
  }
}
