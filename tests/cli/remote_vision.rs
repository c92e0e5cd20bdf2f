//! Images (masks), COCO, YOLO labels, image folders, WebDataset and
//! TFRecord shards in object storage: the files the local tests write
//! (Pillow, `webdataset.TarWriter`, `tfrecord.TFRecordWriter`), uploaded to
//! a local S3 server, must give the local report with URLs for names;
//! damaged objects are each that URL's error while the others are checked;
//! requests are counted from the proxy's log.

use serde_json::Value;

use crate::remote::{Servers, for_key, renamed};
use crate::util::{Env, hits};

/// The GETs the proxy saw for one object.
fn gets(log: &[Value], path: &str) -> Vec<Value> {
    for_key(log, path)
        .into_iter()
        .filter(|r| r["method"] == "GET")
        .cloned()
        .collect()
}

/// Masks (planted pixels, a JPEG that draws the lossy warning, a truncated
/// PNG), a COCO file named by URL and a YOLO label tree: each the local
/// report with URLs for names; an image is one GET of the whole object.
#[test]
fn masks_coco_and_yolo_from_s3_report_as_local() {
    let env = Env::new();
    // The masks of the local test, and a JPEG and a cut PNG beside them.
    env.python(
        &(crate::masks::PLANTED.to_string()
            + r#"
Image.fromarray(np.full((16, 16), 2, np.uint8)).save("d/j.jpg", quality=95)
open("d/z_cut.png", "wb").write(open("d/a.png", "rb").read()[:60])

IDS = [i for i in range(1, 91) if i not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]
cats = [{"id": i, "name": f"c{i}", "supercategory": "s"} for i in IDS]
anns = [{"id": k + 1, "image_id": k % 50 + 1, "category_id": IDS[(k * 7) % 80], "iscrowd": 0,
         "area": 12.5, "bbox": [1.0, 2.0, 3.0, 4.0]} for k in range(400)]
anns[17]["category_id"] = 12; anns[333]["category_id"] = 91; anns[42]["bbox"] = [5.0, 5.0, -2.0, 3.0]
images = [{"id": i, "file_name": f"{i:012d}.jpg", "width": 64, "height": 48} for i in range(1, 51)]
os.makedirs("coco", exist_ok=True)
json.dump({"images": images, "annotations": anns, "categories": cats}, open("coco/instances.json", "w"))

os.makedirs("labels/train", exist_ok=True); os.makedirs("labels/val", exist_ok=True)
for k in range(6):
    rows = [f"{(k * 5 + j) % 80} 0.5 0.5 0.25 0.25" for j in range(k + 1)]
    if k == 3: rows[1] = "80 0.5 0.5 0.1 0.1"
    if k == 4: rows[0] = "3 0.5 0.5 1.02 0.1"
    open(f"labels/train/img{k:03d}.txt", "w").write("\n".join(rows) + "\n")
open("labels/val/img100.txt", "w").write("")
open("labels/.hidden.txt", "w").write("99 0.5 0.5 0.1 0.1\n")
"#),
    );
    env.write(
        "masks.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 21, ignore_index: 255}\n",
    );
    env.write("coco.yaml", "columns:\n  category_id: {kind: class, num_classes: 91}\n");
    env.write(
        "yolo.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: 80}\n  w: {kind: range, min: 0, max: 1}\n",
    );
    let servers = Servers::start(env.dir.path());
    for dir in ["d", "coco", "labels"] {
        servers.upload(&env, dir, "bkt", &format!("{dir}/"));
    }

    // Masks: the truncated PNG is its file's error (exit 2), the others read.
    let local = servers.check(&env, &["-s", "masks.yaml", "d"], 2);
    assert_eq!(local["files"], 5, "{local:#}");
    servers.reset(servers.proxy);
    let remote = servers.check(&env, &["-s", "masks.yaml", "s3://bkt/d"], 2);
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
    let (n, _) = hits(&remote, "pixels", "class");
    assert_eq!(n, 4, "{remote:#}");
    let errors = remote["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{remote:#}");
    assert_eq!(errors[0]["file"], "s3://bkt/d/z_cut.png");
    assert!(
        remote["warnings"].as_array().expect("warnings").iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("s3://bkt/d/j.jpg") && w.contains("JPEG mask"))),
        "{remote:#}"
    );
    // Listed, so sized: one GET per image, of the whole object; the text
    // file is never read.
    let log = servers.log(servers.proxy);
    for name in ["a.png", "b.png", "clean.png", "j.jpg", "z_cut.png"] {
        let g = gets(&log, &format!("/bkt/d/{name}"));
        assert_eq!(g.len(), 1, "{name}: {g:?}");
    }
    assert!(gets(&log, "/bkt/d/notes.txt").is_empty());

    // COCO, named by URL (a listing does not pick COCO files up).
    let local = servers.check(&env, &["-s", "coco.yaml", "coco/instances.json"], 1);
    let remote = servers.check(&env, &["-s", "coco.yaml", "s3://bkt/coco/instances.json"], 1);
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
    let (n, ex) = hits(&remote, "category_id", "class");
    assert_eq!(n, 1);
    assert_eq!(ex[0].1, 333);
    let listed = servers.check(&env, &["-s", "coco.yaml", "s3://bkt/coco/"], 2);
    assert!(
        listed["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no data files")),
        "{listed:#}"
    );

    // YOLO: the label tree (hidden files skipped), class 80 of 80, a
    // box ultralytics drops.
    let local = servers.check(&env, &["-s", "yolo.yaml", "labels"], 1);
    assert_eq!(local["files"], 7, "{local:#}");
    let remote = servers.check(&env, &["-s", "yolo.yaml", "s3://bkt/labels"], 1);
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
    let (n, ex) = hits(&remote, "class", "class");
    assert_eq!(n, 1);
    assert_eq!((ex[0].0.as_str(), ex[0].1), ("s3://bkt/labels/train/img003.txt", 1));
    assert_eq!(hits(&remote, "w", "range").0, 1);
}

/// `layout: image_folder` over a prefix: the classes torchvision finds
/// locally (a hidden class folder counted, nested images, a class folder
/// without images an error, loose images warned about), from the listing
/// alone: no image is read.
#[test]
fn image_folders_from_s3_list_the_classes_found_locally() {
    let env = Env::new();
    env.python(
        r#"
def touch(p):
    os.makedirs(os.path.dirname(p), exist_ok=True); open(p, "wb").write(b"x")
touch("data/.ipynb_checkpoints/a-checkpoint.png")
for f in ["1.jpg", "2.jpg", "notes.txt"]: touch(f"data/cat/{f}")
for f in ["1.jpg", "2.jpg", "3.JPG", "sub/4.png", ".5.png"]: touch(f"data/dog/{f}")
touch("data/text/readme.txt")
touch("data/loose.png")
for c in ["a", "b"]: touch(f"val/{c}/1.png")
"#,
    );
    env.write(
        "s.yaml",
        "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "data", "bkt", "data/");
    servers.upload(&env, "val", "bkt", "val/");
    let local = servers.check(&env, &["-s", "s.yaml", "data", "val"], 2);
    assert_eq!(local["files"], 10, "{local:#}");
    servers.reset(servers.proxy);
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/data", "s3://bkt/val"], 2);
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
    // dog is class 2 behind the hidden folder: its five images are out.
    let (n, ex) = hits(&remote, "label", "class");
    assert_eq!(n, 5, "{remote:#}");
    assert!(
        ex.iter()
            .all(|(f, _, v)| f.starts_with("s3://bkt/data/dog/") && *v == 2)
    );
    assert_eq!(remote["errors"][0]["file"], "s3://bkt/data/text", "{remote:#}");
    let log = servers.log(servers.proxy);
    assert!(
        log.iter().all(|r| !r["path"].as_str().unwrap_or("").ends_with(".png")
            && !r["path"].as_str().unwrap_or("").to_ascii_lowercase().ends_with(".jpg")),
        "{log:?}"
    );
    // A root whose name holds glob characters is that prefix, as a local
    // directory so named is; class names as they are.
    env.python(
        r#"
for c in ["a cat", "b+dog", "c=ünï"]:
    for f in ["1 x.jpg", "2%.png"]:
        p = f"odd/r[1]/{c}/{f}"; os.makedirs(os.path.dirname(p), exist_ok=True); open(p, "wb").write(b"x")
"#,
    );
    servers.upload(&env, "odd", "bkt", "odd/");
    let local = servers.check(&env, &["-s", "s.yaml", "odd/r[1]"], 1);
    assert_eq!(local["files"], 6, "{local:#}");
    for url in ["s3://bkt/odd/r[1]", "s3://bkt/odd/r[1]/"] {
        let remote = servers.check(&env, &["-s", "s.yaml", url], 1);
        assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""), "{url}");
    }
}

/// WebDataset (plain, gzip, one shard larger than a read block) and
/// TFRecord (plain, gzip) with planted labels: the local reports; a plain
/// shard is listed as it streams (8 MiB blocks) and its unit read by one
/// ranged GET; truncated shards are their URLs' errors, the others checked.
#[test]
fn shards_from_s3_report_as_local() {
    let env = Env::new();
    env.python(
        r#"
import gzip, shutil
import webdataset as wds
from tfrecord import TFRecordWriter
os.makedirs("w", exist_ok=True); os.makedirs("t", exist_ok=True); os.makedirs("bad", exist_ok=True)
bad = {"w/a.tar": {7: 10, 123: 99}, "w/b.tar.gz": {0: -1}}
for name, planted in bad.items():
    with wds.TarWriter(name) as w:
        for i in range(200):
            w.write({"__key__": f"k{i:05d}", "cls": planted.get(i, i % 10), "png": bytes([i % 256]) * 3})
rng = np.random.default_rng(3)
with wds.TarWriter("w/big.tar") as w:
    for i in range(160):
        w.write({"__key__": f"b{i:05d}", "cls": 12 if i == 150 else i % 10,
                 "png": rng.integers(0, 256, 64 << 10, dtype=np.uint8).tobytes()})
def write(name, n, planted):
    w = TFRecordWriter(name)
    for i in range(n):
        w.write({"label": ([planted.get(i, i % 10)], "int"), "image": (bytes([i % 256]) * 5, "byte")})
    w.close()
write("t/a.tfrecord", 300, {5: 10, 250: -3})
write("plain.tfrecord", 50, {40: 1000})
with open("plain.tfrecord", "rb") as f, gzip.open("t/b.tfrecord.gz", "wb") as g:
    shutil.copyfileobj(f, g)
tar = open("w/a.tar", "rb").read()
open("bad/cut.tar", "wb").write(tar[:5000])
rec = open("t/a.tfrecord", "rb").read()
open("bad/cut.tfrecord", "wb").write(rec[:1000])
shutil.copy("w/b.tar.gz", "bad/ok.tar.gz")
"#,
    );
    assert!(std::fs::metadata(env.path("w/big.tar")).unwrap().len() > 8 << 20);
    env.write("w.yaml", "columns:\n  cls: {kind: class, num_classes: 10}\n");
    env.write("t.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    let servers = Servers::start(env.dir.path());
    for dir in ["w", "t", "bad"] {
        servers.upload(&env, dir, "bkt", &format!("{dir}/"));
    }

    let local = servers.check(&env, &["-s", "w.yaml", "w", "--max-examples", "100"], 1);
    assert_eq!(local["rows"], 560, "{local:#}");
    servers.reset(servers.proxy);
    let remote = servers.check(&env, &["-s", "w.yaml", "s3://bkt/w", "--max-examples", "100"], 1);
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
    let (n, ex) = hits(&remote, "cls", "class");
    assert_eq!(n, 4);
    assert_eq!(
        ex.iter().map(|(f, r, _)| (f.as_str(), *r)).collect::<Vec<_>>(),
        [
            ("s3://bkt/w/a.tar", 7),
            ("s3://bkt/w/a.tar", 123),
            ("s3://bkt/w/b.tar.gz", 0),
            ("s3://bkt/w/big.tar", 150)
        ]
    );
    // big.tar: its first 6 bytes (compression by content), the listing
    // streamed in two 8 MiB blocks, then its one unit by one ranged GET.
    let log = servers.log(servers.proxy);
    let big = gets(&log, "/bkt/w/big.tar");
    let size = std::fs::metadata(env.path("w/big.tar")).unwrap().len();
    let ranges: Vec<&str> = big.iter().map(|r| r["range"].as_str().unwrap_or("")).collect();
    assert_eq!(
        ranges,
        [
            "bytes=0-5".to_string(),
            "bytes=0-8388607".to_string(),
            format!("bytes=8388608-{}", size - 1),
            format!("bytes=0-{}", size - 1),
        ],
        "{big:?}"
    );

    let local = servers.check(&env, &["-s", "t.yaml", "t", "--max-examples", "100"], 1);
    assert_eq!(local["rows"], 350, "{local:#}");
    let remote = servers.check(&env, &["-s", "t.yaml", "s3://bkt/t", "--max-examples", "100"], 1);
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
    let (n, ex) = hits(&remote, "label", "class");
    assert_eq!(n, 3);
    assert_eq!(
        ex.iter().map(|(f, r, _)| (f.as_str(), *r)).collect::<Vec<_>>(),
        [
            ("s3://bkt/t/a.tfrecord", 5),
            ("s3://bkt/t/a.tfrecord", 250),
            ("s3://bkt/t/b.tfrecord.gz", 40)
        ]
    );

    // Truncated shards: each its URL's error; the sound one still read.
    let r = servers.check(
        &env,
        &["-s", "w.yaml", "s3://bkt/bad/cut.tar", "s3://bkt/bad/ok.tar.gz"],
        2,
    );
    assert_eq!(r["rows"], 200, "{r:#}");
    assert_eq!(hits(&r, "cls", "class").0, 1);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{r:#}");
    assert_eq!(errors[0]["file"], "s3://bkt/bad/cut.tar");
    assert!(
        errors[0]["message"].as_str().unwrap().contains("truncated tar archive"),
        "{r:#}"
    );
    let r = servers.check(
        &env,
        &["-s", "t.yaml", "s3://bkt/bad/cut.tfrecord", "s3://bkt/t/b.tfrecord.gz"],
        2,
    );
    assert_eq!(r["errors"].as_array().expect("errors").len(), 1, "{r:#}");
    assert_eq!(r["errors"][0]["file"], "s3://bkt/bad/cut.tfrecord");
    assert_eq!(hits(&r, "label", "class").0, 1);
}

/// `pair_with` over storage: masks under a prefix paired with the images
/// of `../images` there (sizes from the images' headers, one ranged GET
/// each; images without a mask named): the local report.
#[test]
fn masks_pair_with_images_in_storage_as_locally() {
    let env = Env::new();
    crate::pairing::write_pairs(&env);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "data", "bkt", "data/");
    let local = servers.check(&env, &["-s", "s.yaml", "data/masks", "--max-examples", "20"], 1);
    servers.reset(servers.proxy);
    let remote = servers.check(
        &env,
        &["-s", "s.yaml", "s3://bkt/data/masks", "--max-examples", "20"],
        1,
    );
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
    let c = crate::util::check(&remote, "pixels", "pair_with");
    assert!(c["violations"].as_u64().unwrap() >= 4, "{remote:#}");
    // A paired image: one GET for its header (a small image, whole).
    let log = servers.log(servers.proxy);
    assert_eq!(gets(&log, "/bkt/data/images/a.jpg").len(), 1, "{log:?}");
}

/// A YOLO export in a bucket: the listing decides which `.txt` objects are
/// labels as a local search does (those of an image; README, classes.txt,
/// image lists and orphans skipped, with the same note).
#[test]
fn yolo_exports_in_s3_read_the_labels_of_images_only() {
    let env = Env::new();
    env.python(crate::layouts::YOLO_EXPORT_PY);
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: 3}\n",
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "ds", "bkt", "ds/");
    let local = servers.check(&env, &["-s", "s.yaml", "ds"], 1);
    assert_eq!(local["files"], 4, "{local:#}");
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/ds"], 1);
    assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""));
}

/// The Darknet-converted YOLO tree of the local test in a bucket: the same
/// label files read (ultralytics' `img2label_paths`, leftover `.txt` beside
/// images skipped), those outside a searched prefix (`ds/labels/train` for
/// `ds/images/train`) found by one listing per folder.
#[test]
fn yolo_label_files_in_s3_are_those_ultralytics_opens_as_locally() {
    let env = Env::new();
    env.python(crate::layouts::YOLO_TREE_PY);
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: range, max: -1}\n",
    );
    let servers = Servers::start(env.dir.path());
    for dir in ["ds", "proj"] {
        servers.upload(&env, dir, "bkt", &format!("{dir}/"));
    }
    for path in ["ds", "ds/images/train", "ds/images/train/sub", "proj"] {
        let local = servers.check(&env, &["-s", "s.yaml", path, "--max-examples", "1000"], 1);
        let remote = servers.check(
            &env,
            &["-s", "s.yaml", &format!("s3://bkt/{path}"), "--max-examples", "1000"],
            1,
        );
        assert_eq!(renamed(&remote, "s3://bkt/", ""), renamed(&local, "", ""), "{path}");
        assert!(!crate::layouts::yolo_files_read(&local).is_empty(), "{path}");
    }
}
