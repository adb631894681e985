/**
 * The host programs vkubelet runs (often as root): each is found once, by absolute path, on a
 * fixed trusted PATH, and runs with vkubelet's own minimal environment, never the pod's. A pod's
 * PATH, LD_PRELOAD or LD_LIBRARY_PATH must not choose or change a program that runs as root:
 * the pod's environment is handed over only at the last exec, after the privileges are dropped
 * (../launch/entry.ts).
 * @module
 */

/** Where vkubelet looks for the host programs it runs: root-owned system directories only. */
export const TRUSTED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The whole environment of every host program vkubelet runs. */
export const HELPER_ENV: Readonly<Record<string, string>> = Object.freeze({ PATH: TRUSTED_PATH });

/** The host programs the provider runs, and the package each comes from. */
const PACKAGES = {
  sh: "a POSIX shell (dash or bash)",
  cat: "coreutils",
  chroot: "coreutils",
  env: "coreutils",
  ln: "coreutils",
  mkdir: "coreutils",
  mkfifo: "coreutils",
  readlink: "coreutils",
  rmdir: "coreutils",
  sleep: "coreutils",
  mv: "coreutils",
  test: "coreutils",
  stty: "coreutils",
  mount: "util-linux",
  nsenter: "util-linux",
  script: "util-linux",
  setpriv: "util-linux",
  unshare: "util-linux",
  umount: "util-linux",
  socat: "socat",
} as const;

/** A host program the provider runs. */
export type HostTool = keyof typeof PACKAGES;

const found = new Map<HostTool, string>();

/** The absolute path of `tool` on {@link TRUSTED_PATH}; throws naming the tool if it is missing. */
export function toolPath(tool: HostTool): string {
  const known = found.get(tool);
  if (known) return known;
  for (const dir of TRUSTED_PATH.split(":")) {
    const candidate = `${dir}/${tool}`;
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) {
        found.set(tool, candidate);
        return candidate;
      }
    } catch {
      // not in this directory
    }
  }
  throw new Error(
    `the process provider needs ${tool} (${
      PACKAGES[tool]
    }) in one of ${TRUSTED_PATH}, and it is not there; install it`,
  );
}

/** The programs every container needs; with `root`, and with a private view, more. */
export function requiredTools(options: { root: boolean; view: boolean }): HostTool[] {
  const tools: HostTool[] = ["sh", "cat", "env", "mkfifo", "mv", "readlink", "sleep"];
  if (options.root) tools.push("setpriv");
  if (options.view) tools.push("unshare", "mount", "mkdir", "ln", "chroot", "nsenter");
  return tools;
}

/** What is missing of `tools`, one message each (for a start-up check). */
export function missingTools(tools: HostTool[]): string[] {
  const problems: string[] = [];
  for (const tool of tools) {
    try {
      toolPath(tool);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems;
}

/** A command for `tool` by its absolute path, with vkubelet's fixed environment. */
export function hostCommand(
  tool: HostTool,
  options: Omit<Deno.CommandOptions, "env" | "clearEnv"> & { env?: Record<string, string> } = {},
): Deno.Command {
  return new Deno.Command(toolPath(tool), {
    ...options,
    clearEnv: true,
    env: { ...HELPER_ENV, ...options.env },
  });
}
