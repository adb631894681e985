/** `deno run -A tools/harness/apptainer/build.ts`: builds apptainer for the tests (see ./apptainer.ts). */
import { ensureApptainer } from "./apptainer.ts";

console.log(await ensureApptainer((line) => console.log(line)));
