/**
 * The agent alone, for a remote side that runs it from source (`deno run app/agent/main.ts
 * agent …`): it imports no npm package, so it needs no package cache there, only Deno and these
 * files. `vkubelet agent …` (main.ts) and the compiled binary run the same code.
 * @module
 */
import { agentCommand } from "./mod.ts";

if (import.meta.main) {
  const args = Deno.args[0] === "agent" ? Deno.args.slice(1) : Deno.args;
  Deno.exit(await agentCommand(args));
}
