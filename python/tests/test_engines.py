"""Real Spark (local[2]) and real Ray (a local cluster of 2 CPUs) checking a
generated multi-file dataset and a Delta Lake table: the merged report is
byte for byte what `preflight check --format json` prints over the same
files."""

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import preflight

SCHEMA = """columns:
  label: {kind: class, num_classes: 10}
  input_ids: {kind: index, size: 1000, max_length: 12}
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """shards/: 8 Parquet shards (three with several row groups), violations
    planted in three; clean/: the same without violations; corrupt/: clean
    shards and a torn one."""
    root = tmp_path_factory.mktemp("engines")
    rng = np.random.default_rng(7)
    for d in ("shards", "clean", "corrupt"):
        (root / d).mkdir()
    for s in range(8):
        n = 3000 + 500 * s
        label = rng.integers(0, 10, n)
        ids = [list(rng.integers(0, 1000, 1 + i % 12)) for i in range(n)]
        table = pa.table({"label": label, "input_ids": pa.array(ids, pa.list_(pa.int32()))})
        groups = 700 if s in (0, 3, 6) else n
        pq.write_table(table, root / "clean" / f"part-{s:03}.parquet", row_group_size=groups)
        pq.write_table(table, root / "corrupt" / f"part-{s:03}.parquet", row_group_size=groups)
        if s in (1, 3, 6):
            label = label.copy()
            label[[5, n - 1]] = [10, -1]
            ids[100 + s] = [1, 2, 1000 + s]
            ids[200] = list(range(13))
            table = pa.table({"label": label, "input_ids": pa.array(ids, pa.list_(pa.int32()))})
        pq.write_table(table, root / "shards" / f"part-{s:03}.parquet", row_group_size=groups)
    (root / "corrupt" / "part-999.parquet").write_bytes(b"PAR1 torn in transit")
    # delta/: a Delta Lake table whose overwritten file holds bad labels
    # (never read) and whose appended one holds violations.
    from deltalake import write_deltalake

    def rows(labels):
        ids = pa.array([[1, 2]] * len(labels), pa.list_(pa.int32()))
        return pa.table({"label": pa.array(labels, pa.int64()), "input_ids": ids})

    write_deltalake(str(root / "delta"), rows([0, 1, 17, 2] * 50))
    write_deltalake(str(root / "delta"), rows([0, 1, 2, 3] * 50), mode="overwrite")
    write_deltalake(str(root / "delta"), rows([4, 11, 5] * 40), mode="append")
    (root / "s.yaml").write_text(SCHEMA)
    return root


def cli(data, directory):
    binary = os.environ.get("PREFLIGHT_BIN")
    if not binary:
        pytest.skip("PREFLIGHT_BIN is set by run-tests.sh")
    r = subprocess.run(
        [binary, "check", "-s", str(data / "s.yaml"), "--format", "json", str(data / directory)],
        capture_output=True,
        text=True,
    )
    return r.returncode, r.stdout


# Small split size: the multi-row-group shards become one unit per row group.
SPLIT = 1


@pytest.fixture(scope="module")
def spark():
    pyspark = pytest.importorskip("pyspark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        pyspark.sql.SparkSession.builder.master("local[2]")
        .appName("preflight-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def s3(data):
    """A local S3 server (moto, behind the counting proxy of
    tests/remote/servers.py, all on 127.0.0.1) holding shards/ and corrupt/
    under s3://bkt/; yields the environment that points a client at it."""
    boto3 = pytest.importorskip("boto3")
    script = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "remote", "servers.py")
    servers = subprocess.Popen(
        [sys.executable, script, str(data)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    ports = json.loads(servers.stdout.readline())
    keys = dict(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{ports['moto']}", **keys)
    client.create_bucket(Bucket="bkt")
    for d in ("shards", "corrupt"):
        for name in sorted(os.listdir(data / d)):
            client.upload_file(str(data / d / name), "bkt", f"{d}/{name}")
    yield {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{ports['proxy']}",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }
    servers.stdin.close()
    servers.wait(timeout=30)


@pytest.fixture(scope="module")
def ray_cluster(s3):
    ray = pytest.importorskip("ray")
    # Storage credentials reach the workers as users pass them on a
    # cluster: the job's runtime environment.
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": s3},
    )
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("directory,code", [("shards", 1), ("clean", 0), ("corrupt", 2), ("delta", 1)])
def test_spark_merged_report_is_the_single_run_report(spark, data, directory, code):
    import preflight.spark

    expected_code, expected = cli(data, directory)
    assert expected_code == code
    merged = preflight.spark.check(spark, [str(data / directory)], str(data / "s.yaml"), split_bytes=SPLIT)
    assert merged.exit_code == code
    assert merged.json == expected


@pytest.mark.parametrize("directory,code", [("shards", 1), ("clean", 0), ("corrupt", 2), ("delta", 1)])
def test_ray_tasks_merged_report_is_the_single_run_report(ray_cluster, data, directory, code):
    import preflight.ray

    expected_code, expected = cli(data, directory)
    assert expected_code == code
    merged = preflight.ray.check([str(data / directory)], str(data / "s.yaml"), split_bytes=SPLIT, tasks=5)
    assert merged.exit_code == code
    assert merged.json == expected


def test_ray_data_map_batches_counts_are_exact(ray_cluster, data):
    import json

    import preflight.ray

    _, expected = cli(data, "shards")
    expected = json.loads(expected)
    ds = ray_cluster.data.read_parquet(str(data / "shards"), include_paths=True)
    merged = preflight.ray.check_dataset(ds, str(data / "s.yaml"))
    report = json.loads(merged.json)
    assert merged.exit_code == 1
    assert report["rows"] == expected["rows"]
    assert [(c["column"], c["rule"], c["violations"]) for c in report["checks"]] == [
        (c["column"], c["rule"], c["violations"]) for c in expected["checks"]
    ]
    # Examples name the shard each row came from.
    shards = {os.path.basename(e["file"]) for c in report["checks"] for e in c["examples"]}
    assert shards <= {"part-001.parquet", "part-003.parquet", "part-006.parquet"}
    # Clean data passes.
    clean = ray_cluster.data.read_parquet(str(data / "clean"))
    assert preflight.ray.check_dataset(clean, str(data / "s.yaml")).exit_code == 0


def test_spark_written_lists_read_from_levels_agree_with_a_full_scan(spark, tmp_path):
    """Parquet written by Spark (parquet-mr: the standard 3-level lists and
    the legacy format): the row lengths read from the page levels give the
    full scan's report, with the planted rows."""
    binary = os.environ.get("PREFLIGHT_BIN")
    if not binary:
        pytest.skip("PREFLIGHT_BIN is set by run-tests.sh")
    from pyspark.sql.types import ArrayType, LongType, StructField, StructType

    rng = np.random.default_rng(3)
    rows = []
    for i in range(4000):
        ids = [int(x) for x in rng.integers(0, 1000, int(rng.integers(1, 9)))]
        rows.append((None if i in (10, 3000) else [] if i == 77 else [5] * 13 if i in (5, 3999) else ids,))
    frame = spark.createDataFrame(rows, StructType([StructField("ids", ArrayType(LongType(), True), True)]))
    (tmp_path / "s.yaml").write_text(
        "columns:\n  ids: {kind: index, size: 1000, max_length: 12, min_length: 1, nullable: true}\n"
    )
    for legacy in ("false", "true"):
        for codec in ("uncompressed", "snappy", "gzip", "zstd"):
            spark.conf.set("spark.sql.parquet.writeLegacyFormat", legacy)
            out = tmp_path / f"{legacy}-{codec}"
            (
                frame.coalesce(1)
                .write.option("compression", codec)
                .option("parquet.page.size", "1024")
                .option("parquet.block.size", str(32 * 1024))
                .parquet(str(out))
            )
            reports = [
                subprocess.run(
                    [binary, "check", "-s", str(tmp_path / "s.yaml"), "--format", "json", *extra, str(out)],
                    capture_output=True,
                    text=True,
                )
                for extra in ([], ["--full-scan"])
            ]
            assert reports[0].stdout == reports[1].stdout, (legacy, codec)
            assert reports[0].returncode == 1, reports[0].stderr
            report = json.loads(reports[0].stdout)
            rows_of = {
                c["rule"]: [e["row"] for e in c["examples"]] for c in report["checks"] if c["violations"]
            }
            assert report["rows"] == 4000
            assert rows_of == {"max_length": [5, 3999], "min_length": [77]}, (legacy, codec)
    spark.conf.unset("spark.sql.parquet.writeLegacyFormat")


@pytest.mark.parametrize("directory,code", [("shards", 1), ("corrupt", 2)])
def test_spark_and_ray_check_s3_urls_as_local_files(spark, ray_cluster, s3, data, directory, code, monkeypatch):
    """`plan` lists s3:// URLs on the driver; Spark and Ray tasks read their
    units straight from the (local) S3 server; the merged report is the
    local one with URLs for names."""
    import preflight.ray
    import preflight.spark

    expected_code, expected = cli(data, directory)
    assert expected_code == code
    expected = expected.replace(str(data / directory) + "/", f"s3://bkt/{directory}/")
    # The driver lists and plans; the executors' Python workers get the
    # same variables as `spark.executorEnv.*` gives them on a cluster.
    for k, v in s3.items():
        monkeypatch.setenv(k, v)
    spark.sparkContext.environment.update(s3)
    url = f"s3://bkt/{directory}/"
    units = preflight.plan([url], split_bytes=SPLIT)
    assert {u["file"] for u in units} >= {f"{url}part-003.parquet"}
    assert sum(u["unit"] is not None for u in units) > 8, "row groups of the URLs are units"
    merged = preflight.spark.check(spark, [url], str(data / "s.yaml"), split_bytes=SPLIT)
    assert (merged.exit_code, merged.json) == (code, expected)
    merged = preflight.ray.check([url], str(data / "s.yaml"), split_bytes=SPLIT, tasks=3)
    assert (merged.exit_code, merged.json) == (code, expected)
