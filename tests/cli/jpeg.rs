//! JPEG masks (#29): files written by Pillow 13 (and patched where Pillow
//! writes no such file), read by preflight and compared whole, pixel for
//! pixel, with `np.array(Image.open(f))` and `.convert("L")` — Pillow's
//! libjpeg-turbo decoding. A file Pillow refuses is an error here too.

use serde_json::Value;

use crate::masks::{as_rows, decoded};
use crate::util::Env;

/// `expect(dir)`: per file, what Pillow reads (`raw` for one-channel
/// images, `lum` always) or `null` where Pillow raises, into
/// `expected.json`. `save(...)` writes a JPEG with Pillow, `patch_sof`
/// rewrites the sampling factors (other samplings than Pillow writes: the
/// entropy data then decodes to other pixels, decoded alike by both).
const JPEGS: &str = r#"
import io
from PIL import Image

def jpeg(a, mode=None, **kw):
    b = io.BytesIO(); Image.fromarray(a, mode).save(b, "JPEG", **kw); return b.getvalue()

def patch_sof(d, factors):
    at = next(i for i in range(len(d) - 1) if d[i] == 0xFF and d[i + 1] in (0xC0, 0xC1, 0xC2))
    d = bytearray(d)
    for k, f in enumerate(factors):
        d[at + 10 + 3 * k + 1] = f
    return bytes(d)

def picture(rng, h, w, c):
    # smooth shapes, edges and noise: every IDCT and upsampling path works
    y, x = np.mgrid[0:h, 0:w]
    base = (np.sin(x / 3.0) * 80 + np.cos(y / 5.0) * 60 + 128)[..., None] + np.zeros((1, 1, c))
    base[(x + y) % 11 < 3] = rng.integers(0, 256, c)
    base += rng.normal(0, 30, (h, w, c))
    a = np.clip(base, 0, 255).astype(np.uint8)
    return a[..., 0] if c == 1 else a

def expect(d):
    out = {}
    for f in sorted(os.listdir(d)):
        try:
            im = Image.open(os.path.join(d, f))
            a = np.array(im)
            e = {"lum": np.array(im.convert("L")).astype(np.int64).tolist()}
            if a.ndim == 2:
                e["raw"] = a.astype(np.int64).tolist()
            out[f] = e
        except Exception:
            out[f] = None
    json.dump(out, open("expected.json", "w"))
"#;

/// Compares every file of `m/` with `expected.json`, read raw and as
/// luminance; returns (files read, files refused).
fn compare(env: &Env) -> (usize, usize) {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("expected.json")).expect("expected")).expect("json");
    let expected = expected.as_object().expect("object");
    let mut counts = (0, 0);
    for (decode, key) in [("decode: raw", "raw"), ("decode: luminance", "lum")] {
        let (images, errors) = decoded(env, decode);
        counts = (0, 0);
        for (file, want) in expected {
            if want.is_null() {
                assert!(
                    errors.contains(file),
                    "{file}: Pillow refuses it, preflight read it ({decode})"
                );
                assert!(!images.contains_key(file), "{file}");
                counts.1 += 1;
                continue;
            }
            counts.0 += 1;
            match want.get(key) {
                Some(w) => {
                    assert!(
                        !errors.contains(file),
                        "{file} ({decode}): Pillow reads it, preflight failed it"
                    );
                    let got = images
                        .get(file)
                        .unwrap_or_else(|| panic!("{file} ({decode}): no pixels read"));
                    let w = as_rows(w);
                    if got != &w {
                        let diff = got
                            .iter()
                            .flatten()
                            .zip(w.iter().flatten())
                            .filter(|(a, b)| a != b)
                            .count();
                        panic!("{file} ({decode}): {diff} pixels differ from Pillow's");
                    }
                }
                // Read raw, a colour image is an error (one channel needed).
                None => assert!(errors.contains(file), "{file}: read raw is an error"),
            }
        }
    }
    counts
}

#[test]
fn jpeg_masks_decode_exactly_as_pillow_reads_them() {
    let env = Env::new();
    env.python(&format!(
        r#"{JPEGS}
rng = np.random.default_rng(29)
os.makedirs("m", exist_ok=True)
def put(name, d):
    open("m/" + name, "wb").write(d)
for c in (1, 3):
    for prog in (False, True):
        p = "p" if prog else "b"
        for sub in ((0, 1, 2) if c == 3 else (0,)):
            a = picture(rng, 45, 61, c)
            put(f"c{{c}}_s{{sub}}_{{p}}.jpg", jpeg(a, quality=75, subsampling=sub, progressive=prog))
            put(f"c{{c}}_s{{sub}}_{{p}}_q97_opt.jpg", jpeg(a, quality=97, subsampling=sub, progressive=prog, optimize=True))
            # restart markers every 2 MCUs, and every MCU row
            put(f"c{{c}}_s{{sub}}_{{p}}_rst2.jpg", jpeg(a, quality=60, subsampling=sub, progressive=prog, restart_marker_blocks=2))
            put(f"c{{c}}_s{{sub}}_{{p}}_rstrow.jpg", jpeg(a, quality=60, subsampling=sub, progressive=prog, restart_marker_rows=1))
    # odd sizes: partial MCUs on both edges, one pixel
    for h, w in ((1, 1), (1, 37), (29, 2), (17, 9)):
        put(f"c{{c}}_{{h}}x{{w}}.jpg", jpeg(picture(rng, h, w, c), quality=85, subsampling=2))
# CMYK (Pillow writes Adobe's inverted CMYK and reads it back inverted)
for prog in (False, True):
    put(f"cmyk_{{prog}}.jpg", jpeg(picture(rng, 23, 31, 4), "CMYK", quality=80, progressive=prog))
# EXIF orientations: neither Pillow's open nor torchvision applies them
for o in range(1, 9):
    e = Image.Exif(); e[0x0112] = o
    put(f"exif{{o}}_rgb.jpg", jpeg(picture(rng, 13, 22, 3), quality=90, exif=e))
    put(f"exif{{o}}_l.jpg", jpeg(picture(rng, 13, 22, 1), quality=90, exif=e))
# samplings Pillow does not write: 4:4:0, 4:1:1, chroma at 2x1 beside luma 1x2
a = picture(rng, 40, 48, 3)
put("s440.jpg", patch_sof(jpeg(a, subsampling=0), [0x12, 0x11, 0x11]))
put("s411.jpg", patch_sof(jpeg(a, subsampling=0), [0x41, 0x11, 0x11]))
put("s_mixed.jpg", patch_sof(jpeg(a, subsampling=0), [0x22, 0x21, 0x12]))
expect("m")
"#
    ));
    let (read, refused) = compare(&env);
    assert_eq!((read, refused), (61, 0));
}

#[test]
fn random_jpegs_decode_as_pillow_reads_them() {
    let env = Env::new();
    env.python(&format!(
        r#"{JPEGS}
rng = np.random.default_rng(2929)
os.makedirs("m", exist_ok=True)
for i in range(48):
    c = int(rng.choice([1, 3, 3, 4]))
    h, w = int(rng.integers(1, 70)), int(rng.integers(1, 70))
    kw = dict(quality=int(rng.integers(1, 101)), progressive=bool(rng.integers(0, 2)),
              optimize=bool(rng.integers(0, 2)))
    if c == 3:
        kw["subsampling"] = int(rng.integers(0, 3))
    if rng.integers(0, 3) == 0:
        kw["restart_marker_blocks"] = int(rng.integers(1, 5))
    a = picture(rng, h, w, c)
    if rng.integers(0, 4) == 0:
        a = (rng.integers(0, 256, a.shape)).astype(np.uint8)
    d = jpeg(a, {{1: "L", 3: "RGB", 4: "CMYK"}}[c], **kw)
    if c == 3 and not kw["progressive"] and rng.integers(0, 4) == 0:
        f = lambda: int(rng.choice([0x11, 0x12, 0x21, 0x22, 0x41, 0x14]))
        d = patch_sof(d, [f(), f(), f()])
    open(f"m/{{i:02}}.jpg", "wb").write(d)
expect("m")
"#
    ));
    let (read, refused) = compare(&env);
    assert_eq!(read + refused, 48);
    assert!(read >= 40, "only {read} of 48 read by Pillow");
}

#[test]
fn broken_jpegs_are_errors_exactly_where_pillow_raises() {
    let env = Env::new();
    env.python(&format!(
        r#"{JPEGS}
rng = np.random.default_rng(7)
os.makedirs("m", exist_ok=True)
def put(name, d):
    open("m/" + name, "wb").write(d)
for c, mode in ((1, "L"), (3, "RGB")):
    for prog in (False, True):
        d = jpeg(picture(rng, 33, 41, c), mode, quality=80, progressive=prog, restart_marker_blocks=3)
        t = f"{{mode}}_{{prog}}"
        put(f"{{t}}_whole.jpg", d)
        put(f"{{t}}_half.jpg", d[: len(d) // 2])
        put(f"{{t}}_no_eoi.jpg", d[:-2])
        put(f"{{t}}_half_eoi.jpg", d[:-1])
        put(f"{{t}}_junk_after.jpg", d + b"\x00junk")
        put(f"{{t}}_header_only.jpg", d[: d.index(b"\xff\xda") + 4])
        sos = d.rindex(b"\xff\xda")
        # random corruption of the entropy data (libjpeg skips what it can:
        # warnings; some corruption is an error) and of the headers
        for k in range(12):
            x = bytearray(d)
            for _ in range(int(rng.integers(1, 6))):
                at = int(rng.integers(sos + 14, len(d) - 2))
                x[at] = int(rng.integers(0, 256))
            put(f"{{t}}_scan{{k:02}}.jpg", bytes(x))
        for k in range(8):
            x = bytearray(d)
            at = int(rng.integers(2, sos))
            x[at] = int(rng.integers(0, 256))
            put(f"{{t}}_head{{k:02}}.jpg", bytes(x))
# 12-bit precision: Pillow cannot handle it
d = bytearray(jpeg(picture(rng, 8, 8, 1), "L"))
at = d.index(b"\xff\xc0"); d[at + 4] = 12
put("precision12.jpg", bytes(d))
expect("m")
"#
    ));
    let (read, refused) = compare(&env);
    assert_eq!(read + refused, 4 * 26 + 1);
    // at least the halves, header-only files, progressive files without
    // their end-of-image marker and the 12-bit one
    assert!(refused > 3 * 4 + 4, "{refused} refused");
}
