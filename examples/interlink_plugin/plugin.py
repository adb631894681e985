#!/usr/bin/env python3
"""A reference interLink plugin: runs each pod's containers as local processes.

Standard library only. It answers the calls interLink's API server forwards to a plugin
(interlink-hq/interLink pkg/interlink/api/: POST /create, POST /delete, GET /status,
GET /getLogs, each with a JSON body) and so works behind interLink's API server or behind
vkubelet's `--provider interlink` with `target: plugin`. Start it with

    python3 plugin.py --listen 127.0.0.1:4000 --state ./state     # or --socket ./plugin.sock

A starting point for a plugin author: replace `start_pod`, `stop_pod` and `container_status`
with calls to your batch system. The image is not pulled: a container's command runs on this
host as it is. Pod state lives under --state, so a restarted plugin still knows its pods; the
processes run in their own session and outlive the plugin.
"""
import argparse
import datetime
import http.server
import json
import os
import shutil
import signal
import socketserver
import subprocess
import sys
import threading

STATE = "./state"
LOCK = threading.Lock()
MAX_BODY = 64 * 1024 * 1024
CAPACITY = {}  # what /pinglink reports: --cpu, --memory, --pods

# Each output line gets its RFC 3339 time, as the kubelet's `timestamps` shows it.
STAMPER = (
    "import sys,datetime\n"
    "for line in iter(sys.stdin.buffer.readline, b''):\n"
    "    t = datetime.datetime.now(datetime.timezone.utc)\n"
    "    s = t.strftime('%Y-%m-%dT%H:%M:%S.') + '%06d000Z ' % t.microsecond\n"
    "    sys.stdout.buffer.write(s.encode() + line); sys.stdout.buffer.flush()\n"
)


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_dir(uid):
    if not uid or "/" in uid or uid.startswith("."):
        raise ValueError("invalid pod UID")
    return os.path.join(STATE, uid)


def load(uid):
    try:
        with open(os.path.join(pod_dir(uid), "pod.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save(uid, record):
    path = os.path.join(pod_dir(uid), "pod.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


def write_volumes(base, data):
    """ConfigMaps, Secrets and projected volumes as files under base/volumes/<name>/."""
    for c in data.get("container") or []:
        for m in (c.get("configMaps") or []) + (c.get("projectedvolumemaps") or []):
            d = os.path.join(base, "volumes", m["metadata"]["name"])
            os.makedirs(d, exist_ok=True)
            for k, v in (m.get("data") or {}).items():
                with open(os.path.join(d, k.replace("/", "_")), "w") as f:
                    f.write(v)


def start_container(base, c, node):
    argv = (c.get("command") or []) + (c.get("args") or [])
    if not argv:
        argv = ["/bin/sh", "-c", "sleep infinity"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": base}
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
    log = os.path.join(base, c["name"] + ".log")
    exit_file = os.path.join(base, c["name"] + ".exit")
    script = '{ "$@"; echo $? > "$EXIT_FILE"; } 2>&1 | "$PY" -u -c "$STAMPER" >> "$LOG_FILE"'
    env.update({"EXIT_FILE": exit_file, "LOG_FILE": log, "PY": sys.executable,
                "STAMPER": STAMPER})
    proc = subprocess.Popen(["/bin/sh", "-c", script, "sh"] + argv, env=env, cwd=base,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    return {"pid": proc.pid, "startedAt": now_iso()}


def start_pod(data, node):
    """Starts the pod's containers; answers its job ID. Creating a known pod again is a no-op."""
    pod = data["pod"]
    uid = pod["metadata"]["uid"]
    existing = load(uid)
    if existing:
        return existing["jid"]
    base = pod_dir(uid)
    os.makedirs(base, exist_ok=True)
    write_volumes(base, data)
    record = {"jid": "job-" + uid[:8], "node": node, "meta": pod["metadata"], "containers": {}}
    for c in pod["spec"].get("containers") or []:
        record["containers"][c["name"]] = start_container(base, c, node)
    save(uid, record)
    return record["jid"]


def stop_pod(uid):
    record = load(uid)
    if not record:
        return False
    for c in record["containers"].values():
        try:
            os.killpg(c["pid"], signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(pod_dir(uid), ignore_errors=True)
    return True


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours is not alive
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def container_status(uid, name, c):
    exit_file = os.path.join(pod_dir(uid), name + ".exit")
    state = {"running": {"startedAt": c["startedAt"]}}
    if os.path.exists(exit_file) or not alive(c["pid"]):
        try:
            with open(exit_file) as f:
                code = int(f.read().strip() or "0")
        except (FileNotFoundError, ValueError):
            code = 137  # killed before it could write its exit code
        c.setdefault("finishedAt", now_iso())
        state = {"terminated": {"exitCode": code, "startedAt": c["startedAt"],
                                "finishedAt": c["finishedAt"],
                                "reason": "Completed" if code == 0 else "Error"}}
    return {"name": name, "state": state, "ready": "running" in state, "restartCount": 0,
            "image": "", "imageID": "", "containerID": "proc://%d" % c["pid"]}


def pod_status(uid, record):
    return {"name": record["meta"]["name"], "UID": uid, "namespace": record["meta"]["namespace"],
            "JID": record["jid"], "node": record.get("node", ""),
            "containers": [container_status(uid, n, c) for n, c in record["containers"].items()],
            "initContainers": []}


def statuses(pods):
    out = []
    if not pods:  # no pods asked: every pod (vkubelet lists them on start)
        uids = [d for d in os.listdir(STATE) if os.path.isdir(os.path.join(STATE, d))]
    else:
        uids = [p["metadata"]["uid"] for p in pods]
    for uid in uids:
        record = load(uid)
        if record:
            out.append(pod_status(uid, record))
    return out


def read_log(req):
    uid, name, opts = req["PodUID"], req["ContainerName"], req.get("Opts") or {}
    if opts.get("Previous"):
        raise LookupError("no previous log: this plugin keeps one run per container")
    record = load(uid)
    if not record or name not in record["containers"]:
        raise LookupError("no container %s in pod %s" % (name, uid))
    try:
        with open(os.path.join(pod_dir(uid), name + ".log"), "rb") as f:
            lines = f.read().splitlines(keepends=True)
    except FileNotFoundError:
        lines = []
    since = None
    if opts.get("SinceSeconds"):
        t = datetime.datetime.now(datetime.timezone.utc).timestamp() - opts["SinceSeconds"]
        since = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    elif opts.get("SinceTime") and not opts["SinceTime"].startswith("0001-"):
        since = datetime.datetime.fromisoformat(opts["SinceTime"].replace("Z", "+00:00"))
    out = []
    for line in lines:
        stamp, _, text = line.partition(b" ")
        if since:
            when = datetime.datetime.fromisoformat(stamp.decode()[:26] + "+00:00")
            if when < since:
                continue
        out.append(line if opts.get("Timestamps") else text)
    if opts.get("Tail"):
        out = out[-opts["Tail"]:]
    body = b"".join(out)
    if opts.get("Bytes"):
        body = body[:opts["Bytes"]]
    return body


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("request body over %d bytes" % MAX_BODY)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw) if raw else None

    def answer(self, code, payload, kind="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_call(self):
        path = self.path.split("?")[0]
        try:
            body = self.body()
            node = self.headers.get("vkubelet-node", "")
            with LOCK:
                if path == "/create" and self.command == "POST":
                    items = body if isinstance(body, list) else [body]
                    out = [{"PodUID": d["pod"]["metadata"]["uid"], "PodJID": start_pod(d, node)}
                           for d in items]
                    return self.answer(200, out if isinstance(body, list) else out[0])
                if path == "/delete" and self.command in ("POST", "DELETE"):
                    stop_pod(body["metadata"]["uid"])
                    return self.answer(200, {"deleted": body["metadata"]["uid"]})
                if path == "/status" and self.command == "GET":
                    return self.answer(200, statuses(body or []))
                if path == "/getLogs" and self.command == "GET":
                    return self.answer(200, read_log(body), "text/plain")
                if path == "/pinglink" and self.command == "POST":
                    # interLink's API server answers this itself; a plugin may too, so that it
                    # can stand behind `target: interlink` in a test.
                    return self.answer(200, {"status": "ok", "resources": CAPACITY})
            return self.answer(404, {"error": "no such call: %s %s" % (self.command, path)})
        except LookupError as err:
            return self.answer(404, {"error": str(err)})
        except (ValueError, KeyError, TypeError) as err:
            return self.answer(400, {"error": "bad request: %s" % err})

    do_GET = do_POST = do_DELETE = handle_call

    def log_message(self, fmt, *args):
        pass


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        request, _ = super().get_request()
        return request, ("unix", 0)


def main():
    global STATE, CAPACITY
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", help="HOST:PORT (port 0: any free port, printed)")
    parser.add_argument("--socket", help="a unix socket path instead of --listen")
    parser.add_argument("--state", default="./state", help="where pods' state and logs go")
    parser.add_argument("--cpu", default="8", help="the CPUs /pinglink reports")
    parser.add_argument("--memory", default="32Gi", help="the memory /pinglink reports")
    parser.add_argument("--pods", default="110", help="the pods /pinglink reports")
    args = parser.parse_args()
    CAPACITY = {"cpu": args.cpu, "memory": args.memory, "pods": args.pods}
    STATE = os.path.abspath(args.state)
    os.makedirs(STATE, exist_ok=True)
    if args.socket:
        if os.path.exists(args.socket):
            os.unlink(args.socket)
        server = UnixServer(args.socket, Handler)
        print("listening on unix:%s" % args.socket, flush=True)
    else:
        host, _, port = (args.listen or "127.0.0.1:4000").rpartition(":")
        server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
        print("listening on http://%s:%d" % (host, server.server_address[1]), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


if __name__ == "__main__":
    main()
