"""Seeds of the `iceberg` fuzz target (fuzz_targets/iceberg.rs), written by
PyIceberg 0.12 (SQLite catalog, a temporary warehouse): a table's current
metadata, its manifest list and its one manifest, rewritten by PyIceberg's
own writers so that they name the files the target writes
(metadata/list.avro, metadata/m0.avro, data/part-0.parquet), then the data
file; each part but the last prefixed by its u32 LE length. Run with the
test venv's Python from the fuzz/ folder."""

import json
import os
import shutil
import struct
import tempfile

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus, write_manifest, write_manifest_list
from pyiceberg.transforms import IdentityTransform

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "iceberg")


def seed(name, t):
    loc = t.location()
    snap = t.metadata.current_snapshot()
    (manifest,) = snap.manifests(t.io)
    entries = [e for e in manifest.fetch_manifest_entry(t.io) if e.status != ManifestEntryStatus.DELETED]
    (entry,) = entries
    data = entry.data_file.file_path
    entry.data_file._data[1] = f"{loc}/data/part-0.parquet"
    spec = t.specs()[manifest.partition_spec_id]
    version = t.metadata.format_version
    with write_manifest(version, spec, t.schema(), t.io.new_output(f"{loc}/metadata/m0.avro"), snap.snapshot_id, "deflate") as w:
        w.add_entry(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snap.snapshot_id,
                                            sequence_number=entry.sequence_number, file_sequence_number=entry.file_sequence_number,
                                            data_file=entry.data_file))
    with write_manifest_list(version, t.io.new_output(f"{loc}/metadata/list.avro"), snap.snapshot_id, None,
                             snap.sequence_number, "deflate") as l:
        l.add_manifests([w.to_manifest_file()])
    meta = json.loads(t.metadata.model_dump_json(by_alias=True, exclude_none=True))
    s = next(x for x in meta["snapshots"] if x["snapshot-id"] == snap.snapshot_id)
    s["manifest-list"] = f"{loc}/metadata/list.avro"
    s.pop("parent-snapshot-id", None)
    meta["snapshots"] = [s]
    meta["snapshot-log"] = [e for e in meta.get("snapshot-log", []) if e["snapshot-id"] == snap.snapshot_id]
    meta["metadata-log"] = []
    parts = [json.dumps(meta).encode()]
    for f in ("list.avro", "m0.avro"):
        parts.append(open(f"{loc[7:]}/metadata/{f}", "rb").read())
    body = b"".join(struct.pack("<I", len(p)) + p for p in parts) + open(data[7:], "rb").read()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(body)


def main():
    tmp = tempfile.mkdtemp()
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp}/cat.db", warehouse=f"file://{tmp}")
    cat.create_namespace("db")
    rows = pa.table({"label": pa.array([0, 1, 7, 2], pa.int64()), "x": pa.array([1, 2, 3, 4], pa.int64())})
    t = cat.create_table("db.plain", schema=rows.schema)
    t.append(rows)
    seed("plain", t)
    t = cat.create_table("db.v1", schema=rows.schema, properties={"format-version": "1"})
    t.append(rows)
    seed("v1", t)
    t = cat.create_table("db.part", schema=rows.schema)
    with t.update_spec() as u:
        u.add_identity("label")
    t.append(pa.table({"label": pa.array([4, 4], pa.int64()), "x": pa.array([1, 2], pa.int64())}))
    seed("partitioned", t)
    t = cat.create_table("db.renamed", schema=rows.schema)
    t.append(rows)
    with t.update_schema() as u:
        u.rename_column("x", "y")
    seed("renamed", t)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
