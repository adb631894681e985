/**
 * `$(VAR)` expansion in env values and commands, with the semantics of kubernetes/kubernetes
 * third_party/forked/golang/expansion/expand.go: `$(NAME)` becomes the value when NAME is known
 * and stays as written when it is not; `$$` is an escaped `$`; a `$` that starts no reference,
 * an unterminated `$(` and a trailing `$` are kept.
 * @module
 */

/** Looks a variable up; `undefined` when it is not defined. */
export type LookupVar = (name: string) => string | undefined;

/** Expands the references in `input`. */
export function expandVars(input: string, lookup: LookupVar): string {
  let out = "";
  let i = 0;
  while (i < input.length) {
    const dollar = input.indexOf("$", i);
    if (dollar < 0 || dollar === input.length - 1) break;
    out += input.slice(i, dollar);
    const next = input[dollar + 1];
    if (next === "$") {
      out += "$";
      i = dollar + 2;
    } else if (next === "(") {
      const close = input.indexOf(")", dollar + 2);
      if (close < 0) {
        // Unterminated: keep "$(" and go on scanning after it.
        out += "$(";
        i = dollar + 2;
      } else {
        const name = input.slice(dollar + 2, close);
        out += lookup(name) ?? `$(${name})`;
        i = close + 1;
      }
    } else {
      // Not a reference: keep "$" and the whole next character (a surrogate pair counts as one).
      const ch = String.fromCodePoint(input.codePointAt(dollar + 1)!);
      out += "$" + ch;
      i = dollar + 1 + ch.length;
    }
  }
  return out + input.slice(i);
}
