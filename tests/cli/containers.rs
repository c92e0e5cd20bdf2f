//! WebDataset tar shards written by `webdataset.TarWriter` (and by Python's
//! `tarfile` where a case needs names TarWriter would not write) and TFRecord
//! files written by the `tfrecord` package's `TFRecordWriter`, in the test:
//! planted bad labels found at their rows with their values, every value
//! compared with what the real reader yields, clean data passing, gzip
//! variants, and sample grouping checked against `webdataset`'s own
//! iteration.

use serde_json::Value;

use crate::util::{Env, hits};

/// Every example of a check as (file, row, value).
fn all(report: &Value, column: &str, rule: &str) -> Vec<(String, u64, Value)> {
    hits(report, column, rule).1
}

/// Python's list of (row, value) pairs printed as JSON, read back.
fn py_pairs(env: &Env, file: &str) -> Vec<(String, u64, Value)> {
    let text = std::fs::read_to_string(env.path(file)).expect("python output");
    let v: Vec<(String, u64, Value)> = serde_json::from_str(&text).expect("json");
    v
}

#[test]
fn webdataset_labels_found_where_webdataset_reads_them() {
    let env = Env::new();
    // Three shards (plain, gzip, tgz), `cls` as TarWriter writes ints, a
    // PNG-named member of raw bytes; bad labels at known samples.
    env.python(
        r#"
import webdataset as wds
bad = {'a.tar': {7: 10, 123: 99}, 'b.tar.gz': {0: -1}, 'c.tgz': {}}
for name, planted in bad.items():
    with wds.TarWriter(name) as w:
        for i in range(200):
            w.write({'__key__': f'{name[0]}{i:05d}', 'cls': planted.get(i, i % 10), 'png': bytes([i % 256]) * 3})
# What webdataset itself yields, decoded as its int() decoder does.
seen = []
for name in ['a.tar', 'b.tar.gz', 'c.tgz']:
    ds = wds.WebDataset(name, shardshuffle=False).decode()
    for row, s in enumerate(ds):
        seen.append((name, row, s['cls']))
json.dump(seen, open('seen.json', 'w'))
"#,
    );
    env.write("s.yaml", "columns:\n  cls: {kind: class, num_classes: 10}\n");
    let report = env.check_json(
        &["-s", "s.yaml", "a.tar", "b.tar.gz", "c.tgz", "--max-examples", "100"],
        1,
    );
    assert_eq!(report["rows"], 600);
    let seen = py_pairs(&env, "seen.json");
    assert_eq!(seen.len(), 600);
    let expected: Vec<(String, u64, Value)> = seen
        .iter()
        .filter(|(_, _, v)| !(0..10).contains(&v.as_i64().expect("int")))
        .cloned()
        .collect();
    assert_eq!(all(&report, "cls", "class"), expected);
    assert_eq!(expected.len(), 3);
    // Every value, as webdataset decodes it: a rule no value passes.
    env.write("every.yaml", "columns:\n  cls: {kind: values, allowed: [-12345]}\n");
    let report = env.check_json(
        &[
            "-s",
            "every.yaml",
            "a.tar",
            "b.tar.gz",
            "c.tgz",
            "--max-examples",
            "1000",
        ],
        1,
    );
    assert_eq!(all(&report, "cls", "values"), seen);
    // Clean data passes; the same report for every --jobs.
    let clean = env.check_json(&["-s", "s.yaml", "c.tgz"], 0);
    assert_eq!(clean["rows"], 200);
    let one = env.run(&[
        "check", "--format", "json", "-s", "s.yaml", "a.tar", "b.tar.gz", "--jobs", "1",
    ]);
    let four = env.run(&[
        "check", "--format", "json", "-s", "s.yaml", "a.tar", "b.tar.gz", "--jobs", "4",
    ]);
    assert_eq!(one.stdout, four.stdout);
}

#[test]
fn webdataset_grouping_matches_webdataset_iteration() {
    let env = Env::new();
    // Names TarWriter would not write: dotted base names, a key that comes
    // back, members without an extension, metadata, directories, an upper
    // case suffix, a sample without `cls`, and a `__bad__` sample.
    env.python(
        r#"
import io, tarfile, webdataset as wds
members = [
    ('__meta__', b'{}'), ('dir/', None), ('README', b'hello'),
    ('k0.cls', b'1'), ('k0.jpg', b'x'),
    ('k1.CLS', b' 2\n'), ('k1.jpg', b'x'),
    ('a.1.cls', b'3'), ('a.2.cls', b'4'),
    ('k2.jpg', b'x'),
    ('k0.cls', b'5'),
    ('bad.cls', b'6'), ('bad.__bad__', b'1'),
    ('sub/k3.cls', b'12'),
]
with tarfile.open('g.tar', 'w') as t:
    for name, data in members:
        info = tarfile.TarInfo(name)
        if data is None:
            info.type = tarfile.DIRTYPE
            t.addfile(info)
        else:
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
ds = wds.WebDataset('g.tar', shardshuffle=False).decode()
out = []
for row, s in enumerate(ds):
    out.append(['g.tar', row, s.get('cls')])
json.dump(out, open('seen.json', 'w'))
json.dump([sorted(k for k in s if not k.startswith('__')) for s in wds.WebDataset('g.tar', shardshuffle=False)], open('keys.json', 'w'))
"#,
    );
    let seen = py_pairs(&env, "seen.json");
    // webdataset: k0, k1, a (merged: 1.cls, 2.cls), k2, k0 again, sub/k3;
    // the __bad__ sample dropped.
    assert_eq!(seen.len(), 6);
    env.write("s.yaml", "columns:\n  cls: {kind: values, allowed: [-12345]}\n");
    let report = env.check_json(&["-s", "s.yaml", "g.tar", "--max-examples", "100"], 1);
    assert_eq!(report["rows"], 6);
    let with_cls: Vec<_> = seen.iter().filter(|(_, _, v)| !v.is_null()).cloned().collect();
    assert_eq!(all(&report, "cls", "values"), with_cls);
    let nulls: Vec<u64> = seen
        .iter()
        .filter(|(_, _, v)| v.is_null())
        .map(|(_, r, _)| *r)
        .collect();
    let (n, null_rows) = hits(&report, "cls", "null");
    assert_eq!(n as usize, nulls.len());
    assert_eq!(null_rows.iter().map(|h| h.1).collect::<Vec<_>>(), nulls);
    // The columns are webdataset's keys: `1.cls` and `2.cls` of the merged sample.
    let keys: Vec<Vec<String>> =
        serde_json::from_str(&std::fs::read_to_string(env.path("keys.json")).expect("keys")).expect("json");
    assert!(keys.iter().any(|k| k.contains(&"1.cls".to_string())));
    env.write(
        "m.yaml",
        "columns:\n  1.cls: {kind: class, num_classes: 3, nullable: true}\n",
    );
    let merged = env.check_json(&["-s", "m.yaml", "g.tar"], 1);
    assert_eq!(
        all(&merged, "1.cls", "class"),
        vec![("g.tar".to_string(), 2, Value::from(3))]
    );
    // The warnings say what webdataset does with these names.
    let warnings = report["warnings"].to_string();
    for fragment in ["dot in their base name", "non-adjacent", "no extension", "__bad__"] {
        assert!(warnings.contains(fragment), "{fragment} not in {warnings}");
    }
}

#[test]
fn webdataset_duplicate_member_and_non_integer_label_are_errors() {
    let env = Env::new();
    env.python(
        r#"
import io, tarfile, webdataset as wds
def write(name, members):
    with tarfile.open(name, 'w') as t:
        for n, data in members:
            info = tarfile.TarInfo(n)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
write('dup.tar', [('a.cls', b'1'), ('b.cls', b'2'), ('b.cls', b'3')])
write('text.tar', [('a.cls', b'1'), ('b.cls', b'two')])
for name, exc in [('dup.tar', ValueError), ('text.tar', Exception)]:
    try:
        list(wds.WebDataset(name, shardshuffle=False).decode())
        raise SystemExit(name + ' did not raise')
    except exc:
        pass
"#,
    );
    env.write("s.yaml", "columns:\n  cls: {kind: class, num_classes: 10}\n");
    let report = env.check_json(&["-s", "s.yaml", "dup.tar", "text.tar"], 2);
    let errors = report["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_eq!(errors[0]["file"], "dup.tar");
    let m0 = errors[0]["message"].as_str().unwrap_or_default();
    assert!(m0.contains("sample 1 (key b)") && m0.contains("duplicate"), "{m0}");
    assert_eq!(errors[1]["file"], "text.tar");
    let m1 = errors[1]["message"].as_str().unwrap_or_default();
    assert!(m1.contains("b.cls") && m1.contains("not an integer"), "{m1}");
}

/// (file, row, cls) of every sample as `webdataset` yields it, None where
/// the sample lacks `cls`, and of every record as the `tfrecord` package's
/// reader yields it, None where the record lacks `cls`.
const SEEN_SHARDS: &str = r#"
def seen_shards(tars, tfrecords):
    seen = []
    for name in tars:
        for row, s in enumerate(wds.WebDataset(name, shardshuffle=False).decode()):
            seen.append((name, row, s.get('cls')))
    from tfrecord.reader import tfrecord_loader
    for name in tfrecords:
        for row, r in enumerate(tfrecord_loader(name, None)):
            seen.append((name, row, int(r['cls'][0]) if 'cls' in r else None))
    return seen
"#;

/// Examples as (file, row, value) and rows as (file, row).
type Examples = Vec<(String, u64, Value)>;
type Rows = Vec<(String, u64)>;

/// The out-of-range and missing labels of `seen.json`, as (file, row, value)
/// for the class check and (file, row) for the null check, in report order.
fn planted(env: &Env, range: std::ops::Range<i64>) -> (Examples, Rows) {
    let mut seen = py_pairs(env, "seen.json");
    seen.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let class = seen
        .iter()
        .filter(|(_, _, v)| v.as_i64().is_some_and(|c| !range.contains(&c)))
        .cloned()
        .collect();
    let null = seen
        .iter()
        .filter(|(_, _, v)| v.is_null())
        .map(|(f, r, _)| (f.clone(), *r))
        .collect();
    (class, null)
}

#[test]
fn directory_search_reads_every_shard_of_a_format_once_one_has_a_schema_column() {
    let env = Env::new();
    // b.tar and b.tfrecord: the first sample lacks `cls`, later ones hold
    // bad labels (a search judging shards by their first sample skipped
    // them). backup.tar and other.tfrecord have no `cls` at all: read too,
    // and missing the column, as `s['cls']` in the user's loop would raise.
    env.python(&format!(
        r#"
import webdataset as wds
from tfrecord import TFRecordWriter
{SEEN_SHARDS}
os.makedirs('data', exist_ok=True)
with wds.TarWriter('data/a.tar') as w:
    w.write({{'__key__': 'a0', 'cls': 3}})
with wds.TarWriter('data/b.tar') as w:
    w.write({{'__key__': 'b00', 'txt': 'no label yet'}})
    for i in range(1, 50):
        w.write({{'__key__': f'b{{i:02d}}', 'cls': 10 + i if i in (7, 31) else i % 10}})
with wds.TarWriter('data/backup.tar') as w:
    w.write({{'__key__': 'x', 'txt': 'notes'}})
w = TFRecordWriter('data/a.tfrecord'); w.write({{'cls': (4, 'int')}}); w.close()
w = TFRecordWriter('data/b.tfrecord')
w.write({{'x': (1, 'int')}})
for i in range(1, 40):
    w.write({{'cls': (-i if i == 22 else i % 10, 'int'), 'x': (i, 'int')}})
w.close()
w = TFRecordWriter('data/other.tfrecord'); w.write({{'x': (1, 'int')}}); w.close()
json.dump(seen_shards(['data/a.tar', 'data/b.tar'], ['data/a.tfrecord', 'data/b.tfrecord']), open('seen.json', 'w'))
"#
    ));
    env.write("s.yaml", "columns:\n  cls: {kind: class, num_classes: 10}\n");
    let report = env.check_json(&["-s", "s.yaml", "data", "--max-examples", "100"], 2);
    assert_eq!(report["files"], 6);
    let (class, null) = planted(&env, 0..10);
    assert_eq!(class.len(), 3);
    assert_eq!(all(&report, "cls", "class"), class);
    assert_eq!(
        null,
        vec![("data/b.tar".to_string(), 0), ("data/b.tfrecord".to_string(), 0)]
    );
    let nulls: Vec<(String, u64)> = all(&report, "cls", "null")
        .into_iter()
        .map(|(f, r, _)| (f, r))
        .collect();
    assert_eq!(nulls, null);
    let errors = report["errors"].as_array().expect("errors");
    let missing: Vec<&str> = errors.iter().map(|e| e["file"].as_str().unwrap_or_default()).collect();
    assert_eq!(missing, ["data/backup.tar", "data/other.tfrecord"], "{errors:?}");
    for e in errors {
        assert!(e["message"].as_str().unwrap_or_default().contains("`cls`"), "{e}");
    }
}

#[test]
fn shards_whose_first_samples_all_lack_the_column_are_still_read() {
    let env = Env::new();
    // No shard's first sample has `cls`: every sample is looked at. In
    // `tables`, an unrelated tar and TFRecord beside a Parquet file are not
    // read (no sample of theirs has `cls`).
    env.python(&format!(
        r#"
import gzip, shutil
import webdataset as wds
from tfrecord import TFRecordWriter
{SEEN_SHARDS}
os.makedirs('shards', exist_ok=True)
with wds.TarWriter('shards/s.tar.gz') as w:
    for i in range(30):
        w.write({{'__key__': f's{{i:02d}}', 'txt': 'x'}} if i < 20 else {{'__key__': f's{{i:02d}}', 'cls': 12 if i == 25 else 1}})
w = TFRecordWriter('plain.tfrecord')
for i in range(30):
    w.write({{'x': (i, 'int')}} if i < 29 else {{'cls': (10, 'int')}})
w.close()
with open('plain.tfrecord', 'rb') as f, gzip.open('shards/r.tfrecord.gz', 'wb') as g:
    shutil.copyfileobj(f, g)
w = TFRecordWriter('shards/t.tfrecord')
for i in range(30):
    w.write({{'x': (i, 'int')}} if i < 3 else {{'cls': (i % 10, 'int')}})
w.close()
seen = seen_shards(['shards/s.tar.gz'], ['plain.tfrecord', 'shards/t.tfrecord'])
seen = [('shards/r.tfrecord.gz' if f == 'plain.tfrecord' else f, r, v) for f, r, v in seen]
json.dump(seen, open('seen.json', 'w'))
os.makedirs('tables', exist_ok=True)
pq.write_table(pa.table({{'cls': [1, 2, 3]}}), 'tables/t.parquet')
with wds.TarWriter('tables/backup.tar') as w:
    w.write({{'__key__': 'x', 'txt': 'notes'}})
w = TFRecordWriter('tables/other.tfrecord'); w.write({{'x': (1, 'int')}}); w.close()
"#
    ));
    env.write("s.yaml", "columns:\n  cls: {kind: class, num_classes: 10}\n");
    let report = env.check_json(&["-s", "s.yaml", "shards", "--max-examples", "100"], 1);
    assert_eq!(report["files"], 3);
    assert_eq!(report["rows"], 90);
    let (class, null) = planted(&env, 0..10);
    assert_eq!(
        class,
        vec![
            ("shards/r.tfrecord.gz".to_string(), 29, Value::from(10)),
            ("shards/s.tar.gz".to_string(), 25, Value::from(12)),
        ]
    );
    assert_eq!(all(&report, "cls", "class"), class);
    assert_eq!(crate::util::hits(&report, "cls", "null").0, null.len() as u64);
    assert_eq!(null.len(), 20 + 29 + 3);

    let report = env.check_json(&["-s", "s.yaml", "tables"], 0);
    assert_eq!(report["files"], 1);
    assert_eq!(report["rows"], 3);
    // The same search finding only those shards finds nothing to check.
    std::fs::remove_file(env.path("tables/t.parquet")).expect("rm");
    let report = env.check_json(&["-s", "s.yaml", "tables"], 2);
    assert_eq!(report["files"], 0);
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no data files")
    );
}

#[test]
fn tfrecord_features_found_where_the_tfrecord_reader_reads_them() {
    let env = Env::new();
    env.python(
        r#"
import gzip, shutil
from tfrecord import TFRecordWriter
from tfrecord.reader import tfrecord_loader
def write(name, n, planted, missing=()):
    w = TFRecordWriter(name)
    for i in range(n):
        d = {'label': ([planted.get(i, i % 10)] + ([i % 10] if i % 3 == 0 else []), 'int'),
             'image': (bytes([i % 256]) * 5, 'byte'),
             'score': ([0.25, 0.5], 'float')}
        if i in missing:
            del d['label']
        w.write(d)
    w.close()
write('a.tfrecord', 300, {5: 10, 250: -3}, missing={17})
write('plain.tfrecord', 50, {40: 1000})
with open('plain.tfrecord', 'rb') as f, gzip.open('b.tfrecord.gz', 'wb') as g:
    shutil.copyfileobj(f, g)
seen = []
for name, comp in [('a.tfrecord', None), ('b.tfrecord.gz', 'gzip')]:
    for row, r in enumerate(tfrecord_loader(name, None, compression_type=comp)):
        for v in r.get('label', []):
            seen.append((name, row, int(v)))
json.dump(seen, open('seen.json', 'w'))
"#,
    );
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10}\n  score: {kind: range, min: 0, max: 1}\n",
    );
    let report = env.check_json(
        &["-s", "s.yaml", "a.tfrecord", "b.tfrecord.gz", "--max-examples", "100"],
        1,
    );
    assert_eq!(report["rows"], 350);
    let seen = py_pairs(&env, "seen.json");
    let expected: Vec<_> = seen
        .iter()
        .filter(|(_, _, v)| !(0..10).contains(&v.as_i64().expect("int")))
        .cloned()
        .collect();
    assert_eq!(expected.len(), 3);
    assert_eq!(all(&report, "label", "class"), expected);
    assert_eq!(
        all(&report, "label", "null"),
        vec![("a.tfrecord".to_string(), 17, Value::Null)]
    );
    assert_eq!(hits(&report, "score", "range").0, 0);
    // Every element, as the tfrecord package decodes it.
    env.write(
        "every.yaml",
        "columns:\n  label: {kind: values, allowed: [-12345], nullable: true}\n",
    );
    let report = env.check_json(
        &[
            "-s",
            "every.yaml",
            "a.tfrecord",
            "b.tfrecord.gz",
            "--max-examples",
            "1000",
        ],
        1,
    );
    assert_eq!(all(&report, "label", "values"), seen);
}

#[test]
fn tfrecord_one_based_imagenet_labels_draw_the_hint() {
    let env = Env::new();
    // TF-slim's build_imagenet_data.py: image/class/label in 1..1000.
    env.python(
        r#"
from tfrecord import TFRecordWriter
w = TFRecordWriter('train-00000-of-00001')
for i in range(2000):
    w.write({'image/class/label': (1 + i % 1000, 'int'), 'image/encoded': (b'jpeg', 'byte')})
w.close()
"#,
    );
    env.write(
        "s.yaml",
        "columns:\n  image/class/label: {kind: class, num_classes: 1000}\n",
    );
    // Named as build_imagenet_data.py names its shards: no extension, so
    // recognised by its first record's length checksum.
    let report = env.check_json(&["-s", "s.yaml", "train-00000-of-00001"], 1);
    let (n, ex) = hits(&report, "image/class/label", "class");
    assert_eq!(n, 2);
    assert_eq!(ex.iter().map(|e| e.1).collect::<Vec<_>>(), vec![999, 1999]);
    let hint = report["checks"][0]["hint"].as_str().unwrap_or_default();
    assert!(hint.contains("1-indexed"), "{hint}");
    // init proposes the observed bound and asks about 1-indexing.
    let r = env.run(&["init", "train-00000-of-00001", "-o", "p.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let proposed = std::fs::read_to_string(env.path("p.yaml")).expect("p.yaml");
    assert!(
        proposed.contains("image/class/label:")
            && proposed.contains("num_classes: 1001")
            && proposed.contains("1-indexed"),
        "{proposed}"
    );
}

#[test]
fn tfrecord_kind_change_and_sequence_example_are_refused() {
    let env = Env::new();
    env.python(
        r#"
from tfrecord import TFRecordWriter
w = TFRecordWriter('kinds.tfrecord')
w.write({'label': (1, 'int')})
w.write({'label': (1.0, 'float')})
w.close()
w = TFRecordWriter('seq.tfrecord')
w.write({'length': (3, 'int')}, {'tokens': ([[1], [2], [3]], 'int')})
w.close()
"#,
    );
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, optional: true}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "kinds.tfrecord", "seq.tfrecord"], 2);
    let errors = report["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    let m0 = errors[0]["message"].as_str().unwrap_or_default();
    assert!(
        m0.contains("record 1") && m0.contains("float_list") && m0.contains("record 0"),
        "{m0}"
    );
    let m1 = errors[1]["message"].as_str().unwrap_or_default();
    assert!(m1.contains("SequenceExample"), "{m1}");
}

#[test]
fn webdataset_init_proposes_a_schema_that_passes() {
    let env = Env::new();
    env.python(
        r#"
import webdataset as wds
with wds.TarWriter('s.tar') as w:
    for i in range(50):
        w.write({'__key__': f'{i:03d}', 'cls': i % 7, 'jpg': b'x'})
"#,
    );
    std::fs::create_dir_all(env.path("shards")).expect("mkdir");
    std::fs::rename(env.path("s.tar"), env.path("shards/s.tar")).expect("move");
    // A folder of shards: init has no schema, so every shard is profiled.
    let r = env.run(&["init", "shards", "-o", "p.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let proposed = std::fs::read_to_string(env.path("p.yaml")).expect("p.yaml");
    assert!(
        proposed.contains("cls:") && proposed.contains("num_classes: 7"),
        "{proposed}"
    );
    env.check_json(&["-s", "p.yaml", "shards"], 0);
}

#[test]
fn webdataset_shard_cut_inside_a_members_padding_is_an_error_as_tarfile_raises() {
    // A shard cut after a member's data but before the end of its 512-byte
    // padding: webdataset (tarfile's stream mode) raises "unexpected end of
    // data", so training stops. It used to pass, its samples checked. The
    // intact shard beside it is still checked, its bad label counted.
    let env = Env::new();
    env.python(
        r#"
import tarfile, webdataset as wds
for name in ('whole.tar', 'cut.tar'):
    with wds.TarWriter(name) as w:
        for i in range(4):
            w.write({'__key__': f's{i:03d}', 'cls': 4 * i})
d = open('cut.tar', 'rb').read()
# TarWriter writes a pax header before each member: cut the file 100 bytes
# after the data of the second member, inside its padding.
m = tarfile.open('cut.tar').getmembers()[1]
cut = m.offset_data + m.size + 100
assert cut < m.offset_data + 512
open('cut.tar', 'wb').write(d[:cut])
seen = []
try:
    for s in wds.WebDataset('cut.tar', shardshuffle=False, empty_check=False):
        seen.append(s['cls'])
    raise SystemExit('cut.tar did not raise')
except tarfile.ReadError:
    pass
labels = [int(s['cls']) for s in wds.WebDataset('whole.tar', shardshuffle=False)]
json.dump({'bad_whole': sum(1 for v in labels if v >= 10)}, open('want.json', 'w'))
"#,
    );
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    env.write("s.yaml", "columns:\n  cls: {kind: class, num_classes: 10}\n");
    let report = env.check_json(&["-s", "s.yaml", "whole.tar", "cut.tar"], 2);
    let errors = report["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["file"], "cut.tar");
    let m = errors[0]["message"].as_str().unwrap_or_default();
    assert!(m.contains("truncated tar archive") && m.contains("padding"), "{m}");
    let (n, ex) = hits(&report, "cls", "class");
    assert_eq!(n, want["bad_whole"].as_u64().expect("count"));
    assert!(ex.iter().all(|e| e.0 == "whole.tar"), "{ex:?}");
}

#[test]
fn webdataset_shard_cut_at_a_member_boundary_is_checked_with_a_warning() {
    // Cut exactly between members, a shard has no end-of-archive blocks:
    // webdataset reads the samples present and stops without an error
    // (the rest of the shard is lost silently). preflight checks what is
    // there, as webdataset reads it, and says the shard looks cut.
    let env = Env::new();
    env.python(
        r#"
import tarfile, webdataset as wds
with wds.TarWriter('whole.tar') as w:
    for i in range(6):
        w.write({'__key__': f's{i:03d}', 'cls': 3 * i})
d = open('whole.tar', 'rb').read()
# at the start of the sixth member (its pax header): labels 0..12 remain
open('cut.tar', 'wb').write(d[:tarfile.open('whole.tar').getmembers()[5].offset])
seen = {n: [int(s['cls']) for s in wds.WebDataset(n, shardshuffle=False)] for n in ('whole.tar', 'cut.tar')}
json.dump({n: sum(1 for v in s if v >= 10) for n, s in seen.items()} | {'rows_cut': len(seen['cut.tar'])},
          open('want.json', 'w'))
"#,
    );
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("want.json")).expect("want")).expect("json");
    env.write("s.yaml", "columns:\n  cls: {kind: class, num_classes: 10}\n");
    let report = env.check_json(&["-s", "s.yaml", "cut.tar"], 1);
    assert_eq!(report["rows"].as_u64(), want["rows_cut"].as_u64());
    assert_eq!(hits(&report, "cls", "class").0, want["cut.tar"].as_u64().expect("n"));
    let w = report["warnings"].as_array().expect("warnings");
    assert!(
        w.iter().any(|m| m
            .as_str()
            .is_some_and(|m| m.starts_with("cut.tar: the shard ends right after its last member"))),
        "{w:#?}"
    );
    let report = env.check_json(&["-s", "s.yaml", "whole.tar"], 1);
    assert_eq!(hits(&report, "cls", "class").0, want["whole.tar"].as_u64().expect("n"));
    assert!(
        report
            .get("warnings")
            .is_none_or(|w| w.as_array().is_some_and(Vec::is_empty)),
        "{report:#}"
    );
}

#[test]
fn an_empty_tfrecord_shard_has_no_rows_and_misses_no_feature() {
    // A writer closed before its first record leaves a 0-byte shard (the
    // last shard of a split, a worker with no examples): the tfrecord
    // package (and TensorFlow) read no record from it, so no feature can be
    // missing there; beside shards with records it is read, and passes.
    let env = Env::new();
    env.python(
        r#"
import gzip
from tfrecord import TFRecordWriter
from tfrecord.reader import tfrecord_loader
os.makedirs('d', exist_ok=True)
TFRecordWriter('d/empty-00001.tfrecord').close()
with gzip.open('d/empty-00002.tfrecord.gz', 'wb'):
    pass
w = TFRecordWriter('d/full-00000.tfrecord')
for i in range(4):
    w.write({'label': (i * 2, 'int')})
w.close()
seen = [(n, len(list(tfrecord_loader('d/' + n, None, compression_type='gzip' if n.endswith('.gz') else None))))
        for n in sorted(os.listdir('d'))]
json.dump(seen, open('seen.json', 'w'))
"#,
    );
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("seen.json")).expect("seen")).expect("json");
    assert_eq!(
        seen,
        serde_json::json!([
            ["empty-00001.tfrecord", 0],
            ["empty-00002.tfrecord.gz", 0],
            ["full-00000.tfrecord", 4]
        ])
    );
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 5}\n");
    let report = env.check_json(&["-s", "s.yaml", "d"], 1);
    assert_eq!(report["files"], 3);
    assert_eq!(report["rows"], 4);
    assert_eq!(report["errors"], Value::Array(vec![]));
    assert_eq!(
        all(&report, "label", "class"),
        vec![("d/full-00000.tfrecord".to_string(), 3, Value::from(6))]
    );
    // Named alone, an empty shard passes.
    let report = env.check_json(&["-s", "s.yaml", "d/empty-00001.tfrecord"], 0);
    assert_eq!(report["rows"], 0);
}
