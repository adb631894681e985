/**
 * The soak's command-line options (`deno task bench --soak DURATION ...`, see `soak.ts`).
 * @module
 */
import { parseDuration } from "./soak_stats.ts";

/** The soak's options (`deno task bench --soak DURATION ...`). */
export interface SoakFlags {
  seconds: number;
  pods: number;
  rollSeconds: number;
  sampleSeconds: number;
  /** undefined: a fresh `vkbench` cluster; else the running cluster of that name, as it is. */
  cluster?: string;
  heapAt: number[];
  qps?: number;
}

const SOAK_USAGE = `usage: deno task bench --soak DURATION [options]   (DURATION: 900s, 15m, 1h)
  --pods N              pods kept running (default 300)
  --roll-seconds S      roll the Deployment every S seconds (default 60)
  --sample-seconds S    sample RSS, heap and CPU every S seconds (default 30)
  --cluster NAME        use the running cluster NAME as it is (default: a fresh vkbench cluster)
  --heap-at A,B         heap snapshots after rounds A and B (needs VKBENCH_INSPECT=127.0.0.1:PORT)
  --qps N|shipped       vkubelet's client-side limit (default 500, burst 2N)`;

/** Parses the soak's flags; throws a RangeError naming the bad one. */
export function parseSoakFlags(args: string[]): SoakFlags {
  const flags: SoakFlags = {
    seconds: 3600,
    pods: 300,
    rollSeconds: 60,
    sampleSeconds: 30,
    heapAt: [],
    qps: 500,
  };
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split("=", 2);
    const value = () => inline ?? args[++i] ?? "";
    const int = (text: string) => {
      const n = Number(text);
      if (!Number.isInteger(n) || n <= 0) throw new RangeError(`${name} needs a positive integer`);
      return n;
    };
    switch (name) {
      case "--soak":
        flags.seconds = parseDuration(value());
        break;
      case "--pods":
        flags.pods = int(value());
        break;
      case "--roll-seconds":
        flags.rollSeconds = int(value());
        break;
      case "--sample-seconds":
        flags.sampleSeconds = int(value());
        break;
      case "--cluster":
        flags.cluster = value();
        break;
      case "--heap-at":
        flags.heapAt = value().split(",").map(int);
        break;
      case "--qps": {
        const v = value();
        flags.qps = v === "shipped" ? undefined : int(v);
        break;
      }
      default:
        throw new RangeError(`unknown soak option ${args[i]}\n${SOAK_USAGE}`);
    }
  }
  if (flags.heapAt.length && !Deno.env.get("VKBENCH_INSPECT")) {
    throw new RangeError("--heap-at needs VKBENCH_INSPECT=127.0.0.1:PORT (the inspector to use)");
  }
  return flags;
}
