//! `preflight init` on a folder of segmentation masks: what the images show
//! (their modes, values, colours, 0/255 binary masks, lossy files) becomes a
//! proposed `pixels` column with `decode`, `num_classes` (the model's
//! `num_labels` when given, else the data's), `ignore_index: 255` (the
//! masks' usual void label: torchvision's, detectron2's and mmseg's), or a
//! colour map for RGB masks.

use std::collections::BTreeSet;

use arrow::array::{Array, AsArray, RecordBatch};

use crate::source::formats::image::{self, IMAGE_FIELD, Samples};

/// Images decoded per run: enough to see the classes.
const PROFILE_IMAGES: usize = 500;
/// RGB masks with at most this many colours get a proposed colour map.
const MAX_COLOURS: usize = 256;

/// What the masks showed.
#[derive(Debug, Default)]
pub(super) struct MaskProfile {
    images: usize,
    modes: BTreeSet<&'static str>,
    values: BTreeSet<i64>,
    colours: BTreeSet<[u8; 3]>,
    binary_255: usize,
    lossy: usize,
    wide16: usize,
    errors: usize,
}

impl MaskProfile {
    /// Profiles the images of a batch read from an image file.
    pub(super) fn add(&mut self, batch: &RecordBatch) {
        for (i, field) in batch.schema_ref().fields().iter().enumerate() {
            if !field.metadata().contains_key(IMAGE_FIELD) || self.images >= PROFILE_IMAGES {
                continue;
            }
            let Some(bytes) = batch.column(i).as_binary_opt::<i32>() else {
                continue;
            };
            for r in 0..bytes.len() {
                match image::decode(bytes.value(r)) {
                    Ok(img) => self.image(img),
                    Err(_) => self.errors += 1,
                }
            }
        }
    }

    fn image(&mut self, img: image::Image) {
        self.images += 1;
        self.modes.insert(img.mode.name());
        if matches!(img.kind, image::Kind::Jpeg | image::Kind::WebP) {
            self.lossy += 1;
        }
        let mut seen: BTreeSet<i64> = BTreeSet::new();
        match (&img.samples, img.mode.channels()) {
            (Samples::U8(v), 1) => {
                let mut hist = [false; 256];
                v.iter().for_each(|&x| hist[x as usize] = true);
                seen.extend((0..256).filter(|&x| hist[x as usize]));
            }
            // CMYK (a JPEG): no colours a colour map could read.
            (Samples::U8(_), _) if img.mode == image::Mode::Cmyk => {}
            (Samples::U8(v), c) => {
                for p in v.chunks_exact(c) {
                    if self.colours.len() > MAX_COLOURS {
                        break;
                    }
                    self.colours.insert(if c == 2 { [p[0]; 3] } else { [p[0], p[1], p[2]] });
                }
            }
            (Samples::U16(v), _) => {
                seen.extend(v.iter().map(|&x| i64::from(x)));
                if v.iter().any(|&x| x > 255) {
                    self.wide16 += 1;
                }
            }
            (Samples::I16(v), _) => seen.extend(v.iter().map(|&x| i64::from(x))),
            (Samples::I32(v), _) => seen.extend(v.iter().map(|&x| i64::from(x))),
            (Samples::F32(v), _) => seen.extend(v.iter().filter(|x| x.fract() == 0.0).map(|&x| x as i64)),
        }
        if seen.contains(&255) && seen.iter().all(|&v| v == 0 || v == 255) {
            self.binary_255 += 1;
        }
        self.values.extend(seen);
    }

    /// The largest class seen (255, the void label, aside).
    pub(super) fn largest_class(&self) -> Option<i64> {
        self.values.iter().rev().copied().find(|&v| v != 255)
    }

    /// Whether any mask was profiled.
    pub(super) fn is_empty(&self) -> bool {
        self.images == 0 && self.errors == 0
    }

    /// The proposed `pixels` column, as schema lines (indented by the
    /// caller). `num_labels` is the model's reference, when it has a head;
    /// `images` the image folder found beside the masks ([`sibling_images`]).
    pub(super) fn render(&self, num_labels: Option<String>, images: Option<String>) -> Vec<String> {
        let mut lines = vec!["kind: class".to_string()];
        let modes: Vec<&str> = self.modes.iter().copied().collect();
        let colour = self.modes.iter().any(|m| ["RGB", "RGBA", "LA"].contains(m));
        let classes: Vec<i64> = self.values.iter().copied().filter(|&v| v != 255).collect();
        match num_labels {
            Some(r) => lines.push(format!("num_classes: {r}  # len(id2label) of the model's head")),
            None if colour => lines.push(format!(
                "num_classes: {}  # one class per observed colour: set the model's class count",
                self.colours.len().max(1)
            )),
            None => lines.push(format!(
                "num_classes: {}  # observed classes {}..={} (255 aside): set the model's class count",
                classes.last().map_or(1, |m| m + 1),
                classes.first().copied().unwrap_or(0),
                classes.last().copied().unwrap_or(0),
            )),
        }
        lines.push("ignore_index: 255  # the void label of masks (torchvision, detectron2, mmseg)".into());
        if colour {
            if self.colours.len() <= MAX_COLOURS {
                lines.push("colors:  # observed colours: map each to its class".into());
                for (i, [r, g, b]) in self.colours.iter().enumerate() {
                    lines.push(format!("  \"{r},{g},{b}\": {i}"));
                }
            } else {
                lines.push(format!(
                    "# {} masks ({}) hold more than {MAX_COLOURS} colours: not class masks? set decode: luminance or a colors map",
                    self.images,
                    modes.join(", ")
                ));
            }
        } else {
            let what = if self.modes.contains("P") {
                "palette masks: np.array(Image.open(f)) gives class indices; detectron2 reads luminance instead (decode: luminance)"
            } else {
                "np.array(Image.open(f))"
            };
            lines.push(format!("decode: raw  # {what}"));
        }
        if let Some(dir) = images {
            lines.push(format!(
                "pair_with: {dir}  # the image folder beside the masks: each mask needs one image of its size, each image a mask"
            ));
        }
        let mut warn = |s: String| lines.push(format!("# WARNING: {s}"));
        if self.binary_255 > 0 {
            warn(format!(
                "{} of {} masks hold only 0 and 255: binary masks saved as 0/255; with ignore_index 255 the loss ignores every foreground pixel: divide them by 255",
                self.binary_255, self.images
            ));
        }
        if self.lossy > 0 {
            warn(format!("{} masks are JPEG/WebP (lossy): save masks as PNG", self.lossy));
        }
        if self.wide16 > 0 {
            warn(format!(
                "{} 16-bit masks hold values above 255: an 8-bit loader (mmseg's uint8 cast) wraps them",
                self.wide16
            ));
        }
        if self.errors > 0 {
            warn(format!("{} images could not be decoded", self.errors));
        }
        lines
    }
}

/// Image folder names looked for beside a mask folder.
const IMAGE_DIRS: [&str; 4] = ["images", "imgs", "img", "JPEGImages"];

/// The image folder of a mask folder PATH, relative to it, for
/// `pair_with`: a sibling (`masks` and `images`: `../images`) or, in
/// mmsegmentation's layout, the same split under a sibling
/// (`annotations/training` and `images/training`: `../../images/training`).
/// Only for one directory PATH (several would need several pairings).
pub(super) fn sibling_images(paths: &[std::path::PathBuf]) -> Option<String> {
    let [dir] = paths else { return None };
    if !dir.is_dir() {
        return None;
    }
    let dir = dir.canonicalize().ok()?;
    let name = dir.file_name()?.to_str()?;
    let parent = dir.parent()?;
    let here = IMAGE_DIRS
        .iter()
        .find(|n| **n != name && parent.join(n).is_dir())
        .map(|n| format!("../{n}"));
    here.or_else(|| {
        let grand = parent.parent()?;
        let up = parent.file_name()?.to_str()?;
        IMAGE_DIRS
            .iter()
            .find(|n| **n != up && grand.join(n).join(name).is_dir())
            .map(|n| format!("../../{n}/{name}"))
    })
}
