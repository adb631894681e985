/**
 * Builds the Go interop peer (tests/kubelet_api/streaming/go_peer, client-go's real SPDY
 * remotecommand and port-forward clients) once per source hash into .cache/, and runs it.
 * @module
 */

const here = new URL("./go_peer/", import.meta.url);
const repoRoot = new URL("../../../", import.meta.url);

/** Whether a `go` toolchain is on PATH. */
export async function goAvailable(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("go", {
      args: ["version"],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return success;
  } catch {
    return false;
  }
}

async function sourceHash(): Promise<string> {
  const parts: string[] = [];
  for (const name of ["go.mod", "go.sum", "main.go"]) {
    parts.push(name, await Deno.readTextFile(new URL(name, here)));
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\0")));
  return Array.from(new Uint8Array(digest).slice(0, 8), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** The path of the built peer, building it if its sources changed. */
export async function buildGoPeer(): Promise<string> {
  const dir = new URL(`.cache/go_peer/${await sourceHash()}/`, repoRoot);
  const binary = new URL("go_peer", dir).pathname;
  try {
    await Deno.stat(binary);
    return binary;
  } catch {
    // not built yet
  }
  await Deno.mkdir(dir, { recursive: true });
  const partial = `${binary}.partial`;
  const { success, stderr } = await new Deno.Command("go", {
    args: ["build", "-trimpath", "-ldflags", "-s -w", "-o", partial, "."],
    cwd: here.pathname,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(`go build of the peer failed:\n${new TextDecoder().decode(stderr)}`);
  }
  await Deno.rename(partial, binary);
  return binary;
}

/** The peer's JSON result line. */
export interface GoPeerResult {
  ok: boolean;
  error?: string;
  exitCode: number;
  stdoutLen: number;
  stdoutSha256: string;
  stdout?: string;
  stderr: string;
  echoes?: string[];
}

/** Runs the peer with `args` and parses its result. */
export async function runGoPeer(
  binary: string,
  args: string[],
): Promise<{ result: GoPeerResult; log: string }> {
  const { stdout, stderr } = await new Deno.Command(binary, {
    args,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const log = new TextDecoder().decode(stderr);
  const text = new TextDecoder().decode(stdout).trim();
  try {
    return { result: JSON.parse(text), log };
  } catch {
    throw new Error(`The Go peer printed no result: ${text}\n${log}`);
  }
}

/** The bytes the peer sends: `pattern(n, seed)` in main.go. */
export function goPattern(length: number, seed: number): Uint8Array {
  const alphabet = new TextEncoder().encode("abcdefghijklmnopqrstuvwxyz0123456789\n");
  return Uint8Array.from({ length }, (_, i) => alphabet[(i + seed) % 37]);
}
