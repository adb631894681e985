/**
 * A Chrome DevTools Protocol client for a Deno process started with `--inspect=127.0.0.1:PORT`:
 * {@link connectInspector} waits for the inspector and opens its WebSocket; {@link Cdp} sends
 * commands, matches answers by id and hands events to listeners. Used by `profile.ts` (CPU
 * profiles) and `heap.ts` (heap snapshots).
 * @module
 */

/** Connects to the inspector at `127.0.0.1:port`, waiting up to `waitMs` for it to appear. */
export async function connectInspector(port: number, waitMs: number): Promise<WebSocket> {
  const deadline = Date.now() + waitMs;
  while (true) {
    try {
      const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      const url = list[0]?.webSocketDebuggerUrl as string | undefined;
      if (url) {
        const ws = new WebSocket(url);
        await new Promise((resolve, reject) => {
          ws.onopen = resolve;
          ws.onerror = reject;
        });
        return ws;
      }
    } catch {
      // Not up yet.
    }
    if (Date.now() > deadline) throw new Error(`no inspector on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Sends CDP commands over one socket, matches the answers by id and dispatches events. */
export class Cdp {
  #ws: WebSocket;
  #id = 0;
  #pending = new Map<number, (value: { result?: unknown; error?: unknown }) => void>();
  #listeners = new Map<string, (params: Record<string, unknown>) => void>();

  constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.onmessage = (e) => {
      const msg = JSON.parse(e.data);
      if (msg.id !== undefined) this.#pending.get(msg.id)?.(msg);
      else if (msg.method) this.#listeners.get(msg.method)?.(msg.params ?? {});
    };
  }

  /** Calls `listener` with the params of every `method` event (one listener per method). */
  on(method: string, listener: (params: Record<string, unknown>) => void): void {
    this.#listeners.set(method, listener);
  }

  /** Sends one command and resolves to its result; rejects with the protocol's error. */
  async send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = ++this.#id;
    const answer = new Promise<{ result?: unknown; error?: unknown }>((r) =>
      this.#pending.set(id, r)
    );
    this.#ws.send(JSON.stringify({ id, method, params }));
    const msg = await answer;
    this.#pending.delete(id);
    if (msg.error) throw new Error(`${method}: ${JSON.stringify(msg.error)}`);
    return msg.result as T;
  }

  /** Closes the socket and waits for it to close. */
  async close(): Promise<void> {
    if (this.#ws.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((r) => this.#ws.addEventListener("close", r, { once: true }));
    this.#ws.close();
    await closed;
  }
}
