//! YOLO label files (`dataset: {layout: yolo}`; which `.txt` files are
//! labels is the layout's, [`crate::source::layouts::yolo`]): one object per line,
//! `class x y w h` (normalised centre and size), `class x1 y1 x2 y2 ...` (a
//! segment polygon) or, with `kpt_shape`, a box and its keypoints.
//!
//! Row i is line i (0-based, lines split as ultralytics' text-mode `open`
//! and `str.splitlines()` split them: at `\n`, `\r\n`, a lone `\r`, and
//! `\v`, `\f`, U+001C..U+001E, U+0085, U+2028, U+2029; a leading
//! byte-order mark dropped); a blank or whitespace-only line holds no row
//! but keeps its number. The columns, all `float32` because ultralytics
//! parses the file into a `np.float32` array:
//! - `class`: the first number of the line;
//! - `x`, `y`, `w`, `h`: the box ultralytics trains on: the line's four
//!   numbers in a box file; in a segment file (a file where some line has
//!   more than 6 numbers, ultralytics' test) the polygon's bounding box as
//!   `segments2boxes` computes it (min/max, then centre and size, in f32);
//! - `points`: a list of the polygon's coordinates in a segment file, empty
//!   in a box file.
//!
//! A value that is not a number is null (a `null` violation: ultralytics
//! cannot parse it). What ultralytics' `verify_image_label`
//! (ultralytics/data/utils.py, 8.4.190) would do with the file is checked
//! too, and said as a note on the file: a file it drops as corrupt (boxes
//! mixed into a segment file, wrong column count, odd polygon, coordinates
//! above 1.01, negative values, a fractional class, text that is no number)
//! trains as an image without objects, and duplicate lines are removed;
//! boxes of no area in a file it keeps are noted too (its augmentations
//! drop them).
//! Classes at or above `nc` ("Label class 80 exceeds dataset class count
//! 80") are the class rule's violations, and (with the schema's
//! `num_classes` for `class` as `nc`) the file's drop is noted too.
//!
//! Label files are small: a file is read whole at open (at most
//! [`MAX_LABEL_BYTES`]), which also gives its notes before it is checked.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float32Array, Float32Builder, ListBuilder, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{Field, Schema};

use crate::source::read::{Batch, Source};

use crate::error::ReadError;
use crate::schema::{Layout, ValueRule};
use crate::source::format::Format;

/// A YOLO label file (`.txt`), with `dataset: {layout: yolo}`; `num_classes`
/// of `class` says which files ultralytics drops, `kpt_shape` makes them
/// pose labels.
pub(crate) const FORMAT: Format = Format::new(
    "yolo",
    |n, hints| hints.layout == Some(Layout::Yolo) && is_label_name(n.path),
    |path, o| {
        let nc = o.hints.column(COLUMNS[0]).and_then(|c| match c.values {
            ValueRule::Class { num_classes, .. } => Some(num_classes),
            _ => None,
        });
        Ok(Box::new(YoloSource::open(path, nc, o.hints.kpt_shape)?))
    },
);

/// Largest label file read: far above any real one (a line per object).
pub(crate) const MAX_LABEL_BYTES: u64 = 64 << 20;

/// The columns of a YOLO label file.
pub(crate) const COLUMNS: [&str; 7] = ["class", "x", "y", "w", "h", "points", "keypoints"];

/// ultralytics' bound on normalised coordinates (`points.max() <= 1.01`,
/// compared in float32).
const MAX_COORD: f32 = 1.01;

/// ultralytics' tolerance for negative values (`lb.min() >= -0.01`, in
/// float32), when no box has a negative size.
const MIN_VALUE: f32 = -0.01;

/// Whether a search with `layout: yolo` picks up this file: ultralytics
/// looks for `<image stem>.txt` (lower-case extension).
pub(crate) fn is_label_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "txt")
}

/// One line that holds a row.
#[derive(Debug, Clone)]
struct Line {
    /// 0-based line number (the row).
    row: u64,
    /// The numbers of the line, `None` where a token is no number.
    values: Vec<Option<f32>>,
}

/// What a label line holds beyond the class.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// `x y w h`.
    Boxes,
    /// A polygon (some line of the file has more than 6 numbers).
    Segments,
    /// Pose labels: `x y w h` then `nkpt` keypoints of `ndim` values.
    Pose { nkpt: usize, ndim: usize },
}

/// A YOLO label file, parsed at open.
#[derive(Debug)]
pub(crate) struct YoloSource {
    columns: Vec<String>,
    lines: Vec<Line>,
    /// How ultralytics reads the lines.
    shape: Shape,
    notes: Vec<String>,
}

/// Python's `float()` on a token, then numpy's cast to float32.
fn parse(token: &str) -> Option<f32> {
    crate::schema::python_float(token).map(|v| v as f32)
}

/// Python's `str.isspace()` (what `str.split()` and `str.strip()` use):
/// Unicode white space and the separators U+001C..U+001F.
pub(crate) fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The lines of a label file as ultralytics gets them: `open()` in text
/// mode turns `\r\n` and a lone `\r` into `\n`, and `str.splitlines()`
/// also breaks at `\v`, `\f`, U+001C..U+001E, U+0085, U+2028 and U+2029.
pub(crate) fn python_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let t = rest?;
        match t.char_indices().find(|(_, c)| {
            matches!(
                c,
                '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}' | '\u{1d}' | '\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
            )
        }) {
            Some((at, c)) => {
                let next = if t[at..].starts_with("\r\n") {
                    at + 2
                } else {
                    at + c.len_utf8()
                };
                rest = Some(&t[next..]);
                Some(&t[..at])
            }
            None => {
                rest = None;
                Some(t)
            }
        }
    })
}

impl YoloSource {
    /// Reads and parses a label file; `nc` is the dataset's class count,
    /// `kpt_shape` (keypoints, values each) makes its lines pose labels.
    pub(crate) fn open(path: &Path, nc: Option<i128>, kpt_shape: Option<(usize, usize)>) -> Result<Self, ReadError> {
        let too_big = |len: u64| {
            ReadError::new(format!(
                "a YOLO label file of {len} bytes (more than {} MiB): not a label file",
                MAX_LABEL_BYTES >> 20
            ))
        };
        let bytes = crate::source::storage::read_whole(path, MAX_LABEL_BYTES, too_big)?;
        Self::parse(&bytes, nc, kpt_shape)
    }

    /// Parses a label file's bytes.
    pub(crate) fn parse(bytes: &[u8], nc: Option<i128>, kpt_shape: Option<(usize, usize)>) -> Result<Self, ReadError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            ReadError::new(format!(
                "not UTF-8 text ({e}): ultralytics cannot read this label file and drops its image as corrupt"
            ))
        })?;
        // `open(..., encoding="utf-8-sig")`: a leading byte-order mark is not text.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = Vec::new();
        for (i, line) in python_lines(text).enumerate() {
            // ultralytics keeps only lines with something besides white space.
            if line.trim_matches(is_python_space).is_empty() {
                continue;
            }
            lines.push(Line {
                row: i as u64,
                values: line
                    .split(is_python_space)
                    .filter(|t| !t.is_empty())
                    .map(parse)
                    .collect(),
            });
        }
        let shape = match kpt_shape {
            Some((nkpt, ndim)) => Shape::Pose { nkpt, ndim },
            None if lines.iter().any(|l| l.values.len() > 6) => Shape::Segments,
            None => Shape::Boxes,
        };
        let mut notes = Vec::new();
        if let Some(why) = verdict(&lines, shape, nc) {
            notes.push(format!(
                "ultralytics drops this label file as corrupt ({why}): its image trains with no objects"
            ));
        } else {
            if let Some(n) = duplicates(&lines, shape) {
                notes.push(format!("{n} duplicate label line(s): ultralytics removes them"));
            }
            notes.extend(zero_area(&lines, shape));
        }
        Ok(YoloSource {
            columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
            lines,
            shape,
            notes,
        })
    }
}

/// The box ultralytics derives from a polygon (`segments2boxes`), or `None`
/// for an odd or empty coordinate list or one with a token that is no number.
fn polygon_box(coords: &[Option<f32>]) -> Option<[f32; 4]> {
    if coords.is_empty() || !coords.len().is_multiple_of(2) {
        return None;
    }
    let (mut x1, mut y1, mut x2, mut y2) = (f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY);
    for p in coords.chunks_exact(2) {
        let (x, y) = (p[0]?, p[1]?);
        // numpy's min/max propagate NaN.
        if x.is_nan() || y.is_nan() {
            return Some([f32::NAN; 4]);
        }
        x1 = x1.min(x);
        x2 = x2.max(x);
        y1 = y1.min(y);
        y2 = y2.max(y);
    }
    Some([(x1 + x2) / 2.0, (y1 + y2) / 2.0, x2 - x1, y2 - y1])
}

/// The (class, x, y, w, h) ultralytics trains on for a line.
fn label_row(l: &Line, shape: Shape) -> [Option<f32>; 5] {
    let class = l.values.first().copied().flatten();
    if shape == Shape::Segments {
        match polygon_box(&l.values[1..]) {
            Some([x, y, w, h]) => [class, Some(x), Some(y), Some(w), Some(h)],
            None => [class, None, None, None, None],
        }
    } else {
        let v = |i: usize| l.values.get(i).copied().flatten();
        [class, v(1), v(2), v(3), v(4)]
    }
}

/// A note on the lines of a kept file whose box has no area (its corners
/// coincide in float32): ultralytics' training augmentations keep only
/// boxes of positive area
/// (`Instances.remove_zero_area_boxes` after mosaic, `box_candidates`
/// after the random perspective), so these objects are silently dropped.
fn zero_area(lines: &[Line], shape: Shape) -> Option<String> {
    let flat: Vec<u64> = lines
        .iter()
        .filter(|l| match label_row(l, shape) {
            // `xywh2xyxy` in float32, as `Mosaic` converts before scaling
            // to pixels: a box too thin for a float32 step has no area.
            [_, Some(x), Some(y), Some(w), Some(h)] => x + w / 2.0 <= x - w / 2.0 || y + h / 2.0 <= y - h / 2.0,
            _ => false,
        })
        .map(|l| l.row + 1)
        .collect();
    let first = flat.first()?;
    Some(format!(
        "{} label line(s) with a box of zero width or height (first: line {first}): ultralytics drops these objects when training (its augmentations keep only boxes of positive area)",
        flat.len()
    ))
}

/// Why `verify_image_label` drops the file, if it does, in its order of
/// checks.
fn verdict(lines: &[Line], shape: Shape, nc: Option<i128>) -> Option<String> {
    if lines.is_empty() {
        return None; // an empty label: a background image
    }
    if shape == Shape::Segments
        && let Some(l) = lines.iter().find(|l| l.values.len() == 5)
    {
        return Some(format!(
            "labels mix segment and detection rows (line {} is a box)",
            l.row + 1
        ));
    }
    if let Some(l) = lines.iter().find(|l| l.values.iter().any(Option::is_none)) {
        return Some(format!("line {}: a value is not a number", l.row + 1));
    }
    if shape == Shape::Segments {
        if let Some(l) = lines.iter().find(|l| polygon_box(&l.values[1..]).is_none()) {
            return Some(format!(
                "line {}: a segment needs an even number of coordinates, it has {}",
                l.row + 1,
                l.values.len() - 1
            ));
        }
    } else {
        let n = lines[0].values.len();
        if let Some(l) = lines.iter().find(|l| l.values.len() != n) {
            return Some(format!(
                "line {}: {} columns where line {} has {n} (a ragged array)",
                l.row + 1,
                l.values.len(),
                lines[0].row + 1
            ));
        }
        let want = match shape {
            Shape::Pose { nkpt, ndim } => 5 + nkpt * ndim,
            _ => 5,
        };
        if n != want {
            return Some(format!("labels require {want} columns, {n} columns detected"));
        }
    }
    let rows: Vec<[f32; 5]> = lines
        .iter()
        .map(|l| label_row(l, shape).map(|v| v.unwrap_or(f32::NAN)))
        .collect();
    let list = |values: Vec<f32>| values.iter().take(3).map(f32::to_string).collect::<Vec<_>>().join(", ");
    // `points.max() <= 1.01` is false when a NaN is present (max is NaN);
    // the points are the box, or a pose label's keypoints (x, y).
    let values = |l: &Line| l.values.iter().map(|v| v.unwrap_or(f32::NAN)).collect::<Vec<_>>();
    let points: Vec<f32> = match shape {
        Shape::Pose { ndim, .. } => lines
            .iter()
            .flat_map(|l| {
                values(l)[5..]
                    .chunks(ndim)
                    .flat_map(|k| k[..2].to_vec())
                    .collect::<Vec<_>>()
            })
            .collect(),
        _ => rows.iter().flat_map(|r| r[1..].iter().copied()).collect(),
    };
    if points.iter().any(|v| v.is_nan() || *v > MAX_COORD) {
        let bad = points.into_iter().filter(|v| v.is_nan() || *v > MAX_COORD).collect();
        return Some(format!("non-normalized or out of bounds coordinates [{}]", list(bad)));
    }
    // `lb.min() >= 0 or (lb.min() >= -0.01 and lb[:, 3:5].min() >= 0)`:
    // false for a NaN anywhere.
    let all = || -> Box<dyn Iterator<Item = f32> + '_> {
        match shape {
            Shape::Pose { .. } => Box::new(lines.iter().flat_map(values)),
            _ => Box::new(rows.iter().flat_map(|r| r.iter().copied())),
        }
    };
    let min = all().fold(f32::INFINITY, |m, v| {
        if v.is_nan() || m.is_nan() { f32::NAN } else { m.min(v) }
    });
    let sizes_signed = rows.iter().all(|r| r[3] >= 0.0 && r[4] >= 0.0);
    if !(min >= 0.0 || (min >= MIN_VALUE && sizes_signed)) {
        let bad = all().filter(|v| *v < 0.0).collect();
        return Some(format!("negative label values [{}]", list(bad)));
    }
    // `(lb[:, 0] % 1 == 0).all()`: inf % 1 is NaN.
    let classes = || rows.iter().map(|r| r[0]);
    if classes().any(|c| c.fract() != 0.0 || c.is_infinite()) {
        let bad = classes().filter(|c| c.fract() != 0.0 || c.is_infinite()).collect();
        return Some(format!("non-integer class labels [{}]", list(bad)));
    }
    let max_cls = classes().fold(f32::NEG_INFINITY, f32::max);
    if let Some(nc) = nc
        && f64::from(max_cls) >= nc as f64
    {
        return Some(format!(
            "Label class {max_cls} exceeds dataset class count {nc}. Possible class labels are 0-{}",
            nc - 1
        ));
    }
    None
}

/// How many lines ultralytics removes as duplicates: rows equal as
/// numbers (`np.unique(lb, axis=0)`, a pose label's keypoints included),
/// and in a segment file only those whose class and polygon are the same
/// float32 bytes.
fn duplicates(lines: &[Line], shape: Shape) -> Option<usize> {
    let by_value = |v: &Option<f32>| v.map_or(u32::MAX, |f| (f + 0.0).to_bits());
    let mut rows: Vec<Vec<u32>> = lines
        .iter()
        .map(|l| match shape {
            Shape::Segments => l.values.iter().map(|v| v.map_or(u32::MAX, f32::to_bits)).collect(),
            Shape::Pose { .. } => l.values.iter().map(by_value).collect(),
            Shape::Boxes => label_row(l, shape).iter().map(by_value).collect(),
        })
        .collect();
    rows.sort_unstable();
    rows.dedup();
    let n = lines.len() - rows.len();
    (n > 0).then_some(n)
}

impl Source for YoloSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    fn units(&self) -> usize {
        1
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit != 0 {
            return Err(ReadError::new(format!("no unit {unit}: a YOLO label file is one unit")));
        }
        // One batch per run of consecutive lines: blank lines keep numbers.
        let mut start = 0;
        while start < self.lines.len() {
            let mut end = start + 1;
            while end < self.lines.len() && self.lines[end].row == self.lines[end - 1].row + 1 {
                end += 1;
            }
            sink(self.batch(&self.lines[start..end], projection)?)?;
            start = end;
        }
        Ok(())
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

impl YoloSource {
    fn batch(&self, lines: &[Line], projection: &[usize]) -> Result<Batch, ReadError> {
        let rows: Vec<[Option<f32>; 5]> = lines.iter().map(|l| label_row(l, self.shape)).collect();
        let mut fields = Vec::with_capacity(projection.len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(projection.len());
        for &p in projection {
            let name = COLUMNS
                .get(p)
                .ok_or_else(|| ReadError::new("projection names a column a YOLO file lacks"))?;
            let array: ArrayRef = if p < 5 {
                Arc::new(rows.iter().map(|r| r[p]).collect::<Float32Array>())
            } else {
                // `points`: a polygon's coordinates; `keypoints`: a pose
                // label's values after its box.
                let from = match (p, self.shape) {
                    (5, Shape::Segments) => Some(1),
                    (6, Shape::Pose { .. }) => Some(5),
                    _ => None,
                };
                let mut b = ListBuilder::new(Float32Builder::new());
                for l in lines {
                    if let Some(from) = from {
                        b.values()
                            .extend(l.values.get(from..).unwrap_or_default().iter().copied());
                    }
                    b.append(true);
                }
                Arc::new(b.finish())
            };
            fields.push(Field::new(*name, array.data_type().clone(), true));
            columns.push(array);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(lines.len()));
        let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)?;
        Ok(Batch {
            first_row: lines[0].row,
            batch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Label files, judged below by ultralytics' own `verify_image_label`.
    const CASES: &[&str] = &[
        "80 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0.2\n",
        "79.5 0.5 0.5 0.2 0.2\n",
        "2.5 0.5 0.5 0.2 0.2\n",
        "inf 0.5 0.5 0.2 0.2\n",
        "-0 0.5 0.5 0.2 0.2\n",
        "nan 0.5 0.5 0.2 0.2\n",
        "0 0.5 0.5 0.2 0.2\n1 0.1 0.1 0.1 0.1\n",
        "",
        "\u{feff}0 0.5 0.5 0.2 0.2\n",
        "\u{feff}",
        "0 0.5 0.5 0.2\n",
        "0 0.5 0.5 0.2 1.02\n",
        "0 0.5 0.5 0.2 1.01\n",
        "0 0.5 -0.5 0.2 0.2\n",
        "0 0.5 -0.01 0.2 0.2\n",
        "0 0.5 -0.0100001 0.2 0.2\n",
        "0 0.5 0.5 -0.005 0.2\n",
        "0 0.5 0.5 0.2 nan\n",
        "0 0.5 0.5 0.2 x\n",
        "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2\n",
        "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n",
        "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 -0 0.2\n",
        "0 0.1 0.1 0.2 0.1 0.2 0.2 0.3\n",
        "0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.2\n",
        "0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.2\n0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.2\n",
        "0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.2\n0 0.1 0.1 0.2 0.2 0.1 0.2 0.2 0.1\n",
        "0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.2\n1 0.15 0.15 0.1 0.1\n",
        "0 0.5 0.5 0.2 0.2\n \n1 0.5 0.5 0.2 0.2\n",
        "0 0.5 0.5 0.2 0.2\n\n1 0.5 0.5 0.2 0.2\r\n",
        "  \n0 0.5 0.5 0.2 0.2\n  \n",
        "0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.2\n5\n",
        "0 0.1 0.1 0.2 0.1 0.2 0.2 0.1 0.2\n5 0.3 0.3\n",
        "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2 0.3\n",
        "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2 0.3 0.3\n",
        "0 0.1 0.1 0.9 0.1 1.2 0.9\n",
        "1e0 5E-1 .5 2e-1 0.2\n",
    ];

    const ULTRALYTICS: &str = concat!(
        include_str!("../../../tests/oracles/ultralytics_labels.py"),
        r#"
import json, sys, tempfile
out = []
for text in json.load(sys.stdin):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8", newline="") as f:
        f.write(text)
    why, _, dups = label_verdict(f.name)
    os.unlink(f.name)
    out.append(["corrupt" if why else "ok", dups])
print(json.dumps(out))
"#
    );

    #[test]
    fn verdicts_are_ultralytics_own() {
        use std::io::Write;
        let mut child = std::process::Command::new(crate::source::test_python())
            .args(["-c", ULTRALYTICS])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python");
        let cases = serde_json::to_vec(CASES).expect("json");
        child.stdin.take().expect("stdin").write_all(&cases).expect("write");
        let out = child.wait_with_output().expect("python");
        assert!(out.status.success());
        let want: Vec<(String, usize)> = serde_json::from_slice(&out.stdout).expect("verdicts");
        for (case, (verdict, dups)) in CASES.iter().zip(want) {
            let notes = YoloSource::parse(case.as_bytes(), Some(80), None).expect("text").notes;
            let dropped = notes.iter().any(|n| n.contains("drops this label file"));
            assert_eq!(dropped, verdict == "corrupt", "{case:?}: {notes:?}");
            let said = notes
                .iter()
                .find_map(|n| n.strip_suffix(" duplicate label line(s): ultralytics removes them"))
                .map_or(0, |n| n.parse().expect("count"));
            assert_eq!(said, dups, "{case:?}: {notes:?}");
        }
        assert!(YoloSource::parse(b"\xff\xfe", None, None).is_err());
    }

    #[test]
    fn segments_become_their_bounding_box() {
        let s = YoloSource::parse(b"3 0.1 0.2 0.5 0.2 0.5 0.6 0.1 0.6\n\n2 0.2 0.2 0.4 0.4\n", None, None).unwrap();
        assert_eq!(s.shape, Shape::Segments);
        let rows: Vec<_> = s.lines.iter().map(|l| label_row(l, Shape::Segments)).collect();
        assert_eq!(rows[0], [Some(3.0), Some(0.3), Some(0.4), Some(0.4), Some(0.40000004)]);
        assert_eq!(s.lines[1].row, 2);
    }
}
