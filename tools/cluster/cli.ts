/**
 * `deno task cluster up|down|status|build` and `deno task kubectl -- ARGS`: the local control
 * plane for tests, the demo and people.
 * @module
 */
import { ensureBinary } from "./build.ts";
import {
  type ClusterPaths,
  clusterPaths,
  COMPONENTS,
  down,
  healthy,
  readState,
  running,
  startComponent,
  stopComponent,
  up,
} from "./cluster.ts";
import { ensureMetricsServer, metricsServerRunning } from "./metrics_server.ts";

const USAGE = `usage: deno task cluster [--name NAME] <command>
  up [--verify-kubelet-serving]  start etcd, kube-apiserver, kube-controller-manager and
                                 kube-scheduler on loopback (builds them on first use);
                                 prints KUBECONFIG=<path> last
     [--metrics-server]          also start metrics-server (built on first use) and register
                                 it as the v1beta1.metrics.k8s.io APIService
     [--metric-resolution=N]     its scrape interval in seconds (default 10, at least 10)
     [--metrics-server-insecure-kubelet-tls]  do not verify kubelet serving certificates
     [--token-auth-file=PATH]    also accept the bearer tokens of this static token file
                                 (CSV token,user,uid,"groups"); read when the apiserver starts
     [--service-range=CIDR]      the Service IP range (default 127.0.100.0/24, which pods in
                                 their own network namespace cannot reach)
  down                           stop everything 'up' started
  status                         say whether the cluster is up (exit 0) or not (exit 1)
  build                          only build the control-plane binary
  stop|start <component>         stop or restart one component (${COMPONENTS.join(", ")})
--name NAME picks one of several side-by-side clusters (default: "default").
       deno task kubectl [--name NAME] -- <args>    run the matching kubectl against it`;

const err = (line: string) => Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
const out = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

/** Splits a leading `--name NAME` or `--name=NAME` off `args`. */
function takeName(args: string[], name: string): [string, string[]] {
  if (args[0] === "--name" && args[1]) return [args[1], args.slice(2)];
  if (args[0]?.startsWith("--name=")) return [args[0].slice("--name=".length), args.slice(1)];
  return [name, args];
}

async function main(argv: string[]): Promise<number> {
  let [name, args] = takeName(argv, "default");
  const [command, ...afterCommand] = args;
  // `deno task kubectl --name b -- ...` puts the name after the command.
  [name, args] = takeName(afterCommand, name);
  const rest = args;
  const paths = clusterPaths(name);
  switch (command) {
    case "up": {
      const flags = ["--verify-kubelet-serving", "--metrics-server"];
      const insecure = "--metrics-server-insecure-kubelet-tls";
      const resolution = rest.find((a) => a.startsWith("--metric-resolution="))?.split("=")[1];
      const tokenFlag = "--token-auth-file=";
      const tokenAuthFile = rest.find((a) => a.startsWith(tokenFlag))?.slice(tokenFlag.length);
      const rangeFlag = "--service-range=";
      const serviceRange = rest.find((a) => a.startsWith(rangeFlag))?.slice(rangeFlag.length);
      const unknown = rest.filter((a) =>
        !flags.includes(a) && a !== insecure && !a.startsWith("--metric-resolution=") &&
        !a.startsWith(tokenFlag) && !a.startsWith(rangeFlag)
      );
      if (unknown.length) {
        err(`unknown option ${unknown[0]}\n${USAGE}`);
        return 2;
      }
      if (serviceRange !== undefined && !/^[0-9a-fA-F:.]+\/[0-9]{1,3}$/.test(serviceRange)) {
        err(`--service-range=${serviceRange} is not a CIDR; give one such as 198.18.96.0/24`);
        return 2;
      }
      await up({
        paths,
        verifyKubeletServing: rest.includes("--verify-kubelet-serving"),
        tokenAuthFile,
        serviceRange,
        progress: err,
      });
      if (rest.includes("--metrics-server")) {
        await ensureMetricsServer(paths, {
          resolutionSeconds: resolution === undefined ? undefined : Number(resolution),
          kubeletInsecureTls: rest.includes(insecure),
          progress: err,
        });
      }
      out(`KUBECONFIG=${paths.adminKubeconfig}`);
      return 0;
    }
    case "down":
      out((await down(paths)) ? "cluster stopped" : "cluster was not running");
      return 0;
    case "status":
      return await status(paths);
    case "build":
      out(await ensureBinary({ progress: err }));
      return 0;
    case "stop":
    case "start": {
      const state = readState(paths);
      const component = COMPONENTS.find((c) => c === rest[0]);
      if (!state || !component) {
        err(!state ? "the cluster is not up; run: deno task cluster up" : USAGE);
        return 2;
      }
      await (command === "stop" ? stopComponent : startComponent)(state, component);
      return 0;
    }
    case "kubectl":
      return await kubectl(paths, rest[0] === "--" ? rest.slice(1) : rest);
    default:
      err(USAGE);
      return command === undefined || command === "help" || command === "--help" ? 0 : 2;
  }
}

async function status(paths: ClusterPaths): Promise<number> {
  const state = readState(paths);
  if (!state) {
    out("down");
    return 1;
  }
  const alive = running(state);
  const dead = COMPONENTS.filter((c) => !alive[c]);
  const ready = dead.length === 0 && await healthy(paths, `${state.server}/readyz`);
  if (!ready) {
    out(`down${dead.length ? ` (not running: ${dead.join(", ")})` : " (apiserver not ready)"}`);
    return 1;
  }
  out(`up: ${state.server}`);
  if (state.addons?.["metrics-server"]) {
    out(`metrics-server: ${metricsServerRunning(state) ? "running" : "not running"}`);
  }
  out(`KUBECONFIG=${paths.adminKubeconfig}`);
  return 0;
}

async function kubectl(paths: ClusterPaths, args: string[]): Promise<number> {
  const state = readState(paths);
  if (!state) {
    err("the cluster is not up; run: deno task cluster up");
    return 1;
  }
  const child = new Deno.Command(state.binary, {
    args: ["kubectl", `--kubeconfig=${paths.adminKubeconfig}`, ...args],
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
