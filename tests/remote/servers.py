"""Local stand-ins for object storage, for the remote-read tests (127.0.0.1 only).

Starts, on free ports:
  - moto's S3 server (an independent S3 implementation, in this process);
  - a proxy in front of it that logs every request (method, path, query,
    Range, If-Match) and injects faults on request: the next N requests
    answered with a status (503 bursts, 403), or an object overwritten
    right after the first GET of it (a change between footer and data);
  - a plain HTTP file server with single-range support over a directory
    (standing in for https:// URLs), logging its requests too; it also
    answers as the Hugging Face Hub does for the datasets under hub/OWNER/NAME
    of that directory (another revision than main: hub/OWNER/NAME@REV, `/`
    in REV as `~`): the tree API (/api/datasets/O/N/tree/REV/PREFIX, REV
    one percent-encoded segment, two files a page, `Link: rel="next"`) and
    resolve URLs (/datasets/O/N/resolve/REV/PATH). Paths are percent-decoded.

Prints one JSON line {"moto": PORT, "proxy": PORT, "http": PORT} and runs
until stdin closes (the test holding the pipe ends or drops it).

Control (on the proxy and the HTTP server):
  GET  /__log    -> JSON list of the requests since the last reset
  POST /__reset  -> clears the log and any faults
  POST /__fault  -> JSON body {"status": 503, "count": 3} or
                    {"overwrite": "/bucket/key"}: after the first GET of that
                    path is answered, the object is replaced (new bytes, new ETag);
                    {"delay": 5, "count": 2}: the next 2 requests wait 5 s first;
                    {"reset": 1}: the next GET with a body sends half of it and
                    drops the connection (proxy only)
"""

import http.client
import json
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote

import boto3
from moto.server import ThreadedMotoServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.log = []
        self.fail_status = None
        self.fail_count = 0
        self.overwrite = None
        self.delay, self.delay_count = 0.0, 0
        self.resets = 0

    def control(self, handler):
        """Handles /__ paths; True when handled."""
        if not handler.path.startswith("/__"):
            return False
        body = b""
        if handler.path == "/__log":
            with self.lock:
                body = json.dumps(self.log).encode()
        elif handler.path == "/__reset":
            with self.lock:
                self.log.clear()
                self.fail_status, self.fail_count, self.overwrite = None, 0, None
                self.delay, self.delay_count, self.resets = 0.0, 0, 0
        elif handler.path == "/__fault":
            n = int(handler.headers.get("Content-Length") or 0)
            spec = json.loads(handler.rfile.read(n) or b"{}")
            with self.lock:
                if "status" in spec:
                    self.fail_status, self.fail_count = spec["status"], spec.get("count", 1)
                if "overwrite" in spec:
                    self.overwrite = spec["overwrite"]
                if "delay" in spec:
                    self.delay, self.delay_count = float(spec["delay"]), spec.get("count", 1)
                if "reset" in spec:
                    self.resets = int(spec["reset"])
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        return True

    def record(self, handler):
        path, _, query = handler.path.partition("?")
        with self.lock:
            self.log.append(
                {
                    "method": handler.command,
                    "path": path,
                    "query": query,
                    "range": handler.headers.get("Range"),
                    "if_match": handler.headers.get("If-Match"),
                    "auth": handler.headers.get("Authorization"),
                }
            )
            delay = 0.0
            if self.delay_count > 0:
                self.delay_count -= 1
                delay = self.delay
            fail = None
            if self.fail_count > 0:
                self.fail_count -= 1
                fail = self.fail_status
        if delay:
            time.sleep(delay)
        return fail

    def take_reset(self):
        with self.lock:
            if self.resets > 0:
                self.resets -= 1
                return True
        return False


def proxy_handler(state, upstream_port):
    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def handle_any(self):
            if state.control(self):
                return
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            fail = state.record(self)
            if fail is not None:
                msg = b"<Error><Code>Injected</Code></Error>"
                self.send_response(fail)
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
                return
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port)
            headers = {k: v for k, v in self.headers.items()}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            status, extra = resp.status, []
            # S3 answers a valid range covering the whole object with 206
            # and a Content-Range; moto answers 200: answer as S3 does.
            if self.command == "GET" and status == 200 and self.headers.get("Range") and data:
                status, extra = 206, [("Content-Range", f"bytes 0-{len(data) - 1}/{len(data)}")]
            # The new version is in place before this answer reaches the
            # client, so its next request meets it.
            path = self.path.partition("?")[0]
            with state.lock:
                target = state.overwrite if self.command == "GET" and state.overwrite == path else None
                if target:
                    state.overwrite = None
            if target:
                # A new version of the object (other bytes, another ETag).
                # Same size, so that only its version tells it apart; signed
                # (moto refuses unsigned requests).
                bucket, _, key = target.lstrip("/").partition("/")
                s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{upstream_port}",
                                  aws_access_key_id="test", aws_secret_access_key="test",
                                  region_name="us-east-1")
                size = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
                s3.put_object(Bucket=bucket, Key=key, Body=b"PAR1" + os.urandom(max(size - 8, 0)) + b"PAR1")
            self.send_response(status)
            for k, v in extra:
                self.send_header(k, v)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                    self.send_header(k, v)
            # A HEAD's length is the object's, not the empty body's.
            length = resp.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(data)))
            self.end_headers()
            if self.command == "GET" and len(data) > 1 and state.take_reset():
                # Half the body, then the connection drops.
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                conn.close()
                return
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()
        do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = handle_any

    return Proxy


def hub_repo(owner, name, rev):
    """The folder (under the served root) of a Hub dataset at a revision:
    hub/OWNER/NAME for main, hub/OWNER/NAME@REV with `/` as `~` for others
    (refs/convert/parquet: hub/OWNER/NAME@refs~convert~parquet)."""
    base = f"hub/{owner}/{name}"
    return base if rev == "main" else base + "@" + rev.replace("/", "~")


def file_handler(state, root):
    class Files(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send_bytes(self, status, data, headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def do_GET(self):
            if state.control(self):
                return
            fail = state.record(self)
            if fail is not None:
                return self.send_bytes(fail, b"injected")
            # Matched while percent-encoded (a revision is one segment:
            # refs%2Fconvert%2Fparquet), then decoded, as a web server does.
            rel = self.path.partition("?")[0].lstrip("/")
            tree = re.fullmatch(r"api/datasets/([^/]+)/([^/]+)/tree/([^/]+)/?(.*)", rel)
            if tree:
                return self.tree(*map(unquote, tree.groups()))
            resolve = re.fullmatch(r"datasets/([^/]+)/([^/]+)/resolve/([^/]+)/(.*)", rel)
            if resolve:
                o, n, rev, path = map(unquote, resolve.groups())
                rel = f"{hub_repo(o, n, rev)}/{path}"
            else:
                rel = unquote(rel)
            full = os.path.realpath(os.path.join(root, rel))
            if not full.startswith(os.path.realpath(root) + os.sep) or not os.path.isfile(full):
                return self.send_bytes(404, b"not found")
            with open(full, "rb") as f:
                data = f.read()
            st = os.stat(full)
            etag = '"%x-%x"' % (st.st_mtime_ns, st.st_size)
            im = self.headers.get("If-Match")
            if im and im != etag:
                return self.send_bytes(412, b"precondition failed")
            base = [("ETag", etag), ("Accept-Ranges", "bytes"), ("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")]
            rng = self.headers.get("Range")
            if not rng:
                return self.send_bytes(200, data, base)
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            size = len(data)
            if not m or (m.group(1) == "" and m.group(2) == ""):
                return self.send_bytes(416, b"", base + [("Content-Range", f"bytes */{size}")])
            if m.group(1) == "":
                start, end = max(0, size - int(m.group(2))), size - 1
            else:
                start = int(m.group(1))
                end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            if start >= size or start > end:
                return self.send_bytes(416, b"", base + [("Content-Range", f"bytes */{size}")])
            self.send_bytes(206, data[start : end + 1], base + [("Content-Range", f"bytes {start}-{end}/{size}")])

        do_HEAD = do_GET

        def tree(self, owner, name, rev, prefix):
            repo = os.path.join(root, hub_repo(owner, name, rev))
            if not os.path.isdir(repo):
                return self.send_bytes(404, b'{"error": "not found"}')
            base = os.path.join(repo, prefix)
            if not os.path.isdir(base):
                return self.send_bytes(404, b'{"error": "not a folder"}')
            entries = []
            for dirpath, dirs, files in os.walk(base):
                dirs.sort()
                for d in dirs:
                    entries.append({"type": "directory", "oid": "0", "size": 0,
                                    "path": os.path.relpath(os.path.join(dirpath, d), repo)})
                for f in sorted(files):
                    p = os.path.join(dirpath, f)
                    entries.append({"type": "file", "oid": "0", "size": os.path.getsize(p),
                                    "path": os.path.relpath(p, repo)})
            query = self.path.partition("?")[2]
            cursor = int(dict(q.split("=", 1) for q in query.split("&") if "=" in q).get("cursor", 0))
            page = entries[cursor : cursor + 2]
            headers = [("Content-Type", "application/json")]
            if cursor + 2 < len(entries):
                nxt = f"http://127.0.0.1:{self.server.server_port}/api/datasets/{owner}/{name}/tree/{quote(rev, safe='')}"
                nxt += (f"/{quote(prefix)}" if prefix else "") + f"?recursive=true&cursor={cursor + 2}"
                headers.append(("Link", f'<{nxt}>; rel="next"'))
            self.send_bytes(200, json.dumps(page).encode(), headers)

        def do_POST(self):
            if not state.control(self):
                self.send_bytes(405, b"")

    return Files


def main():
    root = sys.argv[1]
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    moto_port = moto._server.server_port
    proxy_state, file_state = State(), State()
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), proxy_handler(proxy_state, moto_port))
    files = ThreadingHTTPServer(("127.0.0.1", 0), file_handler(file_state, root))
    for s in (proxy, files):
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(json.dumps({"moto": moto_port, "proxy": proxy.server_port, "http": files.server_port}), flush=True)
    sys.stdin.read()
    proxy.shutdown()
    files.shutdown()
    moto.stop()


if __name__ == "__main__":
    main()
