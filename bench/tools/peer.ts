/**
 * The peer: virtual-kubelet's own CLI (`cmd/virtual-kubelet`, which registers its mock provider
 * unconditionally at v1.14.1, no build tag needed) built from the Go module proxy through the
 * wrapper module in `bench/tools/peer/` (go.mod and go.sum only). Two small, printed patches are
 * applied to a copy of the downloaded module under `.cache/`, never committed:
 *
 * 1. `cmd/virtual-kubelet/internal/commands/root/http.go` listens on `":PORT"` (every
 *    interface); the bench makes it `"127.0.0.1:PORT"` so that nothing leaves loopback.
 * 2. `node/nodeutil/client.go` builds its client with client-go's defaults (5 requests/s, burst
 *    10) and has no flag to change them (the older node-cli had `--kube-api-qps`); the patch
 *    reads `VKBENCH_KUBE_API_QPS` / `VKBENCH_KUBE_API_BURST` so both kubelets can run with the
 *    same client-side limit. Unset, the peer behaves exactly as shipped.
 * @module
 */
import { cacheDir } from "../../tools/cluster/build.ts";

/** The pinned release; the newest the module proxy serves when this bench was written. */
export const PEER_VERSION = "v1.14.1";
const PEER_MODULE = "github.com/virtual-kubelet/virtual-kubelet";
const wrapperDir = new URL("./peer/", import.meta.url).pathname;
const decoder = new TextDecoder();

interface Patch {
  file: string;
  from: string;
  to: string;
}

const PATCHES: Patch[] = [
  {
    file: "cmd/virtual-kubelet/internal/commands/root/http.go",
    from: 'config.Addr = fmt.Sprintf(":%d", c.ListenPort)',
    to: 'config.Addr = fmt.Sprintf("127.0.0.1:%d", c.ListenPort)',
  },
  {
    file: "node/nodeutil/client.go",
    from: "\treturn kubernetes.NewForConfig(config)\n}",
    to: "\tbenchClientLimits(config)\n\treturn kubernetes.NewForConfig(config)\n}",
  },
];

/** Added next to client.go in the copy: reads the bench's client-side limits. */
const LIMITS_FILE = `package nodeutil

import (
	"os"
	"strconv"

	"k8s.io/client-go/rest"
)

// benchClientLimits is added by vkubelet's bench: client-go's QPS and burst from the environment.
func benchClientLimits(config *rest.Config) {
	if q, err := strconv.ParseFloat(os.Getenv("VKBENCH_KUBE_API_QPS"), 32); err == nil {
		config.QPS = float32(q)
	}
	if b, err := strconv.Atoi(os.Getenv("VKBENCH_KUBE_API_BURST")); err == nil {
		config.Burst = b
	}
}
`;

async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed:\n${decoder.decode(out.stderr)}`);
  }
  return decoder.decode(out.stdout).trim();
}

async function hash(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest).slice(0, 6), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** Options for {@link ensurePeer}. */
export interface EnsurePeerOptions {
  progress?: (line: string) => void;
}

/** Returns the path of the peer binary, building it first when it is not cached. */
export async function ensurePeer(options: EnsurePeerOptions = {}): Promise<string> {
  const progress = options.progress ?? (() => {});
  const gomod = await Deno.readTextFile(`${wrapperDir}go.mod`);
  const gosum = await Deno.readTextFile(`${wrapperDir}go.sum`);
  const key = await hash([gomod, gosum, LIMITS_FILE, JSON.stringify(PATCHES)].join("\n"));
  const work = `${cacheDir}/bench/peer`;
  const binary = `${work}/virtual-kubelet-${PEER_VERSION}-${key}`;
  try {
    await Deno.stat(binary);
    return binary;
  } catch {
    // Not built yet.
  }
  progress(`building the peer: ${PEER_MODULE}@${PEER_VERSION} cmd/virtual-kubelet (mock provider)`);
  const started = performance.now();
  await run("go", ["mod", "download", `${PEER_MODULE}@${PEER_VERSION}`], wrapperDir);
  const pristine = await run(
    "go",
    ["list", "-m", "-f", "{{.Dir}}", `${PEER_MODULE}@${PEER_VERSION}`],
    wrapperDir,
  );
  const src = `${work}/src-${PEER_VERSION}`;
  await Deno.remove(src, { recursive: true }).catch(() => {});
  await Deno.mkdir(work, { recursive: true });
  await run("cp", ["-R", pristine, src], work);
  await run("chmod", ["-R", "u+w", src], work);
  for (const patch of PATCHES) {
    const path = `${src}/${patch.file}`;
    const text = await Deno.readTextFile(path);
    if (!text.includes(patch.from)) {
      throw new Error(
        `the peer patch for ${patch.file} no longer applies; update bench/tools/peer.ts`,
      );
    }
    await Deno.writeTextFile(path, text.replace(patch.from, patch.to));
    progress(`  patched ${patch.file}: ${patch.to.trim().split("\n")[0]}`);
  }
  await Deno.writeTextFile(`${src}/node/nodeutil/bench_limits.go`, LIMITS_FILE);
  // The committed go.mod stays a pure pin; the build uses a copy that points at the patched tree.
  const modfile = `${work}/go.mod`;
  await Deno.writeTextFile(modfile, `${gomod}\nreplace ${PEER_MODULE} => ${src}\n`);
  await Deno.writeTextFile(`${work}/go.sum`, gosum);
  const ldflags = `-s -w -X main.buildVersion=${PEER_VERSION}`;
  const tmp = `${binary}.tmp-${Deno.pid}`;
  await run("go", [
    "build",
    `-modfile=${modfile}`,
    "-trimpath",
    "-ldflags",
    ldflags,
    "-o",
    tmp,
    `${PEER_MODULE}/cmd/virtual-kubelet`,
  ], wrapperDir);
  await Deno.rename(tmp, binary);
  progress(`built the peer in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return binary;
}

if (import.meta.main) console.log(await ensurePeer({ progress: (l) => console.error(l) }));
