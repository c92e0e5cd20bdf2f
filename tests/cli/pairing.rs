//! Image/mask pairing (`pair_with`, #14): masks and images written by
//! Pillow here; every expected size is the one `Image.open(f).size`
//! gives, computed in the test by Pillow.

use serde_json::Value;

use crate::util::{Env, check};

/// masks/ and images/ with one pair of each kind: equal sizes, a size
/// mismatch, two images of one name, a mask without an image, images
/// without a mask (nested, odd case and extensions); Pillow's sizes of the
/// images go to sizes.json.
pub(crate) fn write_pairs(env: &Env) {
    env.python(
        r#"
from PIL import Image
for d in ["data/masks/sub", "data/images/sub/deep", "data/images/.cache"]:
    os.makedirs(d, exist_ok=True)
def mask(path, w, h):
    Image.fromarray(np.zeros((h, w), np.uint8)).save(path)
def image(path, w, h):
    Image.fromarray(np.full((h, w, 3), 90, np.uint8)).save(path)
mask("data/masks/a.png", 32, 16); image("data/images/a.jpg", 32, 16)
mask("data/masks/sub/b.png", 20, 20); image("data/images/sub/b.JPG", 20, 21)
mask("data/masks/sub/c.PNG", 10, 10); image("data/images/sub/c.webp", 10, 10)
mask("data/masks/t.png", 6, 9); image("data/images/t.tiff", 6, 9)
mask("data/masks/g.png", 12, 4); image("data/images/g.gif", 12, 5)
mask("data/masks/w.png", 3, 3); image("data/images/w.bmp", 4, 3)
mask("data/masks/dup.png", 8, 8); image("data/images/dup.jpg", 8, 8); image("data/images/dup.png", 8, 8)
mask("data/masks/lonely.png", 5, 5)
mask("data/masks/photo.png", 6, 10)
ex = Image.Exif(); ex[0x0112] = 6
Image.fromarray(np.zeros((6, 10, 3), np.uint8)).save("data/images/photo.jpg", exif=ex.tobytes())
assert Image.open("data/images/photo.jpg").getexif()[0x0112] == 6
image("data/images/extra.png", 7, 7); image("data/images/sub/deep/e.tif", 7, 7)
image("data/images/.hidden.png", 7, 7); image("data/images/.cache/x.png", 7, 7)
open("data/images/readme.txt", "w").write("not an image")
sizes = {}
for root, _, names in os.walk("data/images"):
    for n in names:
        if not n.endswith(".txt"):
            sizes[os.path.join(root, n)] = "%dx%d" % Image.open(os.path.join(root, n)).size
json.dump(sizes, open("sizes.json", "w"))
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 2, pair_with: ../images}\n",
    );
}

fn examples(c: &Value) -> Vec<(String, String)> {
    c["examples"]
        .as_array()
        .expect("examples")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().expect("file").to_string(),
                e["value"].as_str().expect("value").to_string(),
            )
        })
        .collect()
}

fn size(env: &Env, image: &str) -> String {
    let sizes: Value = serde_json::from_str(&std::fs::read_to_string(env.path("sizes.json")).expect("sizes")).unwrap();
    sizes[image].as_str().expect(image).to_string()
}

#[test]
fn masks_pair_with_images_by_relative_path() {
    let env = Env::new();
    write_pairs(&env);
    let args = ["-s", "s.yaml", "data/masks", "--max-examples", "20"];
    let report = env.check_json(&args, 1);
    let c = check(&report, "pixels", "pair_with");
    let want = vec![
        (
            "data/images/extra.png".to_string(),
            "no mask (looked for data/masks/extra.*)".to_string(),
        ),
        (
            "data/images/sub/deep/e.tif".into(),
            "no mask (looked for data/masks/sub/deep/e.*)".into(),
        ),
        (
            "data/masks/dup.png".into(),
            "2 images: data/images/dup.jpg, data/images/dup.png".into(),
        ),
        (
            "data/masks/g.png".into(),
            format!("12x4 (image {})", size(&env, "data/images/g.gif")),
        ),
        (
            "data/masks/photo.png".into(),
            format!(
                "6x10 (image {}; EXIF orientation 6: 6x10 as OpenCV's IMREAD_COLOR reads it)",
                size(&env, "data/images/photo.jpg")
            ),
        ),
        (
            "data/masks/sub/b.png".into(),
            format!("20x20 (image {})", size(&env, "data/images/sub/b.JPG")),
        ),
        (
            "data/masks/w.png".into(),
            format!("3x3 (image {})", size(&env, "data/images/w.bmp")),
        ),
    ];
    assert_eq!(examples(c), want, "{report:#}");
    assert_eq!(c["violations"], 7);
    assert_eq!(c["examples"][0]["row"], 0);
    // Nine masks and the two images without one.
    assert_eq!(report["files"], 11, "{report:#}");
    assert_eq!(report["rows"], 9);
    assert_eq!(check(&report, "pixels", "class")["violations"], 0);
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            "data/masks/lonely.png: pair_with: no image for this mask (nothing matches data/images/lonely.*); image-driven loaders (mmsegmentation, Pytorch-UNet) never read it"
        ]
    );
    assert!(report["errors"].as_array().expect("errors").is_empty(), "{report:#}");
    // --jobs never changes the document.
    for jobs in ["1", "3"] {
        let mut a = args.to_vec();
        a.extend(["--jobs", jobs]);
        assert_eq!(env.check_json(&a, 1), report);
    }
    // Text reports name the files and values.
    let human = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "data/masks",
        "--no-progress",
        "--max-examples",
        "20",
    ]);
    assert_eq!(human.code, 1);
    assert!(
        human.stdout.contains("data/masks/sub/b.png:0: \"20x20 (image 20x21)\""),
        "{}",
        human.stdout
    );
    let gh = env.run(&["check", "-s", "s.yaml", "data/masks", "--format", "github"]);
    assert!(gh.stdout.contains("data/images/extra.png"), "{}", gh.stdout);
    // Every violation spilled, with its file.
    let spilled = env.run(&["check", "-s", "s.yaml", "data/masks", "--violations-out", "v.jsonl"]);
    assert_eq!(spilled.code, 1, "{}", spilled.stderr);
    let lines: Vec<(String, String, String)> = std::fs::read_to_string(env.path("v.jsonl"))
        .expect("violations")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json line");
            (
                v["file"].as_str().unwrap().to_string(),
                v["rule"].as_str().unwrap().to_string(),
                v["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want_lines: Vec<(String, String, String)> = want
        .iter()
        .map(|(f, v)| (f.clone(), "pair_with".to_string(), v.clone()))
        .collect();
    assert_eq!(lines, want_lines);
    // A partial of the run merges into the same checks.
    let p = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "data/masks",
        "--format",
        "json",
        "--partial",
        "--max-examples",
        "20",
    ]);
    std::fs::write(env.path("p.json"), &p.stdout).expect("write");
    let merged = env.run(&["merge", "p.json", "--format", "json"]).json();
    assert_eq!(merged["checks"], report["checks"]);
    assert_eq!(merged["files"], report["files"]);
}

#[test]
fn cached_results_follow_the_paired_image() {
    let env = Env::new();
    write_pairs(&env);
    let args = ["-s", "s.yaml", "data/masks", "--max-examples", "20", "--cache", "c"];
    let first = env.check_json(&args, 1);
    let again = env.check_json(&args, 1);
    assert_eq!(first, again);
    // The image of a fine pair changes size; its mask's file does not.
    env.python(
        r#"
from PIL import Image
Image.fromarray(np.full((17, 32, 3), 90, np.uint8)).save("data/images/a.jpg")
os.remove("data/images/extra.png")
"#,
    );
    let after = env.check_json(&args, 1);
    let values = examples(check(&after, "pixels", "pair_with"));
    assert!(
        values.contains(&("data/masks/a.png".into(), "32x16 (image 32x17)".into())),
        "{values:?}"
    );
    assert!(!values.iter().any(|(f, _)| f == "data/images/extra.png"), "{values:?}");
    let fresh = env.check_json(&["-s", "s.yaml", "data/masks", "--max-examples", "20"], 1);
    assert_eq!(after, fresh);
}

#[test]
fn cityscapes_suffixes_pair_label_train_ids_with_left_images() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
os.makedirs("gtFine/train/aachen", exist_ok=True); os.makedirs("leftImg8bit/train/aachen", exist_ok=True)
def mask(p, w, h): Image.fromarray(np.zeros((h, w), np.uint8)).save(p)
def image(p, w, h): Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(p)
mask("gtFine/train/aachen/aachen_000000_000019_gtFine_labelTrainIds.png", 16, 8)
image("leftImg8bit/train/aachen/aachen_000000_000019_leftImg8bit.png", 16, 8)
mask("gtFine/train/aachen/aachen_000001_000019_gtFine_labelTrainIds.png", 16, 8)
image("leftImg8bit/train/aachen/aachen_000001_000019_leftImg8bit.png", 8, 16)
image("leftImg8bit/train/aachen/aachen_000002_000019_leftImg8bit.png", 16, 8)
image("leftImg8bit/train/aachen/aachen_000002_000019_other.png", 16, 8)
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 19, ignore_index: 255, pair_with: {dir: ../../leftImg8bit/train, mask_suffix: _gtFine_labelTrainIds, image_suffix: _leftImg8bit}}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "gtFine/train"], 1);
    let c = check(&report, "pixels", "pair_with");
    assert_eq!(
        examples(c),
        [
            (
                "gtFine/train/aachen/aachen_000001_000019_gtFine_labelTrainIds.png".to_string(),
                "16x8 (image 8x16)".to_string()
            ),
            (
                "leftImg8bit/train/aachen/aachen_000002_000019_leftImg8bit.png".into(),
                "no mask (looked for gtFine/train/aachen/aachen_000002_000019_gtFine_labelTrainIds.*)".into()
            ),
        ]
    );
    assert!(report.get("warnings").is_none(), "{report:#}");
    // The resolved schema keeps the pairing.
    let resolved = env.run(&["schema", "s.yaml"]);
    assert!(
        resolved.stdout.contains("pair_with: {dir: \"../../leftImg8bit/train\", mask_suffix: \"_gtFine_labelTrainIds\", image_suffix: \"_leftImg8bit\"}"),
        "{}",
        resolved.stdout
    );
}

#[test]
fn hostile_image_headers_are_the_images_errors() {
    let env = Env::new();
    env.python(
        r#"
import struct, zlib
from PIL import Image
os.makedirs("m", exist_ok=True); os.makedirs("i", exist_ok=True)
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
for n in ["ok", "cut", "huge", "junk", "ifd", "bmp", "small"]:
    Image.fromarray(np.zeros((4, 4), np.uint8)).save("m/%s.png" % n)
Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save("i/ok.png")
Image.fromarray(np.zeros((5, 4, 3), np.uint8)).save("i/small.png")
open("i/cut.png", "wb").write(open("i/ok.png", "rb").read()[:12])
sig = b"\x89PNG\r\n\x1a\n"
open("i/huge.png", "wb").write(sig + chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b""))
open("i/junk.jpg", "wb").write(b"\xff\xd8\xff" + bytes(range(256)) * 4)
open("i/ifd.tif", "wb").write(b"II*\0" + struct.pack("<I", 0xfffffff0) + b"\0" * 16)
open("i/bmp.bmp", "wb").write(b"BM" + b"\0" * 10)
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 2, pair_with: ../i}\n",
    );
    let (code, peak_kb, out) = env.peak(&["check", "-s", "s.yaml", "m", "--format", "json"]);
    assert_eq!(code, 2, "{out}");
    let r: Value = serde_json::from_str(&out).expect("json");
    let failed: Vec<&str> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["file"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        failed,
        ["i/bmp.bmp", "i/cut.png", "i/huge.png", "i/ifd.tif", "i/junk.jpg"],
        "{r:#}"
    );
    assert!(
        r["errors"][2]["message"]
            .as_str()
            .unwrap()
            .contains("decompression bomb"),
        "{r:#}"
    );
    // The other pairs are still judged.
    assert_eq!(
        examples(check(&r, "pixels", "pair_with")),
        [("m/small.png".to_string(), "4x4 (image 4x5)".to_string())]
    );
    assert!(peak_kb < 200_000, "peak RSS {peak_kb} KB");
    // A missing image folder is an error naming it.
    env.write(
        "t.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 2, pair_with: ../nowhere}\n",
    );
    let r = env.check_json(&["-s", "t.yaml", "m"], 2);
    assert_eq!(r["errors"][0]["file"], "nowhere", "{r:#}");
    assert!(r.get("warnings").is_none(), "{r:#}");
}

#[test]
fn bad_pair_with_keys_are_schema_errors() {
    let env = Env::new();
    for (col, says) in [
        (
            "{kind: class, num_classes: 2, pair_with: \"\"}",
            "image folder is empty",
        ),
        (
            "{kind: class, num_classes: 2, pair_with: {dir: i, mask_suffix: .png}}",
            "no `.`",
        ),
        ("{kind: class, num_classes: 2, pair_with: {folder: i}}", "pair_with"),
    ] {
        env.write("s.yaml", &format!("version: 1\ncolumns:\n  pixels: {col}\n"));
        let r = env.run(&["schema", "s.yaml"]);
        assert_eq!(r.code, 2, "{col}: {}", r.stdout);
        assert!(r.stderr.contains(says), "{col}: {}", r.stderr);
    }
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  a: {kind: class, num_classes: 2, pair_with: i}\n  b: {kind: class, num_classes: 2, pair_with: j}\n",
    );
    let r = env.run(&["schema", "s.yaml"]);
    assert!(r.stderr.contains("one column may set pair_with"), "{}", r.stderr);
}

#[test]
fn work_units_pair_their_masks_from_the_planned_root() {
    use preflight::{Plan, ScanOptions};
    let env = Env::new();
    write_pairs(&env);
    let plan = Plan {
        schema: env.path("s.yaml"),
        paths: vec![env.path("data/masks")],
        max_examples: 20,
        table_at: None,
        scan: ScanOptions::default(),
    };
    let (validator, units) = preflight::plan_units(&plan, 1 << 30).expect("plan");
    assert!(
        units
            .iter()
            .all(|u| u.root.as_deref() == Some(env.path("data/masks").as_path()))
    );
    let mut merged = validator.partial();
    for u in units.iter().rev() {
        merged.merge(preflight::check_units(
            &validator,
            std::slice::from_ref(u),
            &ScanOptions::default(),
        ));
    }
    let report = merged.report(&validator);
    let c = report
        .checks
        .iter()
        .find(|c| c.rule.name() == "pair_with")
        .expect("pair_with");
    // The masks' verdicts; images without a mask need the whole run.
    let files: Vec<String> = c
        .examples
        .iter()
        .map(|e| e.file.rsplit("data/").next().unwrap().to_string())
        .collect();
    assert_eq!(
        files,
        [
            "masks/dup.png",
            "masks/g.png",
            "masks/photo.png",
            "masks/sub/b.png",
            "masks/w.png"
        ]
    );
    assert_eq!(c.violations, 5);
}
