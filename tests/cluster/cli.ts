/**
 * `deno task cluster up|down|status|build` and `deno task kubectl -- ARGS`: the local control
 * plane for tests, the demo and people.
 * @module
 */
import { ensureBinary } from "./build.ts";
import {
  adminKubeconfig,
  COMPONENTS,
  down,
  healthy,
  readState,
  running,
  startComponent,
  stopComponent,
  up,
} from "./cluster.ts";

const USAGE = `usage: deno task cluster <command>
  up [--verify-kubelet-serving]  start etcd, kube-apiserver, kube-controller-manager and
                                 kube-scheduler on loopback (builds them on first use);
                                 prints KUBECONFIG=<path> last
  down                           stop everything 'up' started
  status                         say whether the cluster is up (exit 0) or not (exit 1)
  build                          only build the control-plane binary
  stop|start <component>         stop or restart one component (${COMPONENTS.join(", ")})
       deno task kubectl -- <args>    run the matching kubectl against the cluster`;

const err = (line: string) => Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
const out = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case "up": {
      const unknown = rest.filter((a) => a !== "--verify-kubelet-serving");
      if (unknown.length) {
        err(`unknown option ${unknown[0]}\n${USAGE}`);
        return 2;
      }
      await up({ verifyKubeletServing: rest.includes("--verify-kubelet-serving"), progress: err });
      out(`KUBECONFIG=${adminKubeconfig}`);
      return 0;
    }
    case "down":
      out((await down()) ? "cluster stopped" : "cluster was not running");
      return 0;
    case "status":
      return await status();
    case "build":
      out(await ensureBinary({ progress: err }));
      return 0;
    case "stop":
    case "start": {
      const state = readState();
      const component = COMPONENTS.find((c) => c === rest[0]);
      if (!state || !component) {
        err(!state ? "the cluster is not up; run: deno task cluster up" : USAGE);
        return 2;
      }
      await (command === "stop" ? stopComponent : startComponent)(state, component);
      return 0;
    }
    case "kubectl":
      return await kubectl(rest[0] === "--" ? rest.slice(1) : rest);
    default:
      err(USAGE);
      return command === undefined || command === "help" || command === "--help" ? 0 : 2;
  }
}

async function status(): Promise<number> {
  const state = readState();
  if (!state) {
    out("down");
    return 1;
  }
  const alive = running(state);
  const dead = COMPONENTS.filter((c) => !alive[c]);
  const ready = dead.length === 0 && await healthy(`${state.server}/readyz`);
  if (!ready) {
    out(`down${dead.length ? ` (not running: ${dead.join(", ")})` : " (apiserver not ready)"}`);
    return 1;
  }
  out(`up: ${state.server}`);
  out(`KUBECONFIG=${adminKubeconfig}`);
  return 0;
}

async function kubectl(args: string[]): Promise<number> {
  const state = readState();
  if (!state) {
    err("the cluster is not up; run: deno task cluster up");
    return 1;
  }
  const child = new Deno.Command(state.binary, {
    args: ["kubectl", `--kubeconfig=${adminKubeconfig}`, ...args],
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  return (await child.status).code;
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    err(`error: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
}
