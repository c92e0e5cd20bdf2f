"""Lakehouse tables in object storage: a 1,000-file Delta table and a
1,000-file Iceberg table of the shared benchmark's labels shape in a local
S3 server, a third of each table's files removed by a later commit, checked
by preflight, by DuckDB (`delta_scan`, `iceberg_scan`), by deltalake +
PyArrow and by PyIceberg + PyArrow, whole processes, same run.

    python benches/lakehouse.py WORK_DIR

Environment: PREFLIGHT_BIN (release binary), DUCKDB_PY (a Python with
duckdb 1.5.5 and the PyPI packages of its httpfs, delta, avro and iceberg
extensions, loaded from the paths they ship: this machine cannot download
them; lakehouse.sh makes one), FILES (per table, default
999), LABEL_ROWS (default 20000), REPS (default 3, median kept), SCHEMAS
(../shared/bench/schemas), SERVER (moto, default, or s3s: the timed runs
against s3s-fs, S3S_FS its binary; see remote.py).

Each table is written by its own writer straight into the server (bucket
`bench`): FILES/3 commits of three files, one per value of the partition
column `part` (0, 1, 2), then a delete of `part = 2` (a metadata-only
commit: its files are removed, not rewritten). Five out-of-range labels are
planted in kept files and five in removed ones (which must not count); the
ignore index -100 twice. Every tool must report the same count (5).

preflight is given each table's root; the Iceberg peers are given its
current metadata file (neither finds it in a folder without
`version-hint.text`), and preflight is timed that way too.

Each command runs once untimed, then REPS times (timed), then once more
through the counting proxy of tests/remote/servers.py in front of moto:
requests per data file (the table's live and removed Parquet files) and
listings.
"""

import json
import os
import statistics
import subprocess
import sys
import time

import boto3
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remote  # noqa: E402  (its helpers: the servers, timing, the proxy's log)

FILES = int(os.environ.get("FILES", 999))
ROWS = int(os.environ.get("LABEL_ROWS", 20000))
NUM_CLASSES, IGNORE = 1000, -100
KEYS = remote.KEYS


def storage(endpoint):
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}


def iceberg_props(endpoint):
    return {"s3.endpoint": endpoint, "s3.access-key-id": "bench", "s3.secret-access-key": "bench",
            "s3.region": "us-east-1"}


def batches():
    """FILES/3 commits of three partitions' rows, with the plants."""
    schema = pa.schema([("label", pa.int64())] + [(f"f{i}", pa.float32()) for i in range(4)] + [("part", pa.int64())])
    for c in range(FILES // 3):
        r = np.random.default_rng([7, c])
        label = r.integers(0, NUM_CLASSES, 3 * ROWS, dtype=np.int64)
        part = np.repeat(np.arange(3, dtype=np.int64), ROWS)
        if c in (1, 2):
            label[5] = NUM_CLASSES + c        # part 0: kept
        if c in (1, 2, 3):
            label[ROWS + 9] = -1 - c           # part 1: kept
            label[2 * ROWS + 3] = 5000 + c     # part 2: removed later
        if c == 4:
            label[ROWS // 2] = IGNORE          # valid
            label[ROWS + ROWS // 2] = IGNORE
        if c == 5:
            label[2 * ROWS + 1] = 9999         # removed
            label[2 * ROWS + 2] = 9999         # removed
        cols = {"label": label, **{f"f{i}": r.random(3 * ROWS, dtype=np.float32) for i in range(4)}, "part": part}
        yield pa.table(cols, schema=schema)


def write_delta(endpoint):
    from deltalake import DeltaTable, write_deltalake
    url = "s3://bench/delta"
    for t in batches():
        write_deltalake(url, t, partition_by=["part"], mode="append", storage_options=storage(endpoint))
    DeltaTable(url, storage_options=storage(endpoint)).delete("part = 2")


def write_iceberg(endpoint):
    from pyiceberg.catalog.sql import SqlCatalog
    db = os.path.join(remote.WORK, "iceberg-catalog.db")
    if os.path.exists(db):
        os.remove(db)
    cat = SqlCatalog("bench", uri=f"sqlite:///{db}", warehouse="s3://bench/wh", **iceberg_props(endpoint))
    cat.create_namespace("db")
    first = next(batches())
    t = cat.create_table("db.labels", schema=first.schema)
    with t.update_spec() as u:
        u.add_identity("part")
    for b in batches():
        t.append(b)
    t.delete("part == 2")
    return cat.load_table("db.labels").metadata_location


PEER = r'''
import json, sys
tool, url, endpoint = sys.argv[1:4]
NUM_CLASSES, IGNORE = 1000, -100
if tool == "duckdb":
    import glob, importlib, os, duckdb
    con = duckdb.connect()
    iceberg = url.endswith(".metadata.json")
    for ext in ("httpfs",) + (("avro", "iceberg") if iceberg else ("delta",)):
        pkg = importlib.import_module(f"duckdb_extension_{ext}")
        path, = glob.glob(os.path.join(os.path.dirname(pkg.__file__), "extensions",
                                       "v" + duckdb.__version__, f"{ext}.duckdb_extension"))
        con.execute(f"LOAD '{path}'")
    host = endpoint.removeprefix("http://")
    con.execute(f"""CREATE SECRET (TYPE s3, KEY_ID 'bench', SECRET 'bench', REGION 'us-east-1',
                    ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)""")
    scan = f"iceberg_scan('{url}')" if iceberg else f"delta_scan('{url}')"
    bad = f"((label < 0 OR label >= {NUM_CLASSES}) AND label <> {IGNORE})"
    n = con.execute(f"SELECT count(*) FROM {scan} WHERE {bad}").fetchone()[0]
    print(json.dumps([n]))
    raise SystemExit
import pyarrow.dataset as ds
if tool == "deltalake":
    from deltalake import DeltaTable
    opts = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
    data = DeltaTable(url, storage_options=opts).to_pyarrow_dataset()
    label = ds.field("label")
    bad = ((label < 0) | (label >= NUM_CLASSES)) & (label != IGNORE)
    n = data.count_rows(filter=bad)
else:
    from pyiceberg.table import StaticTable
    from pyiceberg.expressions import Or, LessThan, GreaterThanOrEqual
    props = {"s3.endpoint": endpoint, "s3.access-key-id": "bench", "s3.secret-access-key": "bench",
             "s3.region": "us-east-1"}
    t = StaticTable.from_metadata(url, properties=props)
    # The manifests' bounds prune files, as preflight's statistics do.
    rows = t.scan(row_filter=Or(LessThan("label", 0), GreaterThanOrEqual("label", NUM_CLASSES)),
                  selected_fields=("label",)).to_arrow()
    n = sum(1 for v in rows.column("label").to_pylist() if v != IGNORE)
print(json.dumps([n]))
'''


def command(tool, url, endpoint):
    env = dict(os.environ, **{k: v for k, v in storage(endpoint).items() if k != "AWS_S3_ALLOW_UNSAFE_RENAME"})
    env.pop("AWS_PROFILE", None)
    if tool.startswith("preflight"):
        schema = os.path.join(remote.SCHEMAS, "labels.yaml")
        return [remote.BIN, "check", "--format", "json", "-s", schema, url], env
    py = os.environ.get("DUCKDB_PY", sys.executable) if tool == "duckdb" else sys.executable
    return [py, "-c", PEER, tool, url, endpoint], env


def run(tool, url, endpoint):
    argv, env = command(tool, url, endpoint)
    cpu = remote.cpu_of_children()
    t = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    took, cpu = time.perf_counter() - t, remote.cpu_of_children() - cpu
    if tool.startswith("preflight"):
        if p.returncode not in (0, 1):
            raise SystemExit(f"preflight failed ({p.returncode}): {p.stdout[-2000:]}{p.stderr[-2000:]}")
        report = json.loads(p.stdout)
        return took, cpu, [report["violations"]], report["tables"]
    if p.returncode != 0:
        return took, cpu, f"failed: {(p.stderr.strip().splitlines() or ['?'])[-1][:300]}", None
    return took, cpu, json.loads(p.stdout.strip().splitlines()[-1]), None


def run_through_crashes(tool, url, endpoint, failed):
    """run(), repeated up to three times while the tool crashes (deltalake
    aborts at exit now and then: "terminate called without an active
    exception"); each crash is added to `failed`."""
    got = run(tool, url, endpoint)
    for _ in range(3):
        if not isinstance(got[2], str):
            break
        failed.append(got[2])
        got = run(tool, url, endpoint)
    return got


def copy_bucket(src, dst):
    """Every object of bucket `bench` from one server to another."""
    a = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{src}", **KEYS)
    b = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{dst}", **KEYS)
    b.create_bucket(Bucket="bench")
    for page in a.get_paginator("list_objects_v2").paginate(Bucket="bench"):
        for o in page.get("Contents", []):
            b.put_object(Bucket="bench", Key=o["Key"], Body=a.get_object(Bucket="bench", Key=o["Key"])["Body"].read())


def data_files(port, prefix):
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", **KEYS)
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix=prefix):
        for o in page.get("Contents", []):
            if o["Key"].endswith(".parquet") and "/_delta_log/" not in o["Key"] and "/metadata/" not in o["Key"]:
                out[o["Key"]] = o["Size"]
    return out


def requests(port, sizes):
    """GETs and HEADs per data file, and listings, from the proxy's log
    (keys unquoted: `part=0` travels as `part%3D0`)."""
    from urllib.parse import unquote
    log = json.loads(remote.control(port, "GET", "/__log"))
    gets = heads = lists = 0
    for r in log:
        key = unquote(r["path"]).removeprefix("/bench/")
        if "list-type" in r["query"]:
            lists += 1
        elif key in sizes:
            gets += r["method"] == "GET"
            heads += r["method"] == "HEAD"
    return {"list_requests": lists, "get_per_file": round(gets / len(sizes), 3),
            "head_per_file": round(heads / len(sizes), 3)}


def main():
    script = os.path.join(remote.ROOT, "tests", "remote", "servers.py")
    servers = subprocess.Popen([sys.executable, script, remote.WORK], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ports = json.loads(servers.stdout.readline())
    s3s = None
    try:
        moto = f"http://127.0.0.1:{ports['moto']}"
        boto3.client("s3", endpoint_url=moto, **KEYS).create_bucket(Bucket="bench")
        t = time.perf_counter()
        write_delta(moto)
        metadata = write_iceberg(moto)
        print(json.dumps({"written_s": round(time.perf_counter() - t, 1), "iceberg_metadata": metadata}), flush=True)
        timed = ports["moto"]
        if remote.SERVER == "s3s":
            s3s, timed = remote.start_s3s()
            copy_bucket(ports["moto"], timed)
        direct, proxied = f"http://127.0.0.1:{timed}", f"http://127.0.0.1:{ports['proxy']}"
        rows = []
        for table, root, peer, peer_url in [("delta", "s3://bench/delta/", "deltalake", "s3://bench/delta"),
                                             ("iceberg", "s3://bench/wh/db/labels/", "pyiceberg", metadata)]:
            sizes = data_files(ports["moto"], root.removeprefix("s3://bench/"))
            tools = [("preflight", root), ("duckdb", peer_url), (peer, peer_url)]
            if table == "iceberg":
                # The peers are given the metadata file (neither finds the
                # current one in a folder without version-hint.text):
                # preflight is timed so too.
                tools.insert(1, ("preflight (metadata file)", peer_url))
            for tool, url in tools:
                _, _, first, tables = run_through_crashes(tool, url, direct, [])
                if isinstance(first, str):
                    rows.append({"table": table, "tool": tool, "result": first})
                    print(json.dumps(rows[-1]), flush=True)
                    continue
                times, cpus, failed = [], [], []
                for _ in range(remote.REPS):
                    took, cpu, c, _ = run_through_crashes(tool, url, direct, failed)
                    assert c == first, (tool, c, first)
                    times.append(took)
                    cpus.append(cpu)
                remote.control(ports["proxy"], "POST", "/__reset")
                _, _, counted, _ = run(tool, url, proxied)
                # Through the proxy (to moto) a tool may fail where the timed
                # server served it: say so rather than count its requests.
                traffic = requests(ports["proxy"], sizes) if counted == first else {"counted_run": counted}
                row = {"table": table, "tool": tool, "wall_s": round(statistics.median(times), 3),
                       "walls": [round(x, 3) for x in times], "cpu_s": round(statistics.median(cpus), 3),
                       "counts": first, "data_files": len(sizes), **traffic}
                if failed:
                    row["failed_runs"] = failed
                if tables:
                    row["snapshot"] = tables[0]
                rows.append(row)
                print(json.dumps(row), flush=True)
            got = [r for r in rows if r["table"] == table and "counts" in r]
            want = sum(c < FILES // 3 for c in (1, 2)) + sum(c < FILES // 3 for c in (1, 2, 3))
            assert all(r["counts"] == [want] for r in got), got
            peers = [r for r in got if not r["tool"].startswith("preflight")]
            for r in got:
                if r["tool"].startswith("preflight"):
                    print(json.dumps({"table": table, "tool": r["tool"],
                                      "faster_peer_over_preflight": round(min(p["wall_s"] for p in peers) / r["wall_s"], 2)}),
                          flush=True)
    finally:
        if s3s is not None:
            s3s.kill()
        servers.stdin.close()
        servers.wait(timeout=30)


if __name__ == "__main__":
    main()
