/**
 * A real Zun for the zun provider's tests, the bench and `.ci/run`: `tools/harness/zun/*.sh`
 * install (Debian packages and two pinned venvs under `.cache/zun`, idempotent), start and
 * stop zun-api and zun-compute 18.0.0 with keystone, placement, MariaDB, RabbitMQ and podman, every
 * listener on 127.0.0.1. A stack that is already up (started by `.ci/run` or another test)
 * is used as it is and left running; one started here stops with `stop()` unless
 * `VKUBELET_KEEP_ZUN=1`.
 * @module
 */
import { fileURLToPath } from "node:url";

const HERE = fileURLToPath(new URL("./zun/", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Where the venvs and the running stack live. */
export const ZUN_STATE = `${ROOT}.cache/zun`;

/** A running Zun. */
export interface ZunStack {
  /** keystone's v3 URL. */
  authUrl: string;
  /** zun-api's endpoint (`…/v1`). */
  endpoint: string;
  /** The Neutron stand-in's endpoint (networks and security groups). */
  neutron: string;
  /** `OS_*` variables of the `demo` user (member of project demo). */
  env: Record<string, string>;
  /** `OS_*` variables of the `admin` user. */
  adminEnv: Record<string, string>;
  /** The venv with zun, its schemas and the OpenStack clients. */
  venv: string;
  /** Stops the stack if this process started it (and VKUBELET_KEEP_ZUN is not set). */
  stop(): Promise<void>;
}

async function script(name: string, timeoutMs: number): Promise<{ ok: boolean; out: string }> {
  const child = new Deno.Command("bash", {
    args: [`${HERE}${name}`, ZUN_STATE],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).spawn();
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { ok: out.success, out: text };
}

let installed: Promise<string | undefined> | undefined;

/**
 * Installs the stack (first time: several minutes). Resolves to undefined when it is there,
 * else to why not (the tests print it and skip).
 */
export function installZun(): Promise<string | undefined> {
  installed ??= script("install.sh", 30 * 60_000).then(
    ({ ok, out }) =>
      ok
        ? undefined
        : `tools/harness/zun/install.sh failed:\n${out.split("\n").slice(-15).join("\n")}`,
    (err) => `tools/harness/zun/install.sh could not run: ${err}`,
  );
  return installed;
}

function osEnv(authUrl: string, user: string, project: string): Record<string, string> {
  return {
    OS_AUTH_URL: authUrl,
    OS_USERNAME: user,
    OS_PASSWORD: "secret",
    OS_PROJECT_NAME: project,
    OS_USER_DOMAIN_NAME: "Default",
    OS_PROJECT_DOMAIN_NAME: "Default",
    OS_REGION_NAME: "RegionOne",
    OS_IDENTITY_API_VERSION: "3",
  };
}

async function ports(): Promise<Record<string, string> | undefined> {
  try {
    const text = await Deno.readTextFile(`${ZUN_STATE}/stack/ports.env`);
    return Object.fromEntries(
      text.trim().split("\n").map((line) => line.split("=", 2) as [string, string]),
    );
  } catch {
    return undefined;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

function stackOf(p: Record<string, string>, stop: () => Promise<void>): ZunStack {
  const authUrl = `http://127.0.0.1:${p.ZUN_PORT_KEYSTONE}/v3`;
  return {
    authUrl,
    endpoint: `http://127.0.0.1:${p.ZUN_PORT_API}/v1`,
    neutron: `http://127.0.0.1:${p.ZUN_PORT_NEUTRON}`,
    env: osEnv(authUrl, "demo", "demo"),
    adminEnv: osEnv(authUrl, "admin", "admin"),
    venv: `${ZUN_STATE}/venv`,
    stop,
  };
}

/** Waits while another process's up.sh is starting the stack (its pid in starting.pid). */
async function startedElsewhere(): Promise<void> {
  for (let i = 0; i < 900; i++) {
    let pid: number;
    try {
      pid = Number(await Deno.readTextFile(`${ZUN_STATE}/stack/starting.pid`));
    } catch {
      return;
    }
    try {
      Deno.kill(pid, "SIGCONT"); // a signal that changes nothing: is it alive?
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/** The running stack, started (after installing) if none answers; throws why it cannot. */
export async function useZun(): Promise<ZunStack> {
  const problem = await installZun();
  if (problem) throw new Error(problem);
  await startedElsewhere();
  const running = await ports();
  if (
    running && await answers(`http://127.0.0.1:${running.ZUN_PORT_API}/v1`) &&
    await answers(`http://127.0.0.1:${running.ZUN_PORT_KEYSTONE}/v3`)
  ) {
    return stackOf(running, () => Promise.resolve());
  }
  await script("down.sh", 120_000); // a stack that half-answers: clear it first
  const up = await script("up.sh", 15 * 60_000);
  if (!up.ok) {
    await script("down.sh", 120_000);
    throw new Error(`tools/harness/zun/up.sh failed:\n${up.out.split("\n").slice(-20).join("\n")}`);
  }
  return stackOf((await ports())!, async () => {
    if (Deno.env.get("VKUBELET_KEEP_ZUN") === "1") return;
    await script("down.sh", 120_000);
  });
}

/** Why the Zun tests of this process are skipped, printed once; undefined when they run. */
export async function zunSkipReason(): Promise<string | undefined> {
  const problem = await installZun();
  if (problem) {
    console.error(`SKIPPING the Zun tests: the Zun stack could not be installed.\n${problem}`);
  }
  return problem;
}
