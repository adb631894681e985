/**
 * End-to-end set-up through the REAL apiserver: a kubelet API server on 127.0.0.1 with the
 * streaming handler and the mock (serving certificate from the cluster CA, client CA = cluster
 * CA so the apiserver's kubelet client certificate is accepted), a Node object pointing at it
 * (InternalIP 127.0.0.1, daemonEndpoints.kubeletEndpoint.Port) and a pod bound to it, which
 * the mock runs. Plus kubectl runners for the control plane's kubectl and Debian's 1.20.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../base/clock.ts";
import { alwaysAllow, KubeletServer } from "../../core/kubelet_api/mod.ts";
import { fileCertificates } from "../../x509/mod.ts";
import {
  createStreamingHandler,
  type KubeletStreamingHandler,
} from "../../core/kubelet_api/streaming/handler.ts";
import type { ContainerRef, ExecOptions, Provider, TerminalSize } from "../../provider/mod.ts";
import { createProvider, type MockProvider } from "../../providers/mock/mod.ts";
import type { TestCluster } from "../cluster/harness.ts";
import { log, overrideProvider } from "./handler_server.ts";

/** One kubectl: how to run it. */
export interface Kubectl {
  name: string;
  /** argv before the kubectl arguments (binary first). */
  argv: string[];
}

/** The control plane's kubectl (WebSocket to the apiserver where it can). */
export function clusterKubectl(cluster: TestCluster): Kubectl {
  return {
    name: "kubectl (control plane)",
    argv: [cluster.binary, "kubectl", `--kubeconfig=${cluster.kubeconfigPath}`],
  };
}

/**
 * Debian's kubectl 1.20 (SPDY end to end): `$VKUBELET_KUBECTL_1_20`, else `kubectl` on PATH
 * when it reports v1.20. Undefined when neither is there.
 */
export async function debianKubectl(cluster: TestCluster): Promise<Kubectl | undefined> {
  const candidates = [Deno.env.get("VKUBELET_KUBECTL_1_20"), "kubectl"].filter((c) => c);
  for (const binary of candidates as string[]) {
    try {
      const out = await new Deno.Command(binary, {
        args: ["version", "--client", "--short"],
        stdout: "piped",
        stderr: "null",
      }).output();
      if (/v1\.20\./.test(new TextDecoder().decode(out.stdout))) {
        return {
          name: "kubectl 1.20 (Debian)",
          argv: [binary, `--kubeconfig=${cluster.kubeconfigPath}`],
        };
      }
    } catch {
      // not installed
    }
  }
  return undefined;
}

/** Runs kubectl; stdin from `stdinFile` or nothing. */
export async function runKubectl(
  kubectl: Kubectl,
  args: string[],
  options: { stdinFile?: string; signal?: AbortSignal } = {},
): Promise<{ code: number; stdout: Uint8Array; stderr: string }> {
  const child = new Deno.Command(kubectl.argv[0], {
    args: [...kubectl.argv.slice(1), ...args],
    stdin: options.stdinFile ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
    signal: options.signal,
  }).spawn();
  if (options.stdinFile) {
    const file = await Deno.open(options.stdinFile);
    await file.readable.pipeTo(child.stdin);
  }
  const out = await child.output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

/** The mock plus a `resize-probe` command that prints each terminal size it gets. */
export function recordingProvider(mock: MockProvider, sizes: TerminalSize[]): Provider {
  return overrideProvider(mock, {
    async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
      if (options.command[0] !== "resize-probe") return await mock.runInContainer(ref, options);
      const until = Number(options.command[1] ?? 120);
      const writer = options.io.stdout!.getWriter();
      try {
        for await (const size of options.io.resize ?? []) {
          sizes.push(size);
          await writer.write(new TextEncoder().encode(`${size.width}x${size.height}\r\n`));
          if (size.width === until) return 0;
        }
        return 1;
      } finally {
        writer.releaseLock();
      }
    },
  });
}

/** A node, a pod and the kubelet server behind them. */
export interface VirtualNode extends AsyncDisposable {
  nodeName: string;
  namespace: string;
  podName: string;
  port: number;
  handler: KubeletStreamingHandler;
  /** Terminal sizes `resize-probe` saw. */
  sizes: TerminalSize[];
  /** Sets or clears `status.declaredFeatures`; returns what the apiserver kept. */
  declareFeatures(features: string[]): Promise<string[] | undefined>;
}

async function must(cluster: TestCluster, args: string[], stdin?: string): Promise<string> {
  const out = await cluster.kubectl(args, stdin === undefined ? {} : { stdin });
  if (out.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

/** Starts the server and registers node and pod; dispose to delete them and stop. */
export async function startVirtualNode(cluster: TestCluster): Promise<VirtualNode> {
  const nodeName = `vk-stream-${crypto.randomUUID().slice(0, 6)}`;
  const shutdown = new AbortController();
  const mock = createProvider({}, {
    nodeName,
    log,
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 0,
    signal: shutdown.signal,
  }) as MockProvider;
  const sizes: TerminalSize[] = [];
  const pods: Pod[] = [];
  const handler = createStreamingHandler({ log, clock: realClock, lingerMs: 5_000 });
  const files = await cluster.issueServingCert(nodeName, ["127.0.0.1", "localhost"]);
  const server = new KubeletServer({
    provider: recordingProvider(mock, sizes),
    nodeName,
    podCache: () => pods,
    log,
    clock: realClock,
    auth: {
      clientCaPem: await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`),
      accessReviewer: alwaysAllow,
    },
    streaming: handler,
    hostname: "127.0.0.1",
    port: 0,
    certificates: fileCertificates({ ...files, clock: realClock, log, pollIntervalMs: 60_000 }),
    shutdownGraceMs: 1_000,
  });
  const running = server.run(shutdown.signal);
  await Promise.race([server.ready, running]);
  const port = server.address!.port;

  await must(
    cluster,
    ["create", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: nodeName, labels: { type: "virtual-kubelet" } },
    }),
  );
  const status = {
    addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
    daemonEndpoints: { kubeletEndpoint: { Port: port } },
  };
  await must(cluster, [
    "patch",
    "node",
    nodeName,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status }),
  ]);
  const namespace = await cluster.newNamespace("vk-stream");
  const podName = "web";
  const forever = (key: string) => ({ key, operator: "Exists" });
  await must(
    cluster,
    ["-n", namespace, "create", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: podName, namespace },
      spec: {
        nodeName,
        containers: [{ name: "app", image: "busybox", stdin: true }],
        tolerations: [
          forever("node.kubernetes.io/unreachable"),
          forever("node.kubernetes.io/not-ready"),
        ],
      },
    }),
  );
  // kubectl port-forward wants a Running pod; no pod controller runs here, so say so directly.
  const now = new Date().toISOString();
  await must(cluster, [
    "-n",
    namespace,
    "patch",
    "pod",
    podName,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({
      status: {
        phase: "Running",
        podIP: "127.0.0.1",
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }],
        containerStatuses: [{
          name: "app",
          image: "busybox",
          imageID: "",
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: now } },
        }],
      },
    }),
  ]);
  const pod = JSON.parse(
    await must(cluster, ["-n", namespace, "get", "pod", podName, "-o", "json"]),
  );
  pods.push(pod);
  await mock.createPod(pod, {});

  return {
    nodeName,
    namespace,
    podName,
    port,
    handler,
    sizes,
    async declareFeatures(features) {
      await must(cluster, [
        "patch",
        "node",
        nodeName,
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status: { declaredFeatures: features.length ? features : null } }),
      ]);
      const node = JSON.parse(await must(cluster, ["get", "node", nodeName, "-o", "json"]));
      return node.status?.declaredFeatures;
    },
    async [Symbol.asyncDispose]() {
      await cluster.kubectl(["delete", "namespace", namespace, "--wait=false"]);
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      shutdown.abort();
      await running;
      await handler.drained();
      await mock.close();
    },
  };
}
