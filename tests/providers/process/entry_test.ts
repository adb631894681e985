import assert from "node:assert/strict";
import { entryArgv, envFileText } from "../../../providers/process/launch/entry.ts";
import type { ProcessIdentity } from "../../../providers/process/launch/identity.ts";

const root = { uid: 0, gid: 0 };
const user: ProcessIdentity = {
  uid: 1000,
  gid: 3000,
  groups: [],
  capabilities: [],
  noNewPrivs: true,
};

Deno.test("a non-root container enters its view through the host's chroot, as its user", () => {
  const result = entryArgv(user, root, "/state/ns/c");
  assert.ok(result.ok);
  const argv = result.argv;
  // Every program before the view is the host's, by absolute path.
  assert.match(argv[0], /^\/.*\/setpriv$/);
  assert.ok(argv.includes("--bounding-set=-all,+setuid,+setgid,+sys_chroot"), argv.join(" "));
  assert.ok(argv.includes("--nnp"));
  const chroot = argv.findIndex((a) => /^\/.*\/chroot$/.test(a));
  assert.deepEqual(argv.slice(chroot + 1, chroot + 5), [
    "--userspec=+1000:+3000",
    "--groups=+3000",
    "/state/ns/c",
    "/bin/sh",
  ]);
});

Deno.test("a root container enters its view first; setpriv there sets its exact capabilities", () => {
  const result = entryArgv({ ...user, uid: 0, gid: 0 }, root, "/state/ns/c");
  assert.ok(result.ok);
  assert.match(result.argv[0], /^\/.*\/chroot$/);
  assert.equal(result.argv[1], "/state/ns/c");
  assert.ok(result.argv.includes("--bounding-set=-all"));
});

Deno.test("the environment file quotes every value and hands odd names to env", () => {
  const text = envFileText({ A: "it's", "my.var": "x y", PATH: "/p" });
  assert.equal(
    text,
    [
      "unset _vk_env _vk_line OLDPWD",
      `export A='it'\\''s'`,
      "export PATH='/p'",
      `set -- ${text.split("set -- ")[1].split(" ")[0]} -- 'my.var=x y' "$@"`,
      "",
    ].join("\n"),
  );
  assert.match(text, /set -- \/\S*\/env -- /);
});
