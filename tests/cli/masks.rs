//! Segmentation masks (#14): image files written here by Pillow, tifffile
//! and a small PNG writer (for the bit depths and interlacing Pillow does
//! not write), read by preflight and compared value for value, pixel for
//! pixel, with what the loaders read: `np.array(Image.open(f))`,
//! `.convert("L")`, mmsegmentation's `reduce_zero_label` arithmetic.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::{Env, check};

/// A PNG writer for what Pillow cannot write (2/4-bit gray, Adam7
/// interlacing, 16-bit colour), and random fixtures of every mode.
const WRITERS: &str = r#"
import struct, zlib, io
from PIL import Image
import tifffile

def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)

def pack(row, bits, channels):
    if bits == 16:
        return b"".join(struct.pack(">H", int(v)) for v in row.reshape(-1))
    if bits == 8:
        return bytes(int(v) for v in row.reshape(-1))
    out, acc, n = bytearray(), 0, 0
    for v in row:
        acc = (acc << bits) | int(v); n += bits
        if n == 8:
            out.append(acc); acc = 0; n = 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)

def png(path, arr, bits, color, palette=None, interlace=False, trns=None):
    h, w = arr.shape[:2]
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    if interlace:
        raw = b""
        for x0, y0, dx, dy in [(0,0,8,8),(4,0,8,8),(0,4,4,8),(2,0,4,4),(0,2,2,4),(1,0,2,2),(0,1,1,2)]:
            sub = arr[y0::dy, x0::dx]
            if sub.shape[0] == 0 or sub.shape[1] == 0:
                continue
            raw += b"".join(b"\0" + pack(r, bits, channels) for r in sub)
    else:
        raw = b"".join(b"\0" + pack(r, bits, channels) for r in arr)
    d = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bits, color, 0, 0, 1 if interlace else 0))
    if palette is not None:
        d += chunk(b"PLTE", bytes(palette))
    if trns is not None:
        d += chunk(b"tRNS", trns)
    d += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    open(path, "wb").write(d)

def expected(path):
    im = Image.open(path)
    out = {}
    a = np.array(im)
    if a.ndim == 2:
        out["raw"] = a.astype(float if a.dtype.kind == "f" else np.int64).tolist()
        if a.dtype.kind in "bu" and a.dtype.itemsize == 1:
            g = a.astype(np.uint8).copy()
            g[g == 0] = 255; g = g - 1; g[g == 254] = 255
            out["reduce"] = g.astype(np.int64).tolist()
    out["lum"] = np.array(im.convert("L")).astype(np.int64).tolist()
    return out
"#;

/// Writes every fixture into `m/` and what Pillow reads into `expected.json`.
fn write_fixtures(env: &Env, seed: u64) {
    env.python(&format!(
        r#"{WRITERS}
rng = np.random.default_rng({seed})
os.makedirs("m", exist_ok=True)
def size():
    return int(rng.integers(1, 40)), int(rng.integers(1, 40))
def pal(n):
    return rng.integers(0, 256, 3 * n, dtype=np.uint8).tolist()
for bits in (1, 2, 4, 8):
    h, w = size()
    png(f"m/p{{bits}}.png", rng.integers(0, 2 ** bits, (h, w)), bits, 3, pal(2 ** bits))
    h, w = size()
    png(f"m/l{{bits}}.png", rng.integers(0, 2 ** bits, (h, w)), bits, 0)
    h, w = size()
    png(f"m/p{{bits}}i.png", rng.integers(0, 2 ** bits, (h, w)), bits, 3, pal(2 ** bits), interlace=True)
h, w = size()
png("m/l16.png", rng.integers(0, 65536, (h, w)), 16, 0)
png("m/l16i.png", rng.integers(0, 400, (h, w)), 16, 0, interlace=True)
png("m/l2i.png", rng.integers(0, 4, (33, 17)), 2, 0, interlace=True)
png("m/trns.png", rng.integers(0, 6, (9, 11)), 8, 3, pal(6), trns=bytes([0, 128, 255]))
png("m/l8trns.png", rng.integers(0, 256, (5, 3)), 8, 0, trns=struct.pack(">H", 7))
png("m/la.png", rng.integers(0, 256, (6, 7, 2)), 8, 4)
png("m/rgb.png", rng.integers(0, 256, (6, 7, 3)), 8, 2)
png("m/rgba.png", rng.integers(0, 256, (6, 7, 4)), 8, 6)
png("m/rgb16.png", rng.integers(0, 65536, (5, 4, 3)), 16, 2)
png("m/one.png", rng.integers(0, 2, (13, 19)), 1, 0)
# Pillow's own writers
a = rng.integers(0, 21, (17, 23)).astype(np.uint8)
im = Image.fromarray(a, "L").convert("P"); im.putpalette(pal(256)); im.save("m/pillow_p.png")
im.save("m/pillow_p_trns.png", transparency=0)
Image.fromarray(a).save("m/pillow_l.png")
Image.fromarray(a.astype(bool)).save("m/pillow_1.png")
Image.fromarray(a).save("m/pillow_l.bmp")
im.save("m/pillow_p.bmp")
Image.fromarray(a.astype(bool)).save("m/pillow_1.bmp")
Image.fromarray(rng.integers(0, 256, (7, 5, 3), dtype=np.uint8)).save("m/pillow_rgb.bmp")
tifffile.imwrite("m/t8.tif", rng.integers(0, 256, (7, 9), dtype=np.uint8))
tifffile.imwrite("m/t16.tif", rng.integers(0, 65536, (7, 9), dtype=np.uint16))
tifffile.imwrite("m/t16s.tif", rng.integers(-300, 300, (7, 9), dtype=np.int16))
tifffile.imwrite("m/t32.tif", rng.integers(-1000, 1000, (7, 9), dtype=np.int32))
tifffile.imwrite("m/tf.tif", (rng.integers(-20, 300, (7, 9)) / 2).astype(np.float32))
tifffile.imwrite("m/t8z.tif", rng.integers(0, 256, (31, 3), dtype=np.uint8), compression="zlib")
tifffile.imwrite("m/trgb.tif", rng.integers(0, 256, (4, 5, 3), dtype=np.uint8), photometric="rgb")
json.dump({{f: expected("m/" + f) for f in sorted(os.listdir("m"))}}, open("expected.json", "w"))
"#
    ));
}

/// Every pixel preflight reports for a rule nothing passes: per file, the
/// image as rows of values (None where the file was an error).
pub(crate) fn decoded(env: &Env, decode: &str) -> (BTreeMap<String, Vec<Vec<f64>>>, Vec<String>) {
    env.write(
        "all.yaml",
        &format!("version: 1\ncolumns:\n  pixels: {{kind: values, allowed: [-7777777], {decode}}}\n"),
    );
    let r = env.run(&[
        "check",
        "-s",
        "all.yaml",
        "m",
        "--format",
        "json",
        "--max-examples",
        "100000000",
    ]);
    let report = r.json();
    let c = check(&report, "pixels", "values");
    let mut images: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    for e in c["examples"].as_array().expect("examples") {
        let file = e["file"].as_str().expect("file").trim_start_matches("m/").to_string();
        assert_eq!(e["row"], 0);
        let (x, y) = (
            e["x"].as_u64().expect("x") as usize,
            e["y"].as_u64().expect("y") as usize,
        );
        let rows = images.entry(file).or_default();
        if rows.len() == y {
            rows.push(Vec::new());
        }
        assert_eq!((rows.len() - 1, rows[y].len()), (y, x), "pixels come in (y, x) order");
        rows[y].push(e["value"].as_f64().expect("number"));
    }
    let errors = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["file"].as_str().unwrap_or("").trim_start_matches("m/").to_string())
        .collect();
    (images, errors)
}

pub(crate) fn as_rows(v: &Value) -> Vec<Vec<f64>> {
    v.as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .map(|x| x.as_f64().expect("number"))
                .collect()
        })
        .collect()
}

fn compare_all(env: &Env) {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("expected.json")).expect("expected")).expect("json");
    let expected = expected.as_object().expect("object");
    for (decode, key) in [
        ("decode: raw", "raw"),
        ("decode: luminance", "lum"),
        ("reduce_zero_label: true", "reduce"),
    ] {
        let (images, errors) = decoded(env, decode);
        let mut compared = 0;
        for (file, want) in expected {
            match want.get(key) {
                Some(w) => {
                    let got = images
                        .get(file)
                        .unwrap_or_else(|| panic!("{file} ({decode}): no pixels read"));
                    assert_eq!(got, &as_rows(w), "{file} ({decode}) differs from Pillow's reading");
                    compared += 1;
                }
                None if key == "raw" => {
                    assert!(
                        errors.contains(file),
                        "{file}: a multi-channel image read raw is an error"
                    )
                }
                None => {}
            }
        }
        assert!(compared >= 20, "{decode}: only {compared} fixtures compared");
    }
}

#[test]
fn every_mode_decodes_exactly_as_pillow_reads_it() {
    let env = Env::new();
    write_fixtures(&env, 14);
    compare_all(&env);
}

#[test]
fn random_images_of_every_mode_decode_as_pillow_reads_them() {
    // A property test: random sizes, values and palettes over several seeds.
    for seed in [1, 2, 3] {
        let env = Env::new();
        write_fixtures(&env, seed);
        compare_all(&env);
    }
}

/// Masks with pixels planted at known places (a 37x53 8-bit plane, a 3x5
/// palette image, a clean one) and a text file, under `d/`: the remote
/// tests check the same files from storage.
pub(crate) const PLANTED: &str = r#"
from PIL import Image
os.makedirs("d", exist_ok=True)
a = np.zeros((37, 53), np.uint8); a[:, 20:] = 3
a[5, 7] = 150; a[30, 52] = 150; a[0, 0] = 21; a[36, 0] = 255
Image.fromarray(a).save("d/a.png")
b = np.full((3, 5), 20, np.uint8); b[2, 4] = 200
im = Image.fromarray(b, "L").convert("P"); im.putpalette(list(range(256)) * 3); im.save("d/b.png")
Image.fromarray(np.zeros((4, 4), np.uint8)).save("d/clean.png")
open("d/notes.txt", "w").write("not a mask")
"#;

#[test]
fn planted_pixels_are_found_at_their_place_with_counts_and_hints() {
    let env = Env::new();
    env.python(PLANTED);
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 21, ignore_index: 255}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "d"], 1);
    assert_eq!(report["files"], 3, "the text file is skipped: {report:#}");
    assert_eq!(report["rows"], 3);
    let c = check(&report, "pixels", "class");
    assert_eq!(c["violations"], 4);
    let ex: Vec<(String, u64, u64, u64)> = c["examples"]
        .as_array()
        .expect("examples")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().expect("file").to_string(),
                e["x"].as_u64().expect("x"),
                e["y"].as_u64().expect("y"),
                e["value"].as_u64().expect("value"),
            )
        })
        .collect();
    assert_eq!(
        ex,
        [
            ("d/a.png".to_string(), 0, 0, 21),
            ("d/a.png".to_string(), 7, 5, 150),
            ("d/a.png".to_string(), 52, 30, 150),
            ("d/b.png".to_string(), 4, 2, 200),
        ]
    );
    assert_eq!(
        c["pixel_counts"],
        serde_json::json!([{"value": 21, "pixels": 1}, {"value": 150, "pixels": 2}, {"value": 200, "pixels": 1}])
    );
    // --jobs gives the same document; the human report says x and y.
    for jobs in ["1", "3"] {
        let again = env.check_json(&["-s", "s.yaml", "d", "--jobs", jobs], 1);
        assert_eq!(again, report);
    }
    let human = env.run(&["check", "-s", "s.yaml", "d", "--no-progress"]);
    assert!(human.stdout.contains("d/a.png:0 (x=7, y=5): 150"), "{}", human.stdout);
    assert!(human.stdout.contains("150: 2 pixels"), "{}", human.stdout);
    // --violations-out: every pixel with x and y.
    let run = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "d",
        "--violations-out",
        "v.jsonl",
        "--no-progress",
    ]);
    assert_eq!(run.code, 1);
    let lines: Vec<Value> = std::fs::read_to_string(env.path("v.jsonl"))
        .expect("violations")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[1]["x"], 7);
    assert_eq!(lines[1]["y"], 5);
    assert!(lines[1].get("position").is_none());
    // Partials merge to the same report.
    let p1 = env.run(&["check", "-s", "s.yaml", "d/a.png", "--format", "json", "--partial"]);
    let p2 = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "d/b.png",
        "d/clean.png",
        "--format",
        "json",
        "--partial",
    ]);
    std::fs::write(env.path("p1.json"), &p1.stdout).expect("write");
    std::fs::write(env.path("p2.json"), &p2.stdout).expect("write");
    let merged = env.run(&["merge", "p2.json", "p1.json", "--format", "json"]);
    let merged = merged.json();
    assert_eq!(check(&merged, "pixels", "class"), c);
}

#[test]
fn mask_hints_and_the_binary_mask_warning() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
os.makedirs("bin", exist_ok=True); os.makedirs("city", exist_ok=True); os.makedirs("voc", exist_ok=True)
os.makedirs("jpg", exist_ok=True); os.makedirs("wide", exist_ok=True); os.makedirs("resized", exist_ok=True)
m = np.zeros((8, 8), np.uint8); m[2:6, 2:6] = 255
Image.fromarray(m).save("bin/a.png")
c = np.arange(64, dtype=np.uint8).reshape(8, 8) % 34
Image.fromarray(c).save("city/a.png")
v = np.zeros((6, 6), np.uint8); v[1:3, 1:3] = 1; v[4:, 4:] = 15
im = Image.fromarray(v, "P"); pal = [0] * 768; pal[3:6] = [128, 0, 0]; pal[45:48] = [192, 128, 128]
im.putpalette(pal); im.save("voc/a.png")
Image.fromarray(m // 255 * 3).save("jpg/a.jpg", quality=75)
Image.fromarray(np.array([[300, 1], [2, 0]], np.uint16)).save("wide/a.png")
r = np.zeros((16, 16), np.uint8); r[:, 8:] = 255
Image.fromarray(r).resize((23, 23), Image.BILINEAR).save("resized/a.png")
"#,
    );
    let run = |dir: &str, rule: &str, code: i32| {
        env.write("s.yaml", &format!("version: 1\ncolumns:\n  pixels: {rule}\n"));
        env.check_json(&["-s", "s.yaml", dir], code)
    };
    let hint = |r: &Value| check(r, "pixels", "class")["hint"].as_str().unwrap_or("").to_string();
    // 0/255 against 2 classes with ignore_index 255: nothing out of range, and a warning.
    let r = run("bin", "{kind: class, num_classes: 2, ignore_index: 255}", 0);
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("only 0 and 255") && warnings.contains("ignores every foreground"),
        "{r:#}"
    );
    let r = run("bin", "{kind: class, num_classes: 2}", 1);
    assert!(hint(&r).contains("0/255"), "{r:#}");
    let r = run("city", "{kind: class, num_classes: 19, ignore_index: 255}", 1);
    assert!(hint(&r).contains("labelIds"), "{r:#}");
    let r = run(
        "voc",
        "{kind: class, num_classes: 21, ignore_index: 255, decode: luminance}",
        1,
    );
    assert!(hint(&r).contains("luminance of each palette colour"), "{r:#}");
    let raw = run("voc", "{kind: class, num_classes: 21, ignore_index: 255}", 0);
    assert_eq!(check(&raw, "pixels", "class")["violations"], 0);
    let r = run("jpg", "{kind: class, num_classes: 2, ignore_index: 255}", 1);
    assert!(hint(&r).contains("JPEG"), "{r:#}");
    assert!(r["warnings"].to_string().contains("a JPEG mask"), "{r:#}");
    let r = run("wide", "{kind: class, num_classes: 21, ignore_index: 255}", 1);
    assert!(hint(&r).contains("16-bit"), "{r:#}");
    let r = run("resized", "{kind: class, num_classes: 2, ignore_index: 255}", 1);
    assert!(hint(&r).contains("NEAREST"), "{r:#}");
}

#[test]
fn colour_masks_map_colours_to_classes() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
a = np.zeros((4, 6, 3), np.uint8); a[:, 3:] = (128, 64, 128); a[1, 1] = (12, 7, 200); a[3, 5] = (70, 70, 70)
Image.fromarray(a).save("cam.png")
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels:\n    kind: class\n    num_classes: 3\n    colors: {\"0,0,0\": 0, \"#804080\": 1, \"70, 70, 70\": 7}\n",
    );
    let r = env.check_json(&["-s", "s.yaml", "cam.png"], 1);
    let c = check(&r, "pixels", "class");
    assert_eq!(c["violations"], 2);
    assert_eq!(c["examples"][0]["value"], "(12, 7, 200)");
    assert_eq!(
        (c["examples"][0]["x"].as_u64(), c["examples"][0]["y"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(c["examples"][1]["value"], 7);
    // Raw reading of an RGB mask without a map is the file's error.
    env.write(
        "raw.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 3}\n",
    );
    let r = env.check_json(&["-s", "raw.yaml", "cam.png"], 2);
    assert!(
        r["errors"][0]["message"].as_str().unwrap_or("").contains("RGB"),
        "{r:#}"
    );
}

#[test]
fn image_columns_in_tables_are_decoded_row_by_row() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
def png(a):
    b = io.BytesIO(); Image.fromarray(a).save(b, format="PNG"); return b.getvalue()
import io
good = png(np.zeros((3, 4), np.uint8))
bad = np.zeros((5, 6), np.uint8); bad[4, 5] = 99; bad[0, 1] = 30
rows = [good, png(bad), None, good]
hf = pa.array([{"bytes": r, "path": "x.png"} if r is not None else None for r in rows],
              type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
pq.write_table(pa.table({"label": pa.array(rows, pa.binary()), "image": hf, "id": [0, 1, 2, 3]}), "t.parquet")
pq.write_table(pa.table({"label": pa.array([good, b"not an image"], pa.binary())}), "broken.parquet")
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 21, ignore_index: 255, decode: raw, nullable: true}\n  image: {kind: class, num_classes: 21, ignore_index: 255, reduce_zero_label: true}\n",
    );
    let r = env.check_json(&["-s", "s.yaml", "t.parquet"], 1);
    assert_eq!(r["rows"], 4);
    let c = check(&r, "label", "class");
    assert_eq!(c["violations"], 2);
    let at: Vec<(u64, u64, u64, u64)> = c["examples"]
        .as_array()
        .expect("examples")
        .iter()
        .map(|e| {
            (
                e["row"].as_u64().unwrap_or(9),
                e["x"].as_u64().unwrap_or(9),
                e["y"].as_u64().unwrap_or(9),
                e["value"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(at, [(1, 1, 0, 30), (1, 5, 4, 99)]);
    // reduce_zero_label: 0 -> 255 (ignored), 99 -> 98, 30 -> 29; the null row is a null.
    let c = check(&r, "image", "class");
    assert_eq!(c["violations"], 2);
    assert_eq!(c["examples"][0]["value"], 29);
    assert_eq!(check(&r, "image", "null")["violations"], 1);
    assert_eq!(check(&r, "label", "null")["violations"], 0);
    let r = env.check_json(&["-s", "s.yaml", "broken.parquet"], 2);
    let said = r["errors"].to_string();
    assert!(said.contains("row 1: not an image"), "{r:#}");
}

#[test]
fn image_files_are_searched_only_for_a_pixels_column() {
    let env = Env::new();
    env.python(
        "from PIL import Image\nos.makedirs('d', exist_ok=True)\nImage.fromarray(np.zeros((2, 2), np.uint8)).save('d/readme.png')\npq.write_table(pa.table({'label': [0, 1]}), 'd/t.parquet')\n",
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
    );
    let r = env.check_json(&["-s", "s.yaml", "d"], 0);
    assert_eq!(r["files"], 1);
}

#[test]
fn hostile_images_are_their_files_errors() {
    let env = Env::new();
    env.python(
        r#"
import struct, zlib
from PIL import Image
os.makedirs("h", exist_ok=True)
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
Image.fromarray(np.zeros((50, 50), np.uint8)).save("h/ok.png")
good = open("h/ok.png", "rb").read()
open("h/truncated.png", "wb").write(good[: len(good) // 2])
bad = bytearray(good); bad[-20] ^= 0xff; open("h/crc.png", "wb").write(bytes(bad))
sig = b"\x89PNG\r\n\x1a\n"
open("h/huge.png", "wb").write(sig + chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 0, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b""))
# 13000 x 13000 of zeros: a decompression bomb within Pillow's limit is decoded, bounded
raw = zlib.compressobj(9)
data = b"".join(raw.compress(b"\0" * 13001) for _ in range(13000)) + raw.flush()
open("h/bomb.png", "wb").write(sig + chunk(b"IHDR", struct.pack(">IIBBBBB", 13000, 13000, 8, 0, 0, 0, 0)) + chunk(b"IDAT", data) + chunk(b"IEND", b""))
open("h/ifd.tif", "wb").write(b"II*\0" + struct.pack("<I", 0xfffffff0) + b"\0" * 16)
open("h/empty.bmp", "wb").write(b"BM" + b"\0" * 10)
open("h/junk.jpg", "wb").write(b"\xff\xd8\xff" + bytes(range(256)) * 4)
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 2}\n",
    );
    let (code, peak_kb, out) = env.peak(&["check", "-s", "s.yaml", "h", "--format", "json"]);
    assert_eq!(code, 2, "{out}");
    let r: Value = serde_json::from_str(&out).expect("json");
    let failed: Vec<&str> = r["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["file"].as_str().unwrap_or(""))
        .collect();
    for f in [
        "h/crc.png",
        "h/empty.bmp",
        "h/huge.png",
        "h/ifd.tif",
        "h/junk.jpg",
        "h/truncated.png",
    ] {
        assert!(failed.contains(&f), "{f} is not an error: {r:#}");
    }
    assert!(
        !failed.contains(&"h/ok.png") && !failed.contains(&"h/bomb.png"),
        "{r:#}"
    );
    // The bomb's 169 MB of pixels are the bound; nothing holds the 10^10 the huge PNG claims.
    assert!(peak_kb < 600_000, "peak RSS {peak_kb} KB");
}

#[test]
fn lossy_masks_decode_as_pillow_and_always_warn() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
rng = np.random.default_rng(3)
os.makedirs("j", exist_ok=True)
Image.fromarray((rng.integers(0, 4, (37, 29)) * 60).astype(np.uint8)).save("j/g.jpg", quality=90)
Image.fromarray(rng.integers(0, 256, (13, 17, 3), dtype=np.uint8)).save("j/c.jpg", quality=90)
Image.fromarray(rng.integers(0, 256, (13, 17, 3), dtype=np.uint8)).save("j/c.webp", quality=90)
Image.fromarray(rng.integers(0, 256, (13, 17, 3), dtype=np.uint8)).save("j/l.webp", lossless=True)
json.dump({f: np.array(Image.open("j/" + f).convert("L")).tolist() for f in sorted(os.listdir("j"))}, open("lum.json", "w"))
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: values, allowed: [-7], decode: luminance}\n",
    );
    let r = env.check_json(&["-s", "s.yaml", "j", "--max-examples", "100000"], 1);
    let want: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(env.path("lum.json")).expect("lum")).expect("json");
    for (file, rows) in &want {
        let rows = as_rows(rows);
        let mut max_diff: f64 = 0.0;
        let mut seen = 0;
        for e in check(&r, "pixels", "values")["examples"].as_array().expect("examples") {
            if e["file"].as_str() != Some(&format!("j/{file}")) {
                continue;
            }
            let (x, y) = (
                e["x"].as_u64().unwrap_or(0) as usize,
                e["y"].as_u64().unwrap_or(0) as usize,
            );
            max_diff = max_diff.max((rows[y][x] - e["value"].as_f64().unwrap_or(-1.0)).abs());
            seen += 1;
        }
        assert_eq!(seen, rows.len() * rows[0].len(), "{file}: every pixel");
        // WebP through image-webp and JPEG through libjpeg-turbo are exact.
        assert_eq!(max_diff, 0.0, "{file}: differs from Pillow by {max_diff}");
        assert!(r["warnings"].to_string().contains(&format!("j/{file}: a ")), "{r:#}");
    }
}

#[test]
fn init_on_a_mask_folder_proposes_decode_classes_and_ignore_255() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
os.makedirs("voc", exist_ok=True); os.makedirs("cam", exist_ok=True); os.makedirs("model", exist_ok=True)
for i in range(3):
    a = np.zeros((6, 6), np.uint8); a[1:3, 1:3] = i + 4; a[5, 5] = 255
    im = Image.fromarray(a, "P"); im.putpalette(list(range(256)) * 3); im.save(f"voc/{i}.png")
Image.fromarray((np.eye(4) * 255).astype(np.uint8)).save("voc/bin.png")
c = np.zeros((3, 3, 3), np.uint8); c[0] = (128, 64, 128); c[2] = (70, 70, 70)
Image.fromarray(c).save("cam/a.png")
json.dump({"model_type": "segformer", "id2label": {str(i): str(i) for i in range(150)}}, open("model/config.json", "w"))
"#,
    );
    let run = env.run(&["init", "voc", "-o", "voc.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(env.path("voc.yaml")).expect("schema");
    for want in [
        "  pixels:\n    kind: class\n    num_classes: 7  # observed classes 0..=6",
        "ignore_index: 255",
        "decode: raw  # palette masks",
        "WARNING: 1 of 4 masks hold only 0 and 255",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
    assert!(!text.contains("not checked"), "{text}");
    env.check_json(&["-s", "voc.yaml", "voc"], 0);
    let run = env.run(&["init", "voc", "--model", "model", "-o", "model.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(env.path("model.yaml")).expect("schema");
    assert!(
        text.contains("num_classes: {hf_config: model, key: num_labels}"),
        "{text}"
    );
    env.check_json(&["-s", "model.yaml", "voc"], 0);
    assert!(!run.stderr.contains("warning:"), "{}", run.stderr);
    // A head of 6 classes: the masks' class 6 breaks it; the model's bound
    // stays, init says so, and check reports the one mask holding it.
    env.python(
        r#"json.dump({"model_type": "segformer", "id2label": {str(i): str(i) for i in range(6)}}, open("model/config.json", "w"))"#,
    );
    let run = env.run(&["init", "voc", "--model", "model", "-o", "six.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "warning: column `pixels` reaches class 6 but the model's head has 6 classes (num_labels): `preflight check` will report them"
        ),
        "{}",
        run.stderr
    );
    let text = std::fs::read_to_string(env.path("six.yaml")).expect("schema");
    assert!(
        text.contains("num_classes: {hf_config: model, key: num_labels}"),
        "{text}"
    );
    let r = env.check_json(&["-s", "six.yaml", "voc"], 1);
    assert_eq!(check(&r, "pixels", "class")["violations"], 4, "{r:#}");
    let run = env.run(&["init", "cam", "-o", "cam.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(env.path("cam.yaml")).expect("schema");
    assert!(text.contains("colors:") && text.contains("\"128,64,128\": 2"), "{text}");
    env.check_json(&["-s", "cam.yaml", "cam"], 0);
    assert!(!text.contains("pair_with"), "{text}");
    // Images beside the masks (as `masks`/`images`, or mmseg's
    // `annotations/training` and `images/training`): pair_with is proposed.
    env.python(
        r#"
from PIL import Image
for m, i in [("d/masks", "d/images"), ("ade/annotations/training", "ade/images/training")]:
    os.makedirs(m, exist_ok=True); os.makedirs(i, exist_ok=True)
    Image.fromarray(np.zeros((4, 6), np.uint8)).save(m + "/a.png")
    Image.fromarray(np.zeros((4, 6, 3), np.uint8)).save(i + "/a.jpg")
"#,
    );
    for (dir, want) in [
        ("d/masks", "pair_with: ../images  #"),
        ("ade/annotations/training", "pair_with: ../../images/training  #"),
    ] {
        let run = env.run(&["init", dir, "-o", "p.yaml", "--force"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let text = std::fs::read_to_string(env.path("p.yaml")).expect("schema");
        assert!(text.contains(want), "{want:?} not in:\n{text}");
        env.check_json(&["-s", "p.yaml", dir], 0);
    }
}

#[test]
fn image_bytes_on_stdin_are_decoded_too() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
import io
b = io.BytesIO(); a = np.zeros((3, 3), np.uint8); a[1, 2] = 77; Image.fromarray(a).save(b, format="PNG")
t = pa.table({"mask": pa.array([b.getvalue(), b"junk"], pa.binary())})
with pa.ipc.new_stream("s.arrows", t.schema) as w:
    w.write_table(t)
"#,
    );
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  mask: {kind: class, num_classes: 21, decode: raw}\n",
    );
    let input = std::fs::read(env.path("s.arrows")).expect("stream");
    let (code, out, err) = env.run_piped(&["check", "-s", "s.yaml", "--format", "json", "-"], &input);
    assert_eq!(code, 2, "{err}");
    let r: Value = serde_json::from_slice(&out).expect("json");
    let c = check(&r, "mask", "class");
    assert_eq!(c["violations"], 1);
    assert_eq!(
        (c["examples"][0]["x"].as_u64(), c["examples"][0]["y"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(r["errors"].to_string().contains("row 1: not an image"), "{r:#}");
}

/// Per file of `m/`: what `np.array(Image.open(f))` gives against a
/// `num_classes` / `ignore_index` bound — the count of each offending value,
/// or `null` where Pillow cannot open or load the file (the loader fails on
/// it) — written to `pillow.json`.
const PILLOW_COUNTS: &str = r#"
from PIL import Image
def pillow_counts(c, ignore):
    out = {}
    for f in sorted(os.listdir("m")):
        try:
            a = np.array(Image.open("m/" + f)).astype(np.int64)
        except Exception:
            out[f] = None
            continue
        bad = ((a >= c) | (a < 0)) & (a != ignore)
        v, n = np.unique(a[bad], return_counts=True)
        out[f] = {str(int(x)): int(k) for x, k in zip(v, n)}
    json.dump(out, open("pillow.json", "w"))
"#;

/// Checks `m/` with a class rule of `c` classes and ignore index `ignore`
/// and compares every file with `pillow.json`: the same count per offending
/// value, and an error exactly where Pillow fails. Returns how many files
/// Pillow opened and how many it refused.
fn compare_with_pillow_counts(env: &Env, c: u32, ignore: u32) -> (usize, usize) {
    env.write(
        "c.yaml",
        &format!("version: 1\ncolumns:\n  pixels: {{kind: class, num_classes: {c}, ignore_index: {ignore}}}\n"),
    );
    let r = env.run(&[
        "check",
        "-s",
        "c.yaml",
        "m",
        "--format",
        "json",
        "--violations-out",
        "v.jsonl",
    ]);
    let report = r.json();
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("pillow.json")).expect("pillow.json")).expect("json");
    let mut got: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for line in std::fs::read_to_string(env.path("v.jsonl"))
        .expect("violations")
        .lines()
    {
        let v: Value = serde_json::from_str(line).expect("jsonl");
        let file = v["file"].as_str().expect("file").trim_start_matches("m/").to_string();
        *got.entry(file).or_default().entry(v["value"].to_string()).or_default() += 1;
    }
    let errors: Vec<String> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["file"].as_str().expect("file").trim_start_matches("m/").to_string())
        .collect();
    let (mut opened, mut refused) = (0, 0);
    for (file, counts) in want.as_object().expect("object") {
        if counts.is_null() {
            assert!(
                errors.contains(file),
                "{file}: Pillow cannot open it, preflight must fail it: {report:#}"
            );
            refused += 1;
            continue;
        }
        assert!(
            !errors.contains(file),
            "{file}: Pillow opens it, preflight failed it: {report:#}"
        );
        let want: BTreeMap<String, u64> = counts
            .as_object()
            .expect("counts")
            .iter()
            .map(|(k, n)| (k.clone(), n.as_u64().expect("count")))
            .collect();
        assert_eq!(
            got.remove(file).unwrap_or_default(),
            want,
            "{file}: counts differ from Pillow's"
        );
        opened += 1;
    }
    let code = if !errors.is_empty() {
        2
    } else if want
        .as_object()
        .expect("o")
        .values()
        .any(|c| c.as_object().is_some_and(|c| !c.is_empty()))
    {
        1
    } else {
        0
    };
    assert_eq!(r.code, code, "{}", r.stderr);
    (opened, refused)
}

#[test]
fn tiff_masks_of_every_sample_type_open_as_pillow_13_opens_them() {
    // Palette TIFFs (Pillow's own P save, tifffile's colormap) give their
    // indices (ZSTD-compressed ones too, as Pillow writes them); int8 reads
    // as its unsigned bytes (`L`), little-endian uint32 as int32 (`I;32N`,
    // 2^31 wraps), WhiteIsZero at 16 bits uninverted,
    // BigTIFF like TIFF; float64, int64 and big-endian uint32 have no Pillow
    // mode: the loader fails on them, so they are errors.
    let env = Env::new();
    env.python(&format!(
        r#"{PILLOW_COUNTS}
import tifffile
os.makedirs("m", exist_ok=True)
rng = np.random.default_rng(5)
a = rng.integers(0, 30, (23, 19)); a[0, 0] = 255; a[1, 1] = 200
im = Image.fromarray(a.astype(np.uint8)).convert("P"); im.putpalette(rng.integers(0, 256, 768).tolist())
im.save("m/pillow_p.tif")
im.save("m/pillow_p_lzw.tif", compression="tiff_lzw")
im.save("m/pillow_p_zstd.tif", compression="zstd")
Image.fromarray(a.astype(np.uint16)).save("m/pillow_i16_zstd.tif", compression="zstd")
cm = np.arange(3 * 256, dtype=np.uint16).reshape(3, 256) * 85
tifffile.imwrite("m/tifffile_p.tif", a.astype(np.uint8), colormap=cm, photometric="palette")
s8 = a.astype(np.int8); s8[2, 2] = -1; s8[3, 3] = -128
tifffile.imwrite("m/int8.tif", s8)
u32 = a.astype(np.uint32); u32[4, 4] = 2 ** 31 + 7; u32[5, 5] = 2 ** 32 - 1
tifffile.imwrite("m/uint32.tif", u32)
tifffile.imwrite("m/uint32_be.tif", u32, byteorder=">")
tifffile.imwrite("m/float64.tif", a.astype(np.float64))
tifffile.imwrite("m/int64.tif", a.astype(np.int64))
tifffile.imwrite("m/bigtiff.tif", a.astype(np.uint8), bigtiff=True)
tifffile.imwrite("m/white16.tif", a.astype(np.uint16), photometric="miniswhite")
tifffile.imwrite("m/white8.tif", a.astype(np.uint8), photometric="miniswhite")
tifffile.imwrite("m/lx.tif", np.stack([a, a + 1], -1).astype(np.uint8), photometric="minisblack", extrasamples=["unspecified"])
pillow_counts(21, 255)
# Gray + alpha (Pillow's LA save, tifffile's unassociated alpha) and planar
# RGB, read as luminance.
os.makedirs("la", exist_ok=True)
Image.fromarray(np.stack([a, a], -1).astype(np.uint8), "LA").save("la/pillow.tif")
tifffile.imwrite("la/tifffile.tif", np.stack([a, a + 1], -1).astype(np.uint8), photometric="minisblack", extrasamples=["unassalpha"])
# RGB stored planar (one plane per sample), which Pillow interleaves.
tifffile.imwrite("la/planar_rgb.tif", np.stack([a, a // 2, 255 - a]).astype(np.uint8), photometric="rgb", planarconfig="separate")
lum = {{}}
for f in sorted(os.listdir("la")):
    g = np.array(Image.open("la/" + f).convert("L")).astype(np.int64)
    lum[f] = int(((g >= 21) & (g != 255)).sum())
json.dump(lum, open("la.json", "w"))
"#
    ));
    let (opened, refused) = compare_with_pillow_counts(&env, 21, 255);
    assert_eq!((opened, refused), (11, 3));
    // LA TIFFs were refused as "Multiband" images even under luminance,
    // and planar RGB read only its first plane (an error).
    let lum: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("la.json")).expect("la.json")).expect("json");
    env.write(
        "l.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 21, ignore_index: 255, decode: luminance}\n",
    );
    for (f, n) in lum.as_object().expect("object") {
        let report = env.check_json(&["-s", "l.yaml", &format!("la/{f}")], 1);
        assert_eq!(check(&report, "pixels", "class")["violations"], *n, "{f}");
    }
}

#[test]
fn png_chunks_before_the_image_data_with_a_bad_crc_are_errors_as_pillow_refuses_them() {
    // Pillow checks the CRC of every chunk before the first IDAT (tEXt,
    // pHYs, PLTE, ...) and refuses the file on a mismatch: the loader fails
    // on it. A CRC mismatch in an ancillary chunk used to pass unnoticed.
    let env = Env::new();
    env.python(&format!(
        r#"{PILLOW_COUNTS}
from PIL import PngImagePlugin
os.makedirs("m", exist_ok=True)
rng = np.random.default_rng(9)
a = rng.integers(0, 30, (17, 13)).astype(np.uint8); a[0, 0] = 255
info = PngImagePlugin.PngInfo(); info.add_text("Software", "labeler")
Image.fromarray(a).save("m/good.png", pnginfo=info)
d = bytearray(open("m/good.png", "rb").read())
def spoil(kind, name):
    b = bytearray(d)
    i = b.index(kind); n = int.from_bytes(b[i - 4:i], "big")
    b[i + 4 + n] ^= 1
    open(name, "wb").write(b)
spoil(b"tEXt", "m/text_crc.png")
spoil(b"pHYs", "m/phys_crc.png") if b"pHYs" in d else None
im = Image.fromarray(a).convert("P"); im.putpalette(rng.integers(0, 256, 768).tolist()); im.save("m/p.png")
b = bytearray(open("m/p.png", "rb").read()); i = b.index(b"PLTE"); n = int.from_bytes(b[i - 4:i], "big"); b[i + 4 + n] ^= 1
open("m/plte_crc.png", "wb").write(b)
pillow_counts(21, 255)
spoil(b"IDAT", "idat_crc.png")
"#
    ));
    let (opened, refused) = compare_with_pillow_counts(&env, 21, 255);
    assert_eq!(opened, 2);
    assert!(refused >= 2, "{refused}");
    // A bad CRC in IDAT (which Pillow does not check) is still an error
    // (the file is corrupt), said plainly.
    env.write(
        "s.yaml",
        "version: 1\ncolumns:\n  pixels: {kind: class, num_classes: 21, ignore_index: 255}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "idat_crc.png"], 2);
    let e = &report["errors"][0];
    assert_eq!(e["file"], "idat_crc.png");
    assert!(
        e["message"]
            .as_str()
            .expect("message")
            .starts_with("PNG: the CRC of an `IDAT` chunk does not match"),
        "{report:#}"
    );
}

#[test]
fn bmp_gray_palettes_read_as_pillow_reads_them() {
    // Pillow drops a BMP palette that is black/white (2 colours) or (i, i, i)
    // for every index and reads the rows as `1` or `L` whatever their bit
    // depth: a 4-bit bitmap with such a palette fails in its decoder (the
    // loader cannot open it), and a 4- or 8-bit one with a black/white
    // palette reads as packed bits, not as its indices. Pillow does not
    // write these; a small writer here does (as mask tools do).
    let env = Env::new();
    env.python(&format!(
        r#"{PILLOW_COUNTS}
import struct
os.makedirs("m", exist_ok=True)
def bmp(path, arr, bits, palette):
    h, w = arr.shape
    stride = ((w * bits + 31) // 32) * 4
    rows = []
    for r in arr:
        per = 8 // bits; b = bytearray()
        for i in range(0, w, per):
            acc = 0
            for j in range(per):
                acc = (acc << bits) | (int(r[i + j]) if i + j < w else 0)
            b.append(acc)
        rows.append(bytes(b) + b"\0" * (stride - len(b)))
    px = b"".join(rows[::-1])
    pal = b"".join(bytes([c[2], c[1], c[0], 0]) for c in palette)
    off = 14 + 40 + len(pal)
    hdr = b"BM" + struct.pack("<IHHI", off + len(px), 0, 0, off) + struct.pack(
        "<IiiHHIIiiII", 40, w, h, 1, bits, 0, len(px), 2835, 2835, len(palette), 0)
    open(path, "wb").write(hdr + pal + px)
rng = np.random.default_rng(4)
a = rng.integers(0, 16, (7, 13))
bmp("m/g4_gray16.bmp", a, 4, [(i, i, i) for i in range(16)])
bmp("m/g4_gray3.bmp", a % 3, 4, [(0, 0, 0), (1, 1, 1), (2, 2, 2)])
bmp("m/g4_bw.bmp", a % 2, 4, [(0, 0, 0), (255, 255, 255)])
bmp("m/g8_bw.bmp", a % 2, 8, [(0, 0, 0), (255, 255, 255)])
bmp("m/g8_gray16.bmp", a, 8, [(i, i, i) for i in range(16)])
bmp("m/c4.bmp", a, 4, [(i * 16, 255 - i, 7) for i in range(16)])
bmp("m/g1_bw.bmp", a % 2, 1, [(0, 0, 0), (255, 255, 255)])
# a header claiming 2^20 palette colours (biClrUsed): Pillow refuses it
bmp("m/c8_huge_palette.bmp", a, 8, [(i, 0, 0) for i in range(16)])
d = bytearray(open("m/c8_huge_palette.bmp", "rb").read()); d[46:50] = struct.pack("<I", 1 << 20)
open("m/c8_huge_palette.bmp", "wb").write(d)
pillow_counts(1, 255)
"#
    ));
    let (opened, refused) = compare_with_pillow_counts(&env, 1, 255);
    assert_eq!((opened, refused), (5, 3));
}

#[test]
fn truncated_jpeg_masks_are_errors_as_pillow_raises_on_them() {
    // Pillow raises "image file is truncated" on a JPEG whose decoding
    // needs data past its end (here even when only the end-of-image marker
    // is missing: the last scan waits for it).
    let env = Env::new();
    env.python(&format!(
        r#"{PILLOW_COUNTS}
import io
os.makedirs("m", exist_ok=True)
rng = np.random.default_rng(8)
# 8x8 blocks of one value at quality 100: decoded alike by every decoder
a = (rng.integers(0, 5, (9, 11)) * 6).astype(np.uint8).repeat(8, 0).repeat(8, 1)
for name, kw in [("base", {{}}), ("prog", {{"progressive": True}})]:
    b = io.BytesIO(); Image.fromarray(a).save(b, format="JPEG", quality=100, **kw); d = b.getvalue()
    open(f"m/{{name}}_whole.jpg", "wb").write(d)
    open(f"m/{{name}}_half.jpg", "wb").write(d[: len(d) // 2])
    open(f"m/{{name}}_no_eoi.jpg", "wb").write(d[:-2])
Image.fromarray(a).save("m/clean.png")
pillow_counts(21, 255)
"#
    ));
    let (opened, refused) = compare_with_pillow_counts(&env, 21, 255);
    assert_eq!((opened, refused), (3, 4));
}

/// GIF, Netpbm and LZMA-compressed TIFF masks of random sizes and values,
/// written by Pillow (and patched or written by hand for what its writers
/// do not make: a frame offset in a larger screen or beyond it, a local
/// colour table, a gray-ramp palette, every maxval, comments), with broken
/// ones beside them. `expected.json` holds what Pillow reads
/// (`np.array(Image.open(f))`, `.convert("L")`) or `{"error": ...}` where
/// Pillow raises.
const MORE_FORMATS: &str = r#"
import struct
def first_image(b):
    flags = b[10]
    at = 13 + ((3 << ((flags & 7) + 1)) if flags & 128 else 0)
    while b[at] != 0x2c:
        at += 2
        while b[at]:
            at += b[at] + 1
        at += 1
    return at
def gif(path, arr, pal, screen=None, offset=None, local=False, ramp=False, more=None, **kw):
    im = Image.fromarray(arr.astype(np.uint8), "P"); im.putpalette(pal)
    if more is not None:
        m = Image.fromarray(more.astype(np.uint8), "P"); m.putpalette(pal)
        im.save(path, save_all=True, append_images=[m], **kw)
    else:
        im.save(path, **kw)
    b = bytearray(open(path, "rb").read())
    flags = b[10]; size = 3 << ((flags & 7) + 1)
    if ramp:
        b[13:13 + size] = bytes(i // 3 for i in range(size))
    if local:
        table = b[13:13 + size]; del b[13:13 + size]; b[10] = flags & 0x78
        at = first_image(b)
        b[at + 9] |= 0x80 | (flags & 7); b[at + 10:at + 10] = table
    if screen:
        b[6:10] = struct.pack("<HH", *screen)
    if offset:
        at = first_image(b); b[at + 1:at + 5] = struct.pack("<HH", *offset)
    open(path, "wb").write(bytes(b))
def pnm(path, magic, arr, maxval=None, sep=b" ", comment=False):
    h, w = arr.shape[:2]
    head = b"P%d" % magic + (b"\n# made here\n" if comment else b"\n") + b"%d %d\n" % (w, h)
    if maxval is not None:
        head += b"%d\n" % maxval
    flat = arr.reshape(-1)
    if magic in (1, 2, 3):
        body = sep.join(b"%d" % v for v in flat) + b"\n"
        if comment:
            body = body.replace(b" ", b" #c\n", 1)
    elif magic == 4:
        body = np.packbits(arr.astype(np.uint8), axis=1).tobytes()
    elif maxval > 255:
        body = flat.astype(">u2").tobytes()
    else:
        body = flat.astype(np.uint8).tobytes()
    open(path, "wb").write(head + body)
def tiffs(path, im, **kw):
    im.save(path, compression="lzma", **kw)
def expected_or_error(path):
    try:
        return expected(path)
    except Exception as e:
        return {"error": "%s: %s" % (type(e).__name__, e)}

os.makedirs("m", exist_ok=True)
def size():
    return int(rng.integers(1, 40)), int(rng.integers(1, 40))
def pal(n):
    return rng.integers(0, 256, 3 * n, dtype=np.uint8).tolist()
# GIF: the first frame of one or two, interlaced or not, a transparent
# index, a frame offset in a larger screen (filled with 0, or with the
# transparent index) or reaching past it (the image grows), a local table,
# a gray-ramp palette (mode L).
for k in range(4):
    h, w = size(); a = rng.integers(0, 2 ** (k + 1), (h, w))
    gif(f"m/g{k}.gif", a, pal(256), interlace=bool(k % 2))
h, w = size()
gif("m/g_two.gif", rng.integers(0, 9, (h, w)), pal(9), more=rng.integers(0, 9, (h, w)))
gif("m/g_trns.gif", rng.integers(0, 5, (9, 7)), pal(5), transparency=3, screen=(12, 10), offset=(2, 1))
gif("m/g_small.gif", rng.integers(0, 5, (9, 7)), pal(5), screen=(20, 15), offset=(3, 4))
gif("m/g_past.gif", rng.integers(0, 5, (9, 7)), pal(5), offset=(5, 6))
gif("m/g_local.gif", rng.integers(0, 30, (11, 13)), pal(30), local=True)
gif("m/g_ramp.gif", rng.integers(0, 16, (11, 13)), pal(16), ramp=True)
gif("m/g_ramp_local.gif", rng.integers(0, 16, (11, 13)), pal(16), ramp=True, local=True)
Image.fromarray(rng.integers(0, 256, (13, 17)).astype(np.uint8)).save("m/g_pillow_l.gif")
good = open("m/g0.gif", "rb").read()
open("m/g_cut.gif", "wb").write(good[: len(good) * 2 // 3])
open("m/g_header.gif", "wb").write(good[:13])
open("m/g_noimage.gif", "wb").write(good[:13] + b";")
# A stray byte before the image (Pillow skips it); a frame taller than its
# data; an LZW code size of 12.
b = bytearray(good); at = first_image(b); b[at:at] = b"\x07"; open("m/g_stray.gif", "wb").write(bytes(b))
b = bytearray(good); at = first_image(b); b[at + 7:at + 9] = struct.pack("<H", 2 * b[at + 7] + 1)
open("m/g_tall.gif", "wb").write(bytes(b))
b = bytearray(good); at = first_image(b); b[at + 10] = 12; open("m/g_codesize.gif", "wb").write(bytes(b))
# Netpbm: every form at random maxvals (samples above a binary maxval
# clamp), Pillow's own writers, comments, one-byte separators.
for magic in (2, 3, 5, 6):
    for maxval in (255, int(rng.integers(1, 255)), 65535, int(rng.integers(256, 65535))):
        h, w = size(); shape = (h, w, 3) if magic in (3, 6) else (h, w)
        a = rng.integers(0, maxval + 1, shape)
        if magic > 3 and maxval not in (255, 65535):
            a.reshape(-1)[0] = min(int(maxval * 1.5) + 1, 65535 if maxval > 255 else 255)
        pnm(f"m/n{magic}_{maxval}.pnm", magic, a, maxval)
for magic in (1, 4):
    h, w = size(); pnm(f"m/n{magic}.pbm", magic, rng.integers(0, 2, (h, w)))
h, w = size(); pnm("m/n1_packed.pbm", 1, rng.integers(0, 2, (h, w)), sep=b"")
h, w = size(); pnm("m/n2_comment.pgm", 2, rng.integers(0, 100, (h, w)), 99, comment=True)
h, w = size(); pnm("m/n5_comment.pgm", 5, rng.integers(0, 256, (h, w)), 255, comment=True)
h, w = size(); a = rng.integers(0, 256, (h, w)).astype(np.uint8)
Image.fromarray(a).save("m/n_pillow.pgm")
Image.fromarray(a.astype(np.uint16) * 200).save("m/n_pillow16.pgm")
Image.fromarray(a > 100).save("m/n_pillow.pbm")
Image.fromarray(rng.integers(0, 256, (h, w, 3)).astype(np.uint8)).save("m/n_pillow.ppm")
open("m/n_maxval0.pgm", "wb").write(b"P5 2 2 0\n\0\0\0\0")
open("m/n_maxval_big.pgm", "wb").write(b"P2 2 2 70000\n0 0 0 0\n")
open("m/n_cut.pgm", "wb").write(b"P5 4 4 255\n" + bytes(10))
open("m/n_cut16.ppm", "wb").write(b"P6 2 2 1000\n" + bytes(20))
open("m/n_above.pgm", "wb").write(b"P2 2 2 10\n0 11 0 0\n")
open("m/n_negative.pgm", "wb").write(b"P2 2 2 10\n0 -1 0 0\n")
open("m/n_short.ppm", "wb").write(b"P3 2 2 255\n0 1 2 3\n")
open("m/n_token.pbm", "wb").write(b"P1 2 2\n0 1 2 0\n")
open("m/n_head.pgm", "wb").write(b"P5 2")
open("m/n_long.pgm", "wb").write(b"P2 1 1 255\n00000000000001\n")
open("m/n_crlf.pgm", "wb").write(b"P5 2 2 255\r\n" + bytes([1, 2, 3, 4]))
# Python's int() on tokens, CR separators, a comment inside a header token,
# a comment at the end, a long token after the last sample (refused only
# when no white space ends the file), and a sample token across a comment.
open("m/n_int.pgm", "wb").write(b"P2 2 2 +255\n0 1_0 007 255\n")
open("m/n_cr.pgm", "wb").write(b"P2\r2 2\r255\r0 1 2 3")
open("m/n_split.pgm", "wb").write(b"P5 2 2 25#c\n5\n" + bytes([9, 8, 7, 6]))
open("m/n_end_comment.pgm", "wb").write(b"P2 2 2 255\n1 2 3 4 #end")
open("m/n_long_last.pgm", "wb").write(b"P2 1 1 255\n5 00000000000001")
open("m/n_long_last_nl.pgm", "wb").write(b"P2 1 1 255\n5 00000000000001\n")
open("m/n_joined.pgm", "wb").write(b"P2 2 1 255\n1#c\n2 3\n")
# LZMA TIFF (libtiff's xz: delta + LZMA2), several strips.
h, w = size(); a = rng.integers(0, 256, (h, w)).astype(np.uint8)
tiffs("m/z8.tif", Image.fromarray(a))
tiffs("m/z8_strips.tif", Image.fromarray(rng.integers(0, 256, (60, 37)).astype(np.uint8)), strip_size=256)
tiffs("m/z16.tif", Image.fromarray(rng.integers(0, 65536, (h, w)).astype(np.uint16)))
tiffs("m/z_rgb.tif", Image.fromarray(rng.integers(0, 256, (h, w, 3)).astype(np.uint8)), strip_size=64)
tiffs("m/z_one.tif", Image.fromarray(a > 128))
p = Image.fromarray(a % 20, "L").convert("P"); p.putpalette(pal(256))
tiffs("m/z_p.tif", p)
# What Pillow does not write: tiles, planar RGB, BigTIFF; tifffile's
# uncompressed file with each chunk compressed as libtiff does (xz, no
# check, delta by the sample size, then LZMA2).
import lzma
def lzma_tiff(path, arr, **kw):
    tifffile.imwrite(path, arr, **kw)
    with tifffile.TiffFile(path) as t:
        p = t.pages[0]
        tags = {n: p.tags[n] for n in ("TileOffsets", "TileByteCounts", "StripOffsets", "StripByteCounts", "Compression") if n in p.tags}
        chunks = list(zip(p.dataoffsets, p.databytecounts))
        bits = p.bitspersample
    b = bytearray(open(path, "rb").read())
    offs, cnts = [], []
    for o, n in chunks:
        c = lzma.compress(bytes(b[o:o + n]), format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE,
                          filters=[{"id": lzma.FILTER_DELTA, "dist": max(1, bits // 8)}, {"id": lzma.FILTER_LZMA2, "preset": 6}])
        offs.append(len(b)); cnts.append(len(c)); b += c
    for tag, vals in ((tags.get("TileOffsets") or tags["StripOffsets"], offs), (tags.get("TileByteCounts") or tags["StripByteCounts"], cnts)):
        struct.pack_into("<%d%s" % (len(vals), {3: "H", 4: "I", 16: "Q"}[int(tag.dtype)]), b, tag.valueoffset, *vals)
    struct.pack_into("<H", b, tags["Compression"].valueoffset, 34925)
    open(path, "wb").write(bytes(b))
import tifffile
h, w = size()
lzma_tiff("m/z_tiled.tif", rng.integers(0, 256, (h + 16, w + 16)).astype(np.uint8), tile=(16, 16))
lzma_tiff("m/z_tiled16.tif", rng.integers(0, 65536, (h, w)).astype(np.uint16), tile=(16, 16))
lzma_tiff("m/z_planar.tif", rng.integers(0, 256, (3, h, w)).astype(np.uint8), photometric="rgb", planarconfig="separate", rowsperstrip=7)
lzma_tiff("m/z_big.tif", rng.integers(0, 256, (h, w)).astype(np.uint8), rowsperstrip=3, bigtiff=True)
good = open("m/z8_strips.tif", "rb").read()
open("m/z_cut.tif", "wb").write(good[: len(good) // 2])
import tifffile
page = tifffile.TiffFile("m/z8_strips.tif").pages[0]
o, n = page.dataoffsets[1], page.databytecounts[1]
# A strip's xz stream damaged in its second half (zeros, random bytes):
# decoded as liblzma decodes it, to the rows it yields; one whose byte
# count cuts it short, which libtiff fails on.
bad = bytearray(good); bad[o + n // 2:o + n] = bytes(n - n // 2)
open("m/z_zeros.tif", "wb").write(bytes(bad))
bad = bytearray(good); bad[o + n // 2:o + n] = rng.integers(0, 256, n - n // 2, dtype=np.uint8).tobytes()
open("m/z_random.tif", "wb").write(bytes(bad))
tag = page.tags["StripByteCounts"]
short = "<H" if tag.dtype == 3 else "<I"
bad = bytearray(good); at = tag.valueoffset + struct.calcsize(short)
bad[at:at + struct.calcsize(short)] = struct.pack(short, n // 2)
open("m/z_short.tif", "wb").write(bytes(bad))
json.dump({f: expected_or_error("m/" + f) for f in sorted(os.listdir("m"))}, open("expected.json", "w"))
"#;

#[test]
fn gif_netpbm_and_lzma_tiff_masks_read_as_pillow_reads_them() {
    for seed in [21, 22, 23] {
        let env = Env::new();
        env.python(&format!(
            "{WRITERS}\nrng = np.random.default_rng({seed})\n{MORE_FORMATS}"
        ));
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(env.path("expected.json")).expect("expected")).expect("json");
        let expected = expected.as_object().expect("object");
        let refused: Vec<&String> = expected
            .iter()
            .filter(|(_, w)| w.get("error").is_some())
            .map(|(f, _)| f)
            .collect();
        // The broken files Pillow refuses, and no others.
        assert_eq!(refused.len(), 18, "{refused:?}");
        for (decode, key) in [
            ("decode: raw", "raw"),
            ("decode: luminance", "lum"),
            ("reduce_zero_label: true", "reduce"),
        ] {
            let (images, errors) = decoded(&env, decode);
            for (file, want) in expected {
                if want.get("error").is_some() {
                    assert!(
                        errors.contains(file),
                        "{file} ({decode}): Pillow refuses it ({want}), preflight read it"
                    );
                    continue;
                }
                match want.get(key) {
                    Some(w) => {
                        let got = images
                            .get(file)
                            .unwrap_or_else(|| panic!("{file} ({decode}): no pixels read"));
                        assert_eq!(
                            got,
                            &as_rows(w),
                            "{file} ({decode}) differs from Pillow's reading (seed {seed})"
                        );
                    }
                    None if key == "raw" => assert!(errors.contains(file), "{file}: a multi-channel image read raw"),
                    None => {}
                }
            }
        }
    }
}
