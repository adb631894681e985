/**
 * apptainer for the slurm provider's tests: v1.3.6 built from its Go module once into
 * `.cache/apptainer/` (`mconfig --without-suid`, `make`, `make install`: Debian's
 * `squashfs-tools` and `libseccomp-dev` first; minutes on 2 cores), run unprivileged through
 * user namespaces. Nothing can be pulled here, so images are sandbox directories made from the
 * host's busybox and the libraries it links.
 * @module
 */
import { cacheDir } from "../../cluster/build.ts";

/** The apptainer release the tests are written against. */
export const APPTAINER_VERSION = "v1.3.6";

const root = `${cacheDir}/apptainer`;

/** The installed binary's path (whether or not it is built yet). */
export const apptainerBin = `${root}/install/bin/apptainer`;

async function run(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
) {
  const out = await new Deno.Command(cmd, { args, ...options, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    const tail = new TextDecoder().decode(out.stderr).split("\n").slice(-20).join("\n");
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${out.code}):\n${tail}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Whether apptainer is built. */
export async function haveApptainer(): Promise<boolean> {
  return await Deno.stat(apptainerBin).then(() => true, () => false);
}

/** Builds and installs apptainer unless it is there; its path. */
export async function ensureApptainer(progress?: (line: string) => void): Promise<string> {
  if (await haveApptainer()) return apptainerBin;
  progress?.(`building apptainer ${APPTAINER_VERSION} from its Go module; later runs reuse it`);
  await run("apt-get", [
    "install",
    "-y",
    "-qq",
    "--no-install-recommends",
    "squashfs-tools",
    "libseccomp-dev",
  ], {
    env: { DEBIAN_FRONTEND: "noninteractive" },
  });
  await Deno.mkdir(root, { recursive: true });
  // Go takes the working directory from PWD: the physical path, or it finds the module twice.
  const real = await Deno.realPath(root);
  // Its own build cache: apptainer's Makefile runs `go clean -cache` before building starter.
  const env = {
    GOMODCACHE: `${real}/gomod`,
    GOCACHE: `${real}/gocache`,
    GOFLAGS: "-modcacherw -buildvcs=false",
  };
  const module = JSON.parse(
    await run("go", [
      "mod",
      "download",
      "-json",
      `github.com/apptainer/apptainer@${APPTAINER_VERSION}`,
    ], { env }),
  ) as { Dir: string };
  const src = `${real}/src`;
  await Deno.remove(src, { recursive: true }).catch(() => {});
  await run("cp", ["-r", module.Dir, src]);
  await run("chmod", ["-R", "u+w,a+rX", src]);
  // The module has no VERSION file and no git: mconfig reads the version from it.
  await Deno.writeTextFile(`${src}/VERSION`, APPTAINER_VERSION.slice(1));
  await run("sh", [
    "-c",
    'find . -type f \\( -name "*.sh" -o -path "*/scripts/*" -o -path "*/makeit/*" -o -name mconfig \\) -exec chmod +x {} +',
  ], { cwd: src });
  await run("./mconfig", ["--without-suid", "-b", "builddir", `--prefix=${real}/install`], {
    cwd: src,
    env: { ...env, PWD: src },
  });
  await run("make", ["-j2"], { cwd: `${src}/builddir`, env: { ...env, PWD: `${src}/builddir` } });
  await run("make", ["install"], {
    cwd: `${src}/builddir`,
    env: { ...env, PWD: `${src}/builddir` },
  });
  return apptainerBin;
}

/**
 * A sandbox image (a root directory apptainer runs as is) at `dir`: busybox and the libraries it
 * links, `/bin/sh` and the applets the tests use, `/etc/passwd`, a runscript that echoes its
 * arguments, an environment file setting `FROM_IMAGE` and `OVERRIDE`, and `/etc/image-marker`
 * (only the image has it); turned into a sandbox by `apptainer build --sandbox` (which adds its
 * `/.singularity.d/actions`), readable by everyone.
 */
export async function busyboxSandbox(dir: string): Promise<string> {
  const rootfs = `${dir}.rootfs`;
  for (const sub of ["bin", "etc", "tmp", "var/tmp", "proc", "sys", "dev", "root", "home"]) {
    await Deno.mkdir(`${rootfs}/${sub}`, { recursive: true });
  }
  const busybox = (await run("sh", ["-c", "command -v busybox"])).trim();
  await Deno.copyFile(busybox, `${rootfs}/bin/busybox`);
  // A static busybox (Debian's) links nothing: ldd says so and fails.
  const linked = await run("ldd", [busybox]).catch(() => "");
  for (const [lib] of linked.matchAll(/(\/\S+\.so[.\d]*)/g)) {
    await Deno.mkdir(`${rootfs}${lib.slice(0, lib.lastIndexOf("/"))}`, { recursive: true });
    await Deno.copyFile(lib, `${rootfs}${lib}`);
  }
  for (const applet of ["sh", "echo", "cat", "ls", "sleep", "env", "id", "printf"]) {
    await Deno.symlink("busybox", `${rootfs}/bin/${applet}`);
  }
  await Deno.writeTextFile(`${rootfs}/etc/passwd`, "root:x:0:0:root:/root:/bin/sh\n");
  await Deno.writeTextFile(`${rootfs}/etc/group`, "root:x:0:\n");
  await Deno.writeTextFile(`${rootfs}/etc/image-marker`, "from the image\n");
  await Deno.mkdir(`${rootfs}/.singularity.d/env`, { recursive: true });
  await Deno.writeTextFile(
    `${rootfs}/.singularity.d/runscript`,
    '#!/bin/sh\necho "runscript: $*"\n',
    {
      mode: 0o755,
    },
  );
  await Deno.writeTextFile(
    `${rootfs}/.singularity.d/env/90-environment.sh`,
    "export FROM_IMAGE=image\nexport OVERRIDE=image\n",
  );
  await run(apptainerBin, ["-q", "build", "--sandbox", dir, rootfs]);
  await run("chmod", ["-R", "a+rX", dir]);
  return dir;
}
