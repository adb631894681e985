/**
 * `kubectl port-forward` to a process pod: the pod shares the host's network, so each stream
 * is connected to 127.0.0.1:<port> and bytes are copied both ways until both sides are done.
 * Only a port of the pod (./pod_ports.ts) is reached: any other is refused with the container
 * runtime's error for a port nothing listens on in the pod's network namespace (containerd
 * internal/cri/server/sandbox_portforward_linux.go `portForward`), which the kubelet prefixes
 * with "error forwarding port <port> to pod <pod>, uid <uid>:". A pod with its own network
 * namespace is reached inside it at 127.0.0.1:<port>, as containerd dials localhost in the
 * sandbox's namespace, through a relay (../network/dial.ts); every port there is the pod's.
 * @module
 */
import { InvalidInputError, type PortForwardStream } from "../../../provider/mod.ts";
import { dialInNetns } from "../network/dial.ts";

/** Connects `stream` to 127.0.0.1:`port`; resolves when both directions are done. */
export async function forwardPort(
  port: number,
  stream: PortForwardStream,
  options: {
    signal?: AbortSignal;
    pod: string;
    owns: (port: number) => boolean;
    netns?: string;
  },
): Promise<void> {
  const { signal } = options;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new InvalidInputError(`port ${port} is not a TCP port number (1-65535)`);
  }
  if (options.netns) return await forwardInNetns(options.netns, port, stream, options);
  if (!options.owns(port)) {
    throw new Error(
      `failed to execute portforward in network namespace "host": IPv4: dial tcp4 127.0.0.1:${port}: connect: connection refused (port ${port} is not a containerPort of pod ${options.pod} and none of its processes listens on it)`,
    );
  }
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const close = () => {
    try {
      conn.close();
    } catch {
      // closed already
    }
  };
  signal?.addEventListener("abort", close, { once: true });
  try {
    // Half-close towards the target when the client is done sending, and keep reading its answer.
    const toTarget = stream.readable.pipeTo(conn.writable, { preventClose: true })
      .then(() => conn.closeWrite()).catch(() => {});
    const fromTarget = conn.readable.pipeTo(stream.writable).catch(() => {});
    await Promise.all([toTarget, fromTarget]);
  } finally {
    signal?.removeEventListener("abort", close);
    close();
  }
}

/** Relays `stream` to 127.0.0.1:`port` inside the pod's network namespace. */
async function forwardInNetns(
  netns: string,
  port: number,
  stream: PortForwardStream,
  options: { signal?: AbortSignal; pod: string },
): Promise<void> {
  const conn = dialInNetns(netns, "127.0.0.1", port);
  const { signal } = options;
  const close = () => conn.close();
  signal?.addEventListener("abort", close, { once: true });
  try {
    const toTarget = stream.readable.pipeTo(conn.writable).catch(() => {});
    const fromTarget = conn.readable.pipeTo(stream.writable).catch(() => {});
    const { code, stderr } = await conn.done;
    await Promise.all([toTarget, fromTarget]);
    if (code !== 0 && /refused|timed out|unreachable/i.test(stderr)) {
      throw new Error(
        `failed to execute portforward in network namespace "${netns}": IPv4: dial tcp4 127.0.0.1:${port}: connect: connection refused`,
      );
    }
  } finally {
    signal?.removeEventListener("abort", close);
    close();
  }
}
