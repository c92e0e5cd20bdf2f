"""Driver of benches/remote.sh: Parquet shards in a local S3 server (moto, on
127.0.0.1), checked by preflight, DuckDB (httpfs) and Polars
(`scan_parquet('s3://...')`), whole processes, same run.

    python benches/remote.py WORK_DIR

Environment: PREFLIGHT_BIN (release binary), PEER_PY (the Python with
polars/duckdb, default .venv/bin/python of the repository), DUCKDB_PY (a Python
whose duckdb can load httpfs; default PEER_PY), TOKENS_SRC (tokens_bad.parquet
of the shared benchmark, sliced into shards), SHARDS (per set, default 500),
LABEL_ROWS (default 20000), TOKEN_ROWS (default 1000), REPS (default 3,
median kept), SCHEMAS (../shared/bench/schemas), SERVER (moto, default, or
s3s: the timed runs and the floor against s3s-fs, S3S_FS its binary, with
TCP_NODELAY set on its connections by benches/nodelay.c unless
S3S_NODELAY=0).

Two sets of SHARDS objects each, 2 x 500 = 1,000 by default:
  labels/  the shared benchmark's labels shape (label int64, f0..f3 float32,
           snappy, statistics) with 5 out-of-range labels planted in 3 shards
           and the ignore index -100 in 2 others (as gen.py plants them);
  tokens/  tokens_bad.parquet (input_ids, attention_mask, label; zstd,
           statistics, v1 pages, as gen.py writes it) cut into shards of
           TOKEN_ROWS rows, its planted violations where they fall.
The checks are peers.py's (the same rules as ../shared/bench/schemas).

Each command runs once untimed, then REPS times against moto directly
(timed), then once more through the counting proxy of
tests/remote/servers.py: requests (by method) and bytes (the ranges asked
for; a GET without a range is the whole object) per file from its log. Every
tool must report the same counts, or the run fails.
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = sys.argv[1]
BIN = os.environ.get("PREFLIGHT_BIN", os.path.join(ROOT, "target/bench/release/preflight"))
PEER_PY = os.environ.get("PEER_PY", os.path.join(ROOT, ".venv/bin/python"))
DUCKDB_PY = os.environ.get("DUCKDB_PY", PEER_PY)
TOKENS_SRC = os.environ.get("TOKENS_SRC", os.path.join(ROOT, "bench/data/tokens_bad.parquet"))
SCHEMAS = os.environ.get("SCHEMAS", os.path.join(ROOT, "..", "shared", "bench", "schemas"))
SHARDS = int(os.environ.get("SHARDS", 500))
LABEL_ROWS = int(os.environ.get("LABEL_ROWS", 20000))
TOKEN_ROWS = int(os.environ.get("TOKEN_ROWS", 1000))
REPS = int(os.environ.get("REPS", 3))
SERVER = os.environ.get("SERVER", "moto")
S3S_FS = os.environ.get("S3S_FS", os.path.join(ROOT, "target/tools/bin/s3s-fs"))
KEYS = dict(aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1")

NUM_CLASSES, IGNORE, VOCAB, MAX_LEN = 1000, -100, 30522, 512


def make_shards():
    """The two sets under WORK/labels and WORK/tokens (kept between runs)."""
    labels = os.path.join(WORK, "labels")
    if not os.path.isdir(labels):
        os.makedirs(labels + ".tmp", exist_ok=True)
        schema = pa.schema([("label", pa.int64())] + [(f"f{i}", pa.float32()) for i in range(4)])
        plants = {3: [(0, 1000), (LABEL_ROWS // 3, -1)], SHARDS // 2: [(7, 5000)], SHARDS - 1: [(1, -1), (LABEL_ROWS - 1, 1000)]}
        for s in range(SHARDS):
            r = np.random.default_rng([11, s])
            label = r.integers(0, NUM_CLASSES, LABEL_ROWS, dtype=np.int64)
            if s in (SHARDS // 4, SHARDS // 3):
                label[LABEL_ROWS // 2] = IGNORE  # valid: must not count (gen.py plants two)
            for at, v in plants.get(s, []):
                label[at] = v
            cols = {"label": label, **{f"f{i}": r.random(LABEL_ROWS, dtype=np.float32) for i in range(4)}}
            pq.write_table(pa.table(cols, schema=schema), f"{labels}.tmp/part-{s:05d}.parquet",
                           compression="snappy", write_statistics=True)
        os.rename(labels + ".tmp", labels)
    tokens = os.path.join(WORK, "tokens")
    if not os.path.isdir(tokens):
        os.makedirs(tokens + ".tmp", exist_ok=True)
        src = pq.ParquetFile(TOKENS_SRC)
        need, s, buf = SHARDS * TOKEN_ROWS, 0, None
        for g in range(src.num_row_groups):
            t = src.read_row_group(g)
            buf = t if buf is None else pa.concat_tables([buf, t])
            while buf.num_rows >= TOKEN_ROWS and s < SHARDS:
                pq.write_table(buf.slice(0, TOKEN_ROWS), f"{tokens}.tmp/part-{s:05d}.parquet",
                               compression="zstd", write_statistics=True)
                buf, s = buf.slice(TOKEN_ROWS), s + 1
            if s >= SHARDS:
                break
        assert s == SHARDS, f"{TOKENS_SRC} holds fewer than {need} rows"
        os.rename(tokens + ".tmp", tokens)


def upload(port):
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", **KEYS)
    if "bench" not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket="bench")
    jobs = [(os.path.join(WORK, d, n), f"{d}/{n}") for d in ("labels", "tokens")
            for n in sorted(os.listdir(os.path.join(WORK, d)))]
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda j: s3.upload_file(j[0], "bench", j[1]), jobs))
    return {k: os.path.getsize(p) for p, k in jobs}


PEER = r'''
import json, os, sys, time
tool, kind, endpoint = sys.argv[1:4]
NUM_CLASSES, IGNORE, VOCAB, MAX_LEN, TOK_CLASSES = 1000, -100, 30522, 512, 2
url = f"s3://bench/{kind}/*.parquet"
if tool == "duckdb":
    import duckdb
    con = duckdb.connect()
    try:
        con.execute("LOAD httpfs")
    except Exception:
        # Not downloadable here: the extension as its PyPI package ships it.
        import glob, duckdb_extension_httpfs as ext
        path, = glob.glob(os.path.join(os.path.dirname(ext.__file__), "extensions",
                                       "v" + duckdb.__version__, "httpfs.duckdb_extension"))
        con.execute(f"LOAD '{path}'")
    host = endpoint.removeprefix("http://")
    con.execute(f"""CREATE SECRET (TYPE s3, KEY_ID 'bench', SECRET 'bench', REGION 'us-east-1',
                    ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)""")
    bad = f"((label < 0 OR label >= {NUM_CLASSES}) AND label <> {IGNORE})"
    if kind == "labels":
        row = con.execute(f"SELECT count(*) FROM read_parquet('{url}') WHERE {bad}").fetchone()
    else:
        row = con.execute(f"""SELECT
          coalesce(sum(len(list_filter(input_ids, lambda x: x < 0 OR x >= {VOCAB}))), 0),
          count(*) FILTER (WHERE len(input_ids) > {MAX_LEN}),
          coalesce(sum(len(list_filter(attention_mask, lambda x: x NOT IN (0, 1)))), 0),
          count(*) FILTER (WHERE (label < 0 OR label >= {TOK_CLASSES}) AND label <> {IGNORE})
          FROM read_parquet('{url}')""").fetchone()
else:
    import polars as pl
    opts = {"aws_endpoint_url": endpoint, "aws_access_key_id": "bench", "aws_secret_access_key": "bench",
            "aws_region": "us-east-1", "aws_allow_http": "true"}
    lf = pl.scan_parquet(url, storage_options=opts)
    def bad(c, k):
        return ((c < 0) | (c >= k)) & (c != IGNORE)
    if kind == "labels":
        row = lf.filter(bad(pl.col("label"), NUM_CLASSES)).select(pl.len()).collect(engine="streaming").row(0)
    else:
        ids, m, lab, e = pl.col("input_ids"), pl.col("attention_mask"), pl.col("label"), pl.element()
        row = lf.select(
            ids.list.filter((e < 0) | (e >= VOCAB)).list.len().sum().alias("a"),
            (ids.list.len() > MAX_LEN).sum().alias("b"),
            m.list.filter(~e.is_in([0, 1])).list.len().sum().alias("c"),
            bad(lab, TOK_CLASSES).sum().alias("d"),
        ).collect(engine="streaming").row(0)
print(json.dumps([int(v) for v in row]))
'''


def counts_of_preflight(out):
    report = json.loads(out)
    by = {(c["column"], c["rule"]): c["violations"] for c in report["checks"]}
    if "input_ids" in {c for c, _ in by}:
        return [by.get(("input_ids", "index"), 0), by.get(("input_ids", "max_length"), 0),
                by.get(("attention_mask", "values"), 0), by.get(("label", "class"), 0)]
    return [by.get(("label", "class"), 0)]


def command(tool, kind, endpoint):
    env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench",
               AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")
    env.pop("AWS_PROFILE", None)
    if tool == "preflight":
        return [BIN, "check", "--format", "json", "-s", os.path.join(SCHEMAS, f"{kind}.yaml"),
                f"s3://bench/{kind}/"], env
    py = DUCKDB_PY if tool == "duckdb" else PEER_PY
    return [py, "-c", PEER, tool, kind, endpoint], env


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(tool, kind, endpoint):
    """(wall seconds, CPU seconds, counts or a failure)."""
    argv, env = command(tool, kind, endpoint)
    cpu = cpu_of_children()
    t = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    cpu = cpu_of_children() - cpu
    if tool == "preflight":
        if p.returncode not in (0, 1):
            raise SystemExit(f"preflight failed ({p.returncode}): {p.stdout[-2000:]}{p.stderr[-2000:]}")
        return took, cpu, counts_of_preflight(p.stdout)
    if p.returncode != 0:
        return took, cpu, f"failed: {(p.stderr.strip().splitlines() or ['?'])[-1][:200]}"
    return took, cpu, json.loads(p.stdout.strip().splitlines()[-1])


def floor(port, sizes, kind):
    """The server's floor for a set: one 16 KiB ranged GET per file (the
    least a reader of footers can ask), 16 at a time, from this process."""
    import botocore
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}",
                      config=botocore.config.Config(max_pool_connections=16), **KEYS)
    keys = [k for k in sizes if k.startswith(kind + "/")]
    t = time.perf_counter()
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda k: s3.get_object(Bucket="bench", Key=k, Range="bytes=-16384")["Body"].read(), keys))
    return round(time.perf_counter() - t, 3)


def control(port, method, path):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request(method, path)
    return c.getresponse().read()


def traffic(port, sizes, kind):
    """Requests by method and bytes asked for, per file of set `kind`, and
    listings, from the proxy's log."""
    log = json.loads(control(port, "GET", "/__log"))
    per = {"GET": 0, "HEAD": 0, "bytes": 0, "list": 0}
    for r in log:
        key = r["path"].removeprefix("/bench/")
        if "list-type" in r["query"] or key in ("", "/"):
            per["list"] += 1
            continue
        if key not in sizes:
            continue
        per[r["method"]] = per.get(r["method"], 0) + 1
        if r["method"] == "GET":
            rng = (r["range"] or "").removeprefix("bytes=")
            if not rng:
                per["bytes"] += sizes[key]
            elif rng.startswith("-"):
                per["bytes"] += min(int(rng[1:]), sizes[key])
            else:
                a, b = rng.split("-")
                per["bytes"] += min(int(b) if b else sizes[key] - 1, sizes[key] - 1) - int(a) + 1
    files = sum(1 for k in sizes if k.startswith(kind + "/"))
    return {"files": files, "list_requests": per["list"],
            "get_per_file": round(per["GET"] / files, 2), "head_per_file": round(per["HEAD"] / files, 2),
            "kib_per_file": round(per["bytes"] / files / 1024, 1)}


def start_s3s():
    """s3s-fs (an S3 server in Rust, on a directory) on a free port: the
    fast server, where moto is bound at some 200 requests a second."""
    import shutil
    import socket
    root = os.path.join(WORK, "s3s-root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    if os.environ.get("S3S_NODELAY", "1") != "0":
        # TCP_NODELAY on its connections, as production servers set it
        # (benches/nodelay.c says why); S3S_NODELAY=0 leaves it off.
        shim = os.path.join(WORK, "nodelay.so")
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", shim, os.path.join(ROOT, "benches", "nodelay.c"),
                        "-ldl"], check=True)
        env["LD_PRELOAD"] = shim
    proc = subprocess.Popen([S3S_FS, "--host", "127.0.0.1", "--port", str(port), "--access-key", "bench",
                             "--secret-key", "bench", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc, port


def main():
    make_shards()
    script = os.path.join(ROOT, "tests", "remote", "servers.py")
    servers = subprocess.Popen([sys.executable, script, WORK], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ports = json.loads(servers.stdout.readline())
    s3s = None
    try:
        sizes = upload(ports["moto"])
        timed = ports["moto"]
        if SERVER == "s3s":
            s3s, timed = start_s3s()
            upload(timed)
        direct, proxied = f"http://127.0.0.1:{timed}", f"http://127.0.0.1:{ports['proxy']}"
        print(json.dumps({"server": SERVER}), flush=True)
        rows = []
        for kind in ("labels", "tokens"):
            print(json.dumps({"set": kind, "server_floor_s": floor(timed, sizes, kind)}), flush=True)
            data_mb = sum(v for k, v in sizes.items() if k.startswith(kind + "/")) / 2**20
            for tool in ("preflight", "duckdb", "polars"):
                _, _, first = run(tool, kind, direct)
                if isinstance(first, str):
                    rows.append({"set": kind, "tool": tool, "result": first})
                    print(json.dumps(rows[-1]), flush=True)
                    continue
                times, cpus, results = [], [], []
                for _ in range(REPS):
                    t, cpu, c = run(tool, kind, direct)
                    times.append(t)
                    cpus.append(cpu)
                    results.append(c)
                control(ports["proxy"], "POST", "/__reset")
                _, _, counted = run(tool, kind, proxied)
                row = {"set": kind, "tool": tool, "data_mib": round(data_mb, 1), "wall_s": round(statistics.median(times), 3),
                       "walls": [round(t, 3) for t in times], "cpu_s": round(statistics.median(cpus), 3), "counts": first,
                       **traffic(ports["proxy"], sizes, kind)}
                assert all(r == first for r in results + [counted]), (tool, kind, results, counted)
                rows.append(row)
                print(json.dumps(row), flush=True)
        for kind in ("labels", "tokens"):
            got = {r["tool"]: r for r in rows if r["set"] == kind and "counts" in r}
            counts = {json.dumps(r["counts"]) for r in got.values()}
            assert len(counts) == 1, f"{kind}: the tools disagree: {got}"
            pf = got["preflight"]["wall_s"]
            peers = [r["wall_s"] for t, r in got.items() if t != "preflight"]
            if peers:
                print(json.dumps({"set": kind, "faster_peer_over_preflight": round(min(peers) / pf, 2)}), flush=True)
    finally:
        if s3s is not None:
            s3s.kill()
        servers.stdin.close()
        servers.wait(timeout=30)


if __name__ == "__main__":
    main()
