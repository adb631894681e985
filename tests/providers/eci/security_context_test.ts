/**
 * A pod's security context on ECI: what ECI's API can express reaches the create request (and
 * the emulator checks every request against Alibaba's published metadata); what it cannot —
 * capabilities.drop, allowPrivilegeEscalation: false, runAsNonRoot or runAsGroup on an init
 * container — fails the pod naming the field, where before it ran as the image's user with every
 * default capability.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { eciPod, startProviderOnEmulator } from "../../../tools/harness/eci/env.ts";

/** A restricted container, as Pod Security's "restricted" level asks for. */
const RESTRICTED = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
};

Deno.test("the security context ECI can express reaches the request, the pod's under the container's", async () => {
  const env = await startProviderOnEmulator();
  try {
    const pod = eciPod("ok", {
      securityContext: { runAsUser: 1000, runAsNonRoot: true },
      initContainers: [{ name: "init", image: "busybox", securityContext: { runAsUser: 2000 } }],
      containers: [{
        name: "main",
        image: "busybox",
        securityContext: {
          runAsGroup: 3000,
          readOnlyRootFilesystem: true,
          capabilities: { add: ["NET_ADMIN"] },
        },
      }],
    });
    await env.provider.createPod(pod, {});
    const [group] = [...env.emu.groups.values()];
    const p = group.params;
    assert.equal(p.get("Container.1.SecurityContext.RunAsUser"), "1000");
    assert.equal(p.get("Container.1.SecurityContextRunAsGroup"), "3000");
    assert.equal(p.get("Container.1.SecurityContextRunAsNonRoot"), "true");
    assert.equal(p.get("Container.1.SecurityContext.ReadOnlyRootFilesystem"), "true");
    assert.equal(p.get("Container.1.SecurityContext.Capability.Add.1"), "NET_ADMIN");
    assert.equal(p.get("InitContainer.1.SecurityContext.RunAsUser"), "2000");
    assert.deepEqual(env.emu.strays, []);
  } finally {
    await env.close();
  }
});

Deno.test("what ECI cannot enforce fails the pod naming the field, and nothing is created", async () => {
  const env = await startProviderOnEmulator();
  const cases: [string, Partial<NonNullable<Pod["spec"]>>, RegExp][] = [
    [
      "drop",
      { containers: [{ name: "main", image: "busybox", securityContext: RESTRICTED }] },
      /spec\.containers\[0\]\.securityContext\.capabilities\.drop: ECI's API has no field for it on a container, so ECI cannot enforce it/,
    ],
    [
      "no-escalation",
      {
        containers: [{
          name: "main",
          image: "busybox",
          securityContext: { runAsUser: 1000, allowPrivilegeEscalation: false },
        }],
      },
      /spec\.containers\[0\]\.securityContext\.allowPrivilegeEscalation: .*cannot enforce it/,
    ],
    [
      "init-nonroot",
      {
        securityContext: { runAsNonRoot: true },
        initContainers: [{ name: "init", image: "busybox" }],
      },
      /spec\.initContainers\[0\]\.securityContext\.runAsNonRoot: ECI's API has no field for it on an init container.*set runAsUser to a non-zero uid/,
    ],
    [
      "init-group",
      {
        initContainers: [{
          name: "init",
          image: "busybox",
          securityContext: { runAsUser: 5, runAsGroup: 5 },
        }],
      },
      /spec\.initContainers\[0\]\.securityContext\.runAsGroup: .*cannot enforce it/,
    ],
    [
      "root",
      { securityContext: { runAsNonRoot: true, runAsUser: 0 } },
      /spec\.containers\[0\]\.securityContext\.runAsUser: 0 breaks the runAsNonRoot policy/,
    ],
  ];
  try {
    for (const [name, spec, message] of cases) {
      await assert.rejects(env.provider.createPod(eciPod(name, spec), {}), (err: Error) => {
        assert.ok(isInvalidInput(err), `${name}: ${err}`);
        assert.match(err.message, message);
        return true;
      });
    }
    assert.equal(env.emu.groups.size, 0, "no group was created");
  } finally {
    await env.close();
  }
});
