/**
 * What `vkubelet --version` prints: the version in deno.json and the git commit the running code
 * was built from. The commit comes from one of two places, and the line says which:
 * - **stamped**: `deno task compile` (the binaries, and the bundle of `--js`) builds from an entry
 *   module it generates, which hands `main()` the commit of the checkout it built from
 *   (scripts/compile.ts);
 * - **checkout**: `deno task start`, or `deno run main.ts`, from a git checkout asks `git` for
 *   `HEAD` when `--version` is given.
 *
 * Anything else (a copied tree without `.git`, a bundle made by hand with `deno bundle`, no
 * `--allow-run`) prints "commit unknown" with the reason. `-dirty` marks a commit whose tracked
 * files had uncommitted changes.
 * @module
 */

/** The commit code was built from, and whether tracked files differed from it. */
export interface BuildStamp {
  commit: string;
  dirty: boolean;
}

/** Where a {@link BuildStamp} came from, for the `--version` line. */
export type StampSource = "stamped" | "checkout";

/** The `--version` line (without the newline). */
export function versionLine(
  version: string,
  stamp: { stamp: BuildStamp; source: StampSource } | { unknown: string },
): string {
  if ("unknown" in stamp) return `vkubelet ${version} (commit unknown: ${stamp.unknown})`;
  const commit = `${stamp.stamp.commit}${stamp.stamp.dirty ? "-dirty" : ""}`;
  const from = stamp.source === "stamped"
    ? "built by deno task compile"
    : "read from the git checkout";
  return `vkubelet ${version} (commit ${commit}, ${from})`;
}

/** Runs `git args` in a directory; the stdout, or undefined when git fails or is missing. */
export type RunGit = (dir: string, args: string[]) => Promise<string | undefined>;

/** {@link RunGit} through `Deno.Command`, only if `git` may be run without a prompt. */
export const runGit: RunGit = async (dir, args) => {
  const permission = Deno.permissions.querySync({ name: "run", command: "git" });
  if (permission.state !== "granted") return undefined;
  try {
    const out = await new Deno.Command("git", {
      args: ["-C", dir, ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch {
    return undefined;
  }
};

/** `HEAD` of the git checkout whose top is `dir`, or the reason there is none. */
export async function stampOfCheckout(
  dir: string,
  run: RunGit = runGit,
): Promise<{ stamp: BuildStamp } | { unknown: string }> {
  // Only vkubelet's own checkout: main.ts at its top, not a copy inside some other repository.
  const prefix = await run(dir, ["rev-parse", "--show-prefix"]);
  if (prefix === undefined || prefix !== "") {
    return { unknown: "not built by deno task compile, and not run from a git checkout" };
  }
  const commit = await run(dir, ["rev-parse", "HEAD"]);
  if (!commit || !/^[0-9a-f]{40,64}$/.test(commit)) {
    return { unknown: "the git checkout has no commit yet" };
  }
  const changes = await run(dir, ["status", "--porcelain", "--untracked-files=no"]);
  return { stamp: { commit, dirty: changes !== undefined && changes !== "" } };
}
