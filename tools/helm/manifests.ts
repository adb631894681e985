/**
 * `deploy/kubernetes/` is generated from the chart `deploy/helm/vkubelet` with its default
 * values: {@link plainManifests} renders them (`helm template vkubelet --namespace vkubelet`), one
 * file per template, and `deno run -A tools/helm/manifests.ts` writes them. The chart tests check
 * that the files in the repository are what the chart renders now. `namespace.yaml` is written by
 * hand (Helm creates no namespace of its own).
 * @module
 */
import { repoRoot } from "../cluster/build.ts";
import { ensureHelm } from "./build.ts";

/** The chart's folder. */
export const chartDir = `${repoRoot}/deploy/helm/vkubelet`;
/** The plain manifests' folder. */
export const manifestsDir = `${repoRoot}/deploy/kubernetes`;

/** Plain manifest file name for each template that renders something with the defaults. */
const FILES: Record<string, string> = {
  "rbac.yaml": "rbac.yaml",
  "configmap.yaml": "configmap.yaml",
  "workload.yaml": "deployment.yaml",
  "pdb.yaml": "pdb.yaml",
};

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

/** The plain manifests the chart renders with its defaults: file name -> text. */
export async function plainManifests(signal?: AbortSignal): Promise<Map<string, string>> {
  const res = await helm(["template", "vkubelet", chartDir, "--namespace", "vkubelet"], {
    signal,
  });
  if (res.code !== 0) throw new Error(`helm template of the chart failed: ${res.stderr}`);
  const out = new Map<string, string>();
  for (const [template, text] of splitBySource(res.stdout)) {
    const file = FILES[template];
    if (!file) throw new Error(`template ${template} renders with the defaults: name its file`);
    out.set(
      file,
      "# Generated from deploy/helm/vkubelet (its default values) by tools/helm/manifests.ts;\n" +
        "# change the chart and run `deno run -A tools/helm/manifests.ts`, not this file.\n" +
        text,
    );
  }
  return out;
}

if (import.meta.main) {
  for (const [file, text] of await plainManifests()) {
    await Deno.writeTextFile(`${manifestsDir}/${file}`, text);
    console.log(`wrote deploy/kubernetes/${file}`);
  }
}
