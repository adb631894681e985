/**
 * What `allowRootNamespaces` allows (issue 61 item 4): a listed namespace's jobs may run as root,
 * never past a container's `runAsNonRoot`; a namespace's own user passes `runAsNonRoot`.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { jobRequestFor } from "../../../providers/slurm/request/job_request.ts";

const UID = "4e2b9c71-0d3a-4f8e-9b56-2c7a1e0f3d85";

function config(extra: Record<string, unknown>) {
  const parsed = parseSlurmConfig({ cli: {}, sharedDir: "/shared", ...extra });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.config;
}

function pod(namespace: string): Pod {
  return {
    metadata: { namespace, name: "web", uid: UID },
    spec: { containers: [{ name: "main", image: "busybox", command: ["id", "-u"] }] },
  };
}

Deno.test("a namespace in allowRootNamespaces may run as root, but runAsNonRoot still refuses", () => {
  const c = config({ fileOwner: { uid: 0, gid: 0 }, allowRootNamespaces: ["ops"] });
  assert.ok(jobRequestFor(pod("ops"), c, "n", 0), "ops's job is allowed as root");
  assert.throws(() => jobRequestFor(pod("dev"), c, "n", 0), /list dev in allowRootNamespaces/);
  const nonRoot: Pod = pod("ops");
  nonRoot.spec!.securityContext = { runAsNonRoot: true };
  assert.throws(
    () => jobRequestFor(nonRoot, c, "n", 0),
    /^InvalidInputError: container has runAsNonRoot and image will run as root \(pod: "web_ops\(/,
  );
});

Deno.test("runAsNonRoot passes when the namespace's job user is not root", () => {
  const c = config({
    fileOwner: { uid: 65534, gid: 65534 },
    runAsUsers: { team: { user: "alice", uid: 1001, gid: 1001 } },
  });
  const p = pod("team");
  p.spec!.securityContext = { runAsNonRoot: true };
  assert.equal(jobRequestFor(p, c, "n", 0).options.uid, "alice");
  p.metadata!.namespace = "other";
  assert.equal(jobRequestFor(p, c, "n", 0).options.uid, "65534", "fileOwner's job");
});

Deno.test("allowRootNamespaces and stateDir are validated, naming the field", () => {
  const parsed = parseSlurmConfig({
    cli: {},
    sharedDir: "/shared",
    stateDir: "/shared/state",
    allowRootNamespaces: ["Ops"],
  });
  assert.equal(parsed.ok, false);
  const text = parsed.ok ? "" : parsed.errors.join("\n");
  assert.match(text, /allowRootNamespaces\.0: must be a namespace name/);
  assert.match(text, /stateDir: must not be sharedDir or under it/);
});
