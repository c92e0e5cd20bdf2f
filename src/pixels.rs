//! The pixel transform: encoded images (an image file's bytes, or a
//! table's binary / `{bytes: ...}` column whose schema column sets
//! `decode`) become arrays of class values for the check kernels, read the
//! way the column's loader reads them (docs/src/sources/masks.md).
//!
//! It sits between the sources and the kernels: the kernels only ever see
//! an Arrow array, one per image: a one-row list of pixel rows
//! (`List<FixedSizeList<T, width>>`), so a value's list position and its
//! list's position are the pixel's x and y, and the whole image is one
//! contiguous slice for the vectorised count. The entry point takes any
//! binary array, so every source with image bytes (Parquet and Arrow
//! `Image` features, WebDataset members) is decoded the same way.
//!
//! Images are decoded one row at a time, so memory follows the images in
//! flight, not the batch. Beside the kernels' verdicts it records what the
//! hints need (a histogram per image: pixel counts of each bad value,
//! 0/255 masks, 16-bit values; bad pixels on class boundaries).
//! A colour map (`colors:`) is applied here: its classes come from the
//! schema, so only unmapped colours and classes the rule rejects are
//! violations, recorded directly with the colour as the value.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, FixedSizeListArray, ListArray, PrimitiveArray, RecordBatch,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Float32Type, Int16Type, Int32Type, UInt8Type, UInt16Type};

use crate::check::tally::{Spot, Tally, Value};
use crate::check::{Validator, Verdict};
use crate::pairing::Pair;
use crate::schema::{Decode, PixelSpec};
use crate::source::formats::image::{self, IMAGE_FIELD, Image, Mode, Samples};

mod summary;

use summary::{Bounds, Lane, Summary, summarize};

/// Where images are checked: the file (its index in the run), the row of
/// the first image, and what `pair_with` found for an image file's mask.
#[derive(Clone, Copy)]
pub(crate) struct Site<'a> {
    pub(crate) file: usize,
    pub(crate) row: u64,
    pub(crate) pair: Option<&'a Pair>,
}

/// An image's class values, row after row of `width`.
#[derive(Clone, Copy)]
struct Values<'a, T> {
    values: &'a [T],
    width: usize,
}

/// Checks the pixel columns of a batch and takes them out of `columns`
/// (the kernels then check the rest as usual). `positions[ci]` is schema
/// column ci's index in `batch`. Returns the images that could not be
/// decoded, as (row within the file, whether the batch is an image file,
/// message). `pair` is what `pair_with` found for an image file's mask.
pub(crate) fn check_batch(
    validator: &Validator,
    batch: &RecordBatch,
    positions: &[Option<usize>],
    columns: &mut [Option<ArrayRef>],
    site: Site,
    tally: &mut Tally,
) -> Vec<(u64, bool, String)> {
    let Site {
        file,
        row: first_row,
        pair,
    } = site;
    let mut errors = Vec::new();
    let default = PixelSpec::default();
    for (ci, p) in positions.iter().enumerate() {
        let Some(p) = *p else { continue };
        let spec = &validator.schema().columns[ci];
        let field = batch.schema_ref().field(p);
        let whole_file = field.metadata().contains_key(IMAGE_FIELD);
        let pixels = match &spec.pixels {
            Some(s) => s,
            None if whole_file => &default,
            None => continue,
        };
        let mut array = batch.column(p).clone();
        if !whole_file && !holds_images(array.data_type()) {
            continue;
        }
        columns[ci] = None;
        // Dictionary-encoded bytes (Parquet's default for repeated values):
        // the plain array, once per batch.
        match plain(array) {
            Ok(a) => array = a,
            Err(e) => {
                errors.push((first_row, whole_file, e));
                continue;
            }
        }
        // Pairing judges image files, whose one row is the mask.
        let pair = pair.filter(|_| whole_file);
        for i in 0..array.len() {
            let row = first_row + i as u64;
            if let Err(e) = check_row(
                validator,
                ci,
                pixels,
                array.as_ref(),
                i,
                Site { file, row, pair },
                tally,
            ) {
                errors.push((row, whole_file, e));
            }
        }
    }
    errors
}

/// The array with dictionary-encoded bytes (Parquet's default for repeated
/// values) decoded, also inside a struct's `bytes` field: once per batch.
fn plain(array: ArrayRef) -> Result<ArrayRef, String> {
    let err = |e: arrow::error::ArrowError| e.to_string();
    match array.data_type() {
        DataType::Dictionary(_, values) => arrow::compute::cast(&array, values).map_err(err),
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut changed = false;
            let mut columns = Vec::with_capacity(fields.len());
            let mut new_fields = Vec::with_capacity(fields.len());
            for (f, c) in fields.iter().zip(s.columns()) {
                if let (true, DataType::Dictionary(_, values)) = (f.name() == "bytes", f.data_type()) {
                    columns.push(arrow::compute::cast(c, values).map_err(err)?);
                    new_fields.push(Arc::new(f.as_ref().clone().with_data_type(values.as_ref().clone())));
                    changed = true;
                } else {
                    columns.push(c.clone());
                    new_fields.push(f.clone());
                }
            }
            if !changed {
                return Ok(array);
            }
            let s = arrow::array::StructArray::try_new(new_fields.into(), columns, s.nulls().cloned()).map_err(err)?;
            Ok(Arc::new(s))
        }
        _ => Ok(array),
    }
}

/// Whether a column's type holds encoded images.
fn holds_images(t: &DataType) -> bool {
    match t {
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => true,
        DataType::Struct(fields) => fields
            .iter()
            .any(|f| f.name() == "bytes" && holds_images(f.data_type())),
        _ => false,
    }
}

/// Row `i`'s image bytes: `Ok(None)` for a null.
fn bytes_at(array: &dyn Array, i: usize) -> Result<Option<&[u8]>, String> {
    if array.is_null(i) {
        return Ok(None);
    }
    match array.data_type() {
        DataType::Binary => Ok(Some(array.as_binary::<i32>().value(i))),
        DataType::LargeBinary => Ok(Some(array.as_binary::<i64>().value(i))),
        DataType::BinaryView => Ok(Some(array.as_binary_view().value(i))),
        DataType::Struct(_) => {
            let s = array.as_struct();
            let bytes = s.column_by_name("bytes").ok_or("no `bytes` field")?;
            if bytes.is_null(i) {
                let path = s
                    .column_by_name("path")
                    .filter(|p| !p.is_null(i))
                    .and_then(|p| p.as_string_opt::<i32>().map(|a| a.value(i).to_string()))
                    .map(|p| format!(" (stored by path `{p}`)"))
                    .unwrap_or_default();
                return Err(format!(
                    "the image has no bytes{path}: preflight reads embedded images only"
                ));
            }
            bytes_at(bytes.as_ref(), i)
        }
        t => Err(format!("{t} holds no image bytes")),
    }
}

fn check_row(
    validator: &Validator,
    ci: usize,
    spec: &PixelSpec,
    array: &dyn Array,
    i: usize,
    site: Site,
    tally: &mut Tally,
) -> Result<(), String> {
    let Site { file, row, pair } = site;
    let col = validator.column_check(ci);
    let Some(bytes) = bytes_at(array, i)? else {
        if !col.spec.nullable {
            tally.hit(col.slots.null, file, Spot::row(row), || Value::Null);
        }
        return Ok(());
    };
    let img = image::decode(bytes)?;
    if img.width == 0 || img.height == 0 {
        return Err(format!("the image is {}x{}: it has no pixels", img.width, img.height));
    }
    if let Some(pair) = pair {
        crate::pairing::check_mask(
            validator,
            ci,
            pair,
            (img.width as u64, img.height as u64),
            file,
            row,
            tally,
        );
    }
    check_image(validator, ci, spec, img, file, row, tally)
}

thread_local! {
    /// Whether 8/16-bit planes are judged from their histogram (the fused
    /// path) where the kernel's other rules do not apply; tests turn it off
    /// to compare with the generic path.
    static FUSED: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Whether the histogram alone can stand in for the check kernel on column
/// `ci`: the kernel adds nothing beyond the value rule (no length rules, no
/// tokenizer band, no stored-type evidence of `index` columns).
fn fusable(validator: &Validator, ci: usize) -> bool {
    let spec = &validator.column_check(ci).spec;
    FUSED.with(|f| f.get())
        && !spec.has_length_rules()
        && spec.tokenizer_size.is_none()
        && spec.eod_id.is_none()
        && !matches!(spec.values, crate::schema::ValueRule::Index { .. })
}

/// Checks one decoded image of column `ci` (file `file`, row `row`).
fn check_image(
    validator: &Validator,
    ci: usize,
    spec: &PixelSpec,
    img: Image,
    file: usize,
    row: u64,
    tally: &mut Tally,
) -> Result<(), String> {
    let col = validator.column_check(ci);
    let slot = col.slots.value;
    {
        let ev = &mut tally.checks[slot].evidence.pixels;
        ev.images += 1;
        if matches!(img.kind, image::Kind::Jpeg | image::Kind::WebP) {
            ev.lossy += 1;
        }
        if img.mode == Mode::P && spec.decode == Decode::Luminance && spec.colors.is_empty() {
            ev.palette_luminance += 1;
        }
    }
    if !spec.colors.is_empty() {
        return check_colors(validator, ci, spec, &img, file, row, tally);
    }
    let (width, height) = (img.width, img.height);
    let plane = plane(img, spec)?;
    let judge = |v: i128| validator.column_check(ci).judge_int(v);
    // 8/16-bit planes: the histogram judges every pixel; the kernel runs
    // only where it checks more than the value rule.
    let fused = fusable(validator, ci).then_some(Judged { col, file, row });
    // A fused 8/16-bit plane never reaches the kernels, which count the
    // classes of every other.
    if fused.is_some()
        && matches!(plane, Plane::U8(_) | Plane::U16(..))
        && let Some(counts) = tally.classes.get_mut(ci).filter(|c| !c.is_empty())
    {
        count_classes(&plane, counts);
    }
    let array: ArrayRef = match plane {
        Plane::U8(v) => {
            // Most masks hold no bad value: one pass then says all the
            // report needs (see `summary`).
            if let Some((f, iv)) = fused.zip(col.interval.as_ref()) {
                let b = Bounds::<u8>::new(iv);
                note_summary(
                    &summarize(&v, &b),
                    &b,
                    false,
                    Values { values: &v, width },
                    f,
                    tally,
                    slot,
                );
            } else {
                // Without an interval rule: which values occur is all a
                // clean plane needs of the histogram.
                let seen = presence_u8(&v);
                let clean = seen
                    .iter()
                    .enumerate()
                    .all(|(x, &n)| n == 0 || judge(x as i128) == Verdict::Ok);
                let hist = if clean { seen } else { histogram_u8(&v) };
                note_histogram(&hist, false, &judge, Values { values: &v, width }, tally, slot, fused);
            }
            if fused.is_some() {
                // Kept for the next decode (a bounded size: one huge image
                // does not stay allocated).
                image::recycle_plane(v);
                return Ok(());
            }
            pixel_rows::<UInt8Type>(v, width, height)?
        }
        Plane::U16(v, stored16) => {
            if let Some((f, iv)) = fused.zip(col.interval.as_ref()) {
                let b = Bounds::<u16>::new(iv);
                note_summary(
                    &summarize(&v, &b),
                    &b,
                    stored16,
                    Values { values: &v, width },
                    f,
                    tally,
                    slot,
                );
            } else {
                let mut hist = vec![0u64; 1 << 16];
                for &p in &v {
                    hist[p as usize] += 1;
                }
                note_histogram(
                    &hist,
                    stored16,
                    &judge,
                    Values { values: &v, width },
                    tally,
                    slot,
                    fused,
                );
            }
            if fused.is_some() {
                return Ok(());
            }
            pixel_rows::<UInt16Type>(v, width, height)?
        }
        Plane::I16(v) => {
            count_other(v.iter().map(|&x| i128::from(x)), &judge, tally, slot);
            pixel_rows::<Int16Type>(v, width, height)?
        }
        Plane::I32(v) => {
            count_other(v.iter().map(|&x| i128::from(x)), &judge, tally, slot);
            pixel_rows::<Int32Type>(v, width, height)?
        }
        Plane::F32(v) => {
            let mut bad: BTreeMap<u32, u64> = BTreeMap::new();
            for &x in &v {
                if validator.column_check(ci).judge_float(f64::from(x)) == Verdict::Bad {
                    *bad.entry(x.to_bits()).or_default() += 1;
                }
            }
            let counts = bad
                .into_iter()
                .map(|(b, n)| (Value::Float(f64::from(f32::from_bits(b))), n));
            tally.checks[slot].evidence.pixels.count(counts);
            pixel_rows::<Float32Type>(v, width, height)?
        }
    };
    let mut cols: Vec<Option<ArrayRef>> = vec![None; validator.schema().columns.len()];
    cols[ci] = Some(array);
    match validator.check_columns(&cols, 0, file, row, tally).into_iter().next() {
        Some(e) => Err(e.message),
        None => Ok(()),
    }
}

/// Adds one 8/16-bit image's pixels of each class (0 <= v <
/// `counts.len()`) to `counts` (a run with splits counts its class columns).
fn count_classes(plane: &Plane, counts: &mut [u64]) {
    match plane {
        Plane::U8(v) => {
            for (class, n) in histogram_u8(v).into_iter().enumerate() {
                if let Some(c) = counts.get_mut(class) {
                    *c += n;
                }
            }
        }
        Plane::U16(v, _) => {
            for &x in v {
                if let Some(c) = counts.get_mut(usize::from(x)) {
                    *c += 1;
                }
            }
        }
        _ => {}
    }
}

/// One image's values as the loader reads them.
enum Plane {
    U8(Vec<u8>),
    /// Values, and whether the file stored 16 bits (`I;16`).
    U16(Vec<u16>, bool),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F32(Vec<f32>),
}

/// ITU-R 601-2 luma as Pillow computes it (`L24` in Convert.c).
#[inline]
fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((u32::from(r) * 19595 + u32::from(g) * 38470 + u32::from(b) * 7471 + 0x8000) >> 16) as u8
}

fn luma_of([r, g, b]: [u8; 3]) -> u8 {
    luma(r, g, b)
}

/// Pillow's `cmyk2rgb` (Convert.c): each of C, M, Y scaled by 255 - K.
#[inline]
fn cmyk_rgb(p: &[u8]) -> [u8; 3] {
    let nk = 255 - u32::from(p[3]);
    // MULDIV255: a * b / 255, rounded as Pillow rounds it.
    let muldiv = |a: u8| {
        let t = u32::from(a) * nk + 128;
        ((t >> 8) + t) >> 8
    };
    [0, 1, 2].map(|i| nk.saturating_sub(muldiv(p[i])) as u8)
}

/// Applies `decode` and `reduce_zero_label` to a decoded image.
fn plane(img: Image, spec: &PixelSpec) -> Result<Plane, String> {
    let mode = img.mode;
    let mut plane = match spec.decode {
        Decode::Raw => match img.samples {
            _ if mode.channels() > 1 => {
                return Err(format!(
                    "a {} image ({} values a pixel): decode: raw reads class indices from one channel; set `colors:` to map colours to classes, or decode: luminance",
                    mode.name(),
                    mode.channels()
                ));
            }
            Samples::U8(v) => Plane::U8(v),
            Samples::U16(v) => Plane::U16(v, true),
            Samples::I16(v) => Plane::I16(v),
            Samples::I32(v) => Plane::I32(v),
            Samples::F32(v) => Plane::F32(v),
        },
        // Pillow's convert("L") of each mode.
        Decode::Luminance => Plane::U8(match img.samples {
            Samples::U8(v) => match mode {
                Mode::One => v.into_iter().map(|x| x * 255).collect(),
                Mode::P => {
                    let mut table = [0u8; 256];
                    for (t, c) in table.iter_mut().zip(&img.palette) {
                        *t = luma(c[0], c[1], c[2]);
                    }
                    v.into_iter().map(|x| table[x as usize]).collect()
                }
                Mode::LA => v.chunks_exact(2).map(|p| p[0]).collect(),
                Mode::Rgb => v.chunks_exact(3).map(|p| luma(p[0], p[1], p[2])).collect(),
                Mode::Rgba => v.chunks_exact(4).map(|p| luma(p[0], p[1], p[2])).collect(),
                // Through RGB, as Pillow converts CMYK to L.
                Mode::Cmyk => v.chunks_exact(4).map(|p| luma_of(cmyk_rgb(p))).collect(),
                _ => v,
            },
            Samples::U16(v) => v.into_iter().map(|x| x.min(255) as u8).collect(),
            Samples::I16(v) => v.into_iter().map(|x| x.clamp(0, 255) as u8).collect(),
            Samples::I32(v) => v.into_iter().map(|x| x.clamp(0, 255) as u8).collect(),
            // Truncated toward zero, then clipped (NaN reads as 0).
            Samples::F32(v) => v.into_iter().map(|x| x.clamp(0.0, 255.0) as u8).collect(),
        }),
    };
    if spec.reduce_zero_label {
        // mmsegmentation: 0 -> 255 (ignored), v -> v - 1, 255 stays 255.
        match &mut plane {
            Plane::U8(v) => v.iter_mut().for_each(|x| {
                *x = match *x {
                    0 | 255 => 255,
                    y => y - 1,
                }
            }),
            Plane::U16(v, _) => v.iter_mut().for_each(|x| {
                *x = match *x {
                    0 | 255 => 255,
                    y => y - 1,
                }
            }),
            Plane::I16(v) => v.iter_mut().for_each(|x| {
                *x = match *x {
                    0 | 255 => 255,
                    y => y - 1,
                }
            }),
            Plane::I32(v) => v.iter_mut().for_each(|x| {
                *x = match *x {
                    0 | 255 => 255,
                    y => y - 1,
                }
            }),
            Plane::F32(v) => v.iter_mut().for_each(|x| {
                *x = if *x == 0.0 || *x == 255.0 { 255.0 } else { *x - 1.0 };
            }),
        }
    }
    Ok(plane)
}

/// Where a plane judged by its histogram sits, for what the kernel would
/// have recorded.
#[derive(Clone, Copy)]
struct Judged<'a> {
    col: &'a crate::check::ColumnCheck,
    file: usize,
    row: u64,
}

/// The histogram of an 8-bit plane. Masks are runs of one value, and one
/// counter incremented pixel after pixel would wait on its own store each
/// time: eight pixels of one value (one compare of a word) add to a run
/// counter held in a register, other words go to four partial histograms.
/// Which values occur in `v`, as a histogram whose counts are 1 for every
/// value present: enough for a plane without a bad value, where no count is
/// reported and only presence is asked (`note_histogram` with nothing bad).
/// A store per pixel, not the histogram's read-add-write.
fn presence_u8(v: &[u8]) -> [u64; 256] {
    const SPLAT: u64 = 0x0101_0101_0101_0101;
    let mut seen = [0u8; 256];
    let mut words = v.chunks_exact(8);
    // A word like the one before it adds nothing (masks are mostly runs).
    let mut last = None;
    for c in &mut words {
        let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
        if last == Some(w) {
            continue;
        }
        last = Some(w);
        if w == u64::from(c[0]) * SPLAT {
            seen[c[0] as usize] = 1;
        } else {
            for &p in c {
                seen[p as usize] = 1;
            }
        }
    }
    for &p in words.remainder() {
        seen[p as usize] = 1;
    }
    seen.map(u64::from)
}

fn histogram_u8(v: &[u8]) -> [u64; 256] {
    const SPLAT: u64 = 0x0101_0101_0101_0101;
    // u32 partials: an image has fewer than 2^32 pixels (MAX_PIXELS).
    let mut part = [[0u32; 256]; 4];
    let (mut run, mut count) = (0u8, 0u32);
    let mut words = v.chunks_exact(8);
    for c in &mut words {
        let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
        if w == u64::from(run) * SPLAT {
            count += 8;
        } else if w == u64::from(c[0]) * SPLAT {
            part[0][run as usize] += count;
            (run, count) = (c[0], 8);
        } else {
            for q in c.chunks_exact(4) {
                part[0][q[0] as usize] += 1;
                part[1][q[1] as usize] += 1;
                part[2][q[2] as usize] += 1;
                part[3][q[3] as usize] += 1;
            }
        }
    }
    part[0][run as usize] += count;
    for &p in words.remainder() {
        part[0][p as usize] += 1;
    }
    std::array::from_fn(|i| part.iter().map(|h| u64::from(h[i])).sum())
}

/// Pixel counts and hint evidence from one image's histogram; with
/// `fused`, also everything the check kernel records for the plane (the
/// kernel then does not run): violations, the bad values' evidence, the
/// smallest value, examples and logged violations at their (x, y) in scan
/// order, so reports are the same byte for byte.
fn note_histogram<T: Lane>(
    hist: &[u64],
    stored16: bool,
    judge: &dyn Fn(i128) -> Verdict,
    plane: Values<T>,
    tally: &mut Tally,
    slot: usize,
    fused: Option<Judged>,
) {
    let Values { values, width } = plane;
    let present = || hist.iter().enumerate().filter(|(_, n)| **n > 0);
    {
        let ev = &mut tally.checks[slot].evidence.pixels;
        if hist.get(255).is_some_and(|&n| n > 0) && present().all(|(v, _)| v == 0 || v == 255) {
            ev.binary_255 += 1;
        }
        if stored16 && hist[256.min(hist.len())..].iter().any(|&n| n > 0) {
            ev.wide16 += 1;
        }
    }
    let bad: Vec<usize> = present()
        .filter(|(v, _)| judge(*v as i128) != Verdict::Ok)
        .map(|(v, _)| v)
        .collect();
    if let Some(f) = fused {
        kernel_evidence(hist, &bad, f, &mut tally.checks[slot]);
    }
    if bad.is_empty() {
        return;
    }
    tally.checks[slot]
        .evidence
        .pixels
        .count(bad.iter().map(|&v| (Value::Int(v as i128), hist[v])));
    let mut is_bad = vec![false; hist.len()];
    for &v in &bad {
        is_bad[v] = true;
    }
    // Runs of one good value (most of a mask) are skipped eight at a time.
    let blocks = |c: &[T]| {
        let first: u32 = c[0].into();
        is_bad[first as usize] || c.iter().any(|&x| x.into() != first)
    };
    locate_bad(
        Values { values, width },
        8,
        blocks,
        |v| is_bad[v as usize],
        fused,
        tally,
        slot,
    );
}

/// Walks the bad pixels of a plane in scan order (within the blocks of
/// `block` pixels that `may_hold_bad` lets through) and records what the
/// report keeps of each: pixels on class boundaries (a bad value strictly
/// between its two neighbours, left/right or above/below, as interpolation
/// makes them) and, with `fused`, the kernel's examples and logged
/// violations at their (x, y).
fn locate_bad<T: Lane>(
    plane: Values<T>,
    block: usize,
    may_hold_bad: impl Fn(&[T]) -> bool,
    mut is_bad: impl FnMut(u32) -> bool,
    fused: Option<Judged>,
    tally: &mut Tally,
    slot: usize,
) {
    let Values { values, width } = plane;
    let at = |i: usize| values[i].into();
    let (mut located, mut boundary) = (0, 0);
    let blocks = values.chunks(block).enumerate().filter(|(_, c)| may_hold_bad(c));
    let pixels = blocks.flat_map(|(k, c)| c.iter().enumerate().map(move |(j, &v)| (block * k + j, v)));
    for (i, v) in pixels {
        let v: u32 = v.into();
        if !is_bad(v) {
            continue;
        }
        located += 1;
        let x = i % width;
        let between = |a: u32, b: u32| (a < v && v < b) || (b < v && v < a);
        let horizontal = x > 0 && x + 1 < width && between(at(i - 1), at(i + 1));
        let vertical = i >= width && i + width < values.len() && between(at(i - width), at(i + width));
        if horizontal || vertical {
            boundary += 1;
        }
        if let Some(f) = fused {
            // The kernel's examples and log: every bad pixel in scan order.
            let check = &mut tally.checks[slot];
            let wanted = check.examples.len() < tally.max_examples;
            if !wanted && tally.log.is_none() {
                continue;
            }
            let spot = Spot {
                row: f.row,
                pos: Some(x as u64),
                parent: Some((i / width) as u64),
            };
            if wanted {
                check.examples.push(crate::check::tally::Example {
                    file: f.file,
                    row: f.row,
                    value: Value::Int(v.into()),
                    xy: spot.xy(),
                    origin: None,
                });
            }
            if let Some(log) = tally.log.as_mut() {
                log.push(crate::check::tally::Logged {
                    check: slot,
                    file: f.file,
                    spot,
                    value: Value::Int(v.into()),
                    origin: None,
                });
            }
        }
    }
    let ev = &mut tally.checks[slot].evidence.pixels;
    ev.located += located;
    ev.boundary += boundary;
}

/// What a plane judged by its [`Summary`] adds: exactly what
/// [`note_histogram`] with `fused` records of its histogram. A plane with a
/// bad value (rare) is then walked once for its bad pixels, which yields
/// their counts, so no histogram is built.
fn note_summary<N: Lane>(
    s: &Summary<N>,
    b: &Bounds<N>,
    stored16: bool,
    plane: Values<N>,
    f: Judged,
    tally: &mut Tally,
    slot: usize,
) {
    let Values { values, width } = plane;
    {
        let ev = &mut tally.checks[slot].evidence.pixels;
        if s.has_255 && s.only_0_255 {
            ev.binary_255 += 1;
        }
        if stored16 && s.max(b).is_some_and(|m| m.into() > 255) {
            ev.wide16 += 1;
        }
    }
    // The bad values and their pixel counts.
    let mut counts: Vec<u64> = Vec::new();
    if !s.clean(b) {
        let top: u32 = N::TOP.into();
        counts = vec![0; top as usize + 1];
        let count = |v: u32| {
            let bad = b.bad(v);
            if bad {
                counts[v as usize] += 1;
            }
            bad
        };
        locate_bad(
            Values { values, width },
            64,
            |c| b.has_bad(c),
            count,
            Some(f),
            tally,
            slot,
        );
    }
    let bad = || counts.iter().enumerate().filter(|(_, n)| **n > 0);
    let check = &mut tally.checks[slot];
    // As `kernel_evidence`: violations, each bad value, and with class
    // rules the smallest value other than the ignored one (only the ignored
    // one reads as the type's largest, recorded unless it is ignored).
    check.violations += counts.iter().sum::<u64>();
    for (v, _) in bad() {
        check.evidence.bad_whole(v as i128);
    }
    if f.col.interval.is_some() && f.col.tracks_min() {
        let m = match s.range {
            Some((mn, _)) => Some(mn),
            None if s.extra_seen => Some(N::TOP),
            None => None,
        };
        if let Some(m) = m
            && b.extra.is_none_or(|x| x != m)
        {
            check.evidence.seen_min(i128::from(m.into()));
        }
    }
    check
        .evidence
        .pixels
        .count(bad().map(|(v, &n)| (Value::Int(v as i128), n)));
}

/// What the integer kernel records of a plane besides examples, from its
/// histogram: the violation count, each bad value's evidence, and (class
/// rules) the smallest value other than `ignore_index`, computed as the
/// kernel computes it in the plane's own type (the ignored value reads as
/// the type's largest).
fn kernel_evidence(hist: &[u64], bad: &[usize], f: Judged, check: &mut crate::check::tally::CheckTally) {
    check.violations += bad.iter().map(|&v| hist[v]).sum::<u64>();
    for &v in bad {
        check.evidence.bad_whole(v as i128);
    }
    let Some(iv) = f.col.interval.filter(|_| f.col.tracks_min()) else {
        return;
    };
    let top = hist.len() - 1;
    let extra = iv.extra.and_then(|x| usize::try_from(x).ok()).filter(|&x| x <= top);
    let smallest = hist
        .iter()
        .enumerate()
        .find(|&(v, &n)| n > 0 && Some(v) != extra)
        .map(|(v, _)| v);
    let extra_seen = extra.is_some_and(|x| hist[x] > 0);
    let m = match smallest {
        Some(m) if extra_seen => Some(m.min(top)),
        Some(m) => Some(m),
        None if extra_seen => Some(top),
        None => None,
    };
    if let Some(m) = m
        && (extra.is_none() || Some(m) != extra)
    {
        check.evidence.seen_min(m as i128);
    }
}

/// Pixel counts of bad values of wider integer images.
fn count_other(values: impl Iterator<Item = i128>, judge: &dyn Fn(i128) -> Verdict, tally: &mut Tally, slot: usize) {
    let mut bad: BTreeMap<i128, u64> = BTreeMap::new();
    for v in values {
        if judge(v) == Verdict::Bad {
            *bad.entry(v).or_default() += 1;
        }
    }
    let counts = bad.into_iter().map(|(v, n)| (Value::Int(v), n));
    tally.checks[slot].evidence.pixels.count(counts);
}

/// One image as a one-row list of pixel rows.
fn pixel_rows<T: ArrowPrimitiveType>(values: Vec<T::Native>, width: usize, height: usize) -> Result<ArrayRef, String> {
    let err = |e: arrow::error::ArrowError| e.to_string();
    let values = PrimitiveArray::<T>::new(values.into(), None);
    let w = i32::try_from(width).map_err(|_| "the image is too wide")?;
    let h = i32::try_from(height).map_err(|_| "the image is too tall")?;
    let rows = FixedSizeListArray::try_new(
        Arc::new(Field::new_list_field(T::DATA_TYPE, false)),
        w,
        Arc::new(values),
        None,
    )
    .map_err(err)?;
    let field = Arc::new(Field::new_list_field(rows.data_type().clone(), false));
    let image = ListArray::try_new(field, OffsetBuffer::new(vec![0, h].into()), Arc::new(rows), None).map_err(err)?;
    Ok(Arc::new(image))
}

/// A colour-mapped image: each pixel's colour is looked up; an unmapped
/// colour is a violation whose value is the colour, a mapped class the
/// rule rejects is one whose value is the class.
fn check_colors(
    validator: &Validator,
    ci: usize,
    spec: &PixelSpec,
    img: &Image,
    file: usize,
    row: u64,
    tally: &mut Tally,
) -> Result<(), String> {
    let col = validator.column_check(ci);
    let slot = col.slots.value;
    let (Samples::U8(v), false) = (&img.samples, img.mode == Mode::Cmyk) else {
        return Err(format!(
            "a {} image has no colours: a colour map reads RGB, RGBA, palette or 8-bit gray images",
            img.mode.name()
        ));
    };
    let key = |c: [u8; 3]| u32::from_be_bytes([0, c[0], c[1], c[2]]);
    let mut map: Vec<(u32, i128, bool)> = spec
        .colors
        .iter()
        .map(|(c, class)| (key(*c), *class, col.judge_int(*class) == Verdict::Ok))
        .collect();
    map.sort_unstable_by_key(|m| m.0);
    let colour = |i: usize| -> [u8; 3] {
        match img.mode {
            Mode::Rgb => [v[3 * i], v[3 * i + 1], v[3 * i + 2]],
            Mode::Rgba => [v[4 * i], v[4 * i + 1], v[4 * i + 2]],
            Mode::LA => [v[2 * i]; 3],
            Mode::One => [v[i] * 255; 3],
            Mode::P => img.palette.get(v[i] as usize).copied().unwrap_or([0; 3]),
            _ => [v[i]; 3],
        }
    };
    let mut counts: BTreeMap<Result<i128, [u8; 3]>, u64> = BTreeMap::new();
    // A run with splits counts the classes (empty otherwise).
    let mut classes = tally.classes.get_mut(ci).map(std::mem::take).unwrap_or_default();
    for i in 0..img.width * img.height {
        let c = colour(i);
        let found = map.binary_search_by_key(&key(c), |m| m.0).ok().map(|j| map[j]);
        let value = match found {
            Some((_, class, true)) => {
                if let Some(c) = usize::try_from(class).ok().and_then(|i| classes.get_mut(i)) {
                    *c += 1;
                }
                continue;
            }
            Some((_, class, false)) => Ok(class),
            None => Err(c),
        };
        *counts.entry(value).or_default() += 1;
        let spot = Spot {
            row,
            pos: Some((i % img.width) as u64),
            parent: Some((i / img.width) as u64),
        };
        if let Ok(class) = value {
            tally.checks[slot].evidence.bad_whole(class);
        }
        tally.hit(slot, file, spot, || describe(value));
    }
    if let Some(c) = tally.classes.get_mut(ci) {
        *c = classes;
    }
    tally.checks[slot]
        .evidence
        .pixels
        .count(counts.into_iter().map(|(v, n)| (describe(v), n)));
    Ok(())
}

fn describe(v: Result<i128, [u8; 3]>) -> Value {
    match v {
        Ok(class) => Value::Int(class),
        Err([r, g, b]) => Value::Str(format!("({r}, {g}, {b})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Schema, parse_color};

    fn schema(col: &str) -> Result<Schema, String> {
        Schema::from_yaml(&format!("version: 1\ncolumns:\n  m: {col}\n"), "s.yaml".as_ref()).map_err(|e| e.to_string())
    }

    #[test]
    fn pixel_keys_parse_and_survive_the_resolved_schema() {
        let s =
            schema("{kind: class, num_classes: 3, colors: {\"1,2,3\": 0, \"#0a0b0c\": 2, \"(4, 5, 6)\": 1}}").unwrap();
        let p = s.columns[0].pixels.clone().unwrap();
        assert_eq!(p.colors, vec![([1, 2, 3], 0), ([10, 11, 12], 2), ([4, 5, 6], 1)]);
        let again = Schema::from_yaml(&s.to_resolved_yaml(), "s.yaml".as_ref()).unwrap();
        assert_eq!(again.columns[0].pixels, Some(p));
        let s = schema("{kind: class, num_classes: 3, decode: luminance, reduce_zero_label: true}").unwrap();
        let p = s.columns[0].pixels.clone().unwrap();
        assert_eq!((p.decode, p.reduce_zero_label), (Decode::Luminance, true));
        assert_eq!(
            Schema::from_yaml(&s.to_resolved_yaml(), "s.yaml".as_ref())
                .unwrap()
                .columns[0]
                .pixels,
            Some(p)
        );
        assert_eq!(schema("{kind: class, num_classes: 3}").unwrap().columns[0].pixels, None);
    }

    #[test]
    fn bad_pixel_keys_are_schema_errors() {
        for (col, says) in [
            (
                "{kind: class, num_classes: 3, decode: gray}",
                "`gray` is not a decoding",
            ),
            ("{kind: class, num_classes: 3, colors: {\"1,2\": 0}}", "is not a colour"),
            (
                "{kind: class, num_classes: 3, colors: {\"1,2,300\": 0}}",
                "is not a colour",
            ),
            (
                "{kind: class, num_classes: 3, colors: {\"1,2,3\": 0.5}}",
                "not a whole number",
            ),
            (
                "{kind: class, num_classes: 3, colors: {\"1,2,3\": 0, \"#010203\": 1}}",
                "mapped twice",
            ),
            ("{kind: class, num_classes: 3, colors: {}}", "empty"),
            (
                "{kind: class, num_classes: 3, colors: {\"1,2,3\": 0}, reduce_zero_label: true}",
                "reduced classes",
            ),
            (
                "{kind: class, num_classes: 3, colors: {\"1,2,3\": 0}, decode: luminance}",
                "luminance",
            ),
            ("{kind: class, num_classes: 3, decode: raw, colours: {}}", "colours"),
        ] {
            let e = schema(col).expect_err(col);
            assert!(e.contains(says), "{col}: {e}");
        }
        assert_eq!(parse_color(" 255 , 0,7 "), Some([255, 0, 7]));
        assert_eq!(parse_color("#FFffff"), Some([255; 3]));
        assert_eq!(parse_color("#fff"), None);
    }

    #[test]
    fn luminance_is_pillows_integer_formula() {
        // Pillow's L24 on the VOC palette: classes 1, 15 and 20.
        assert_eq!(luma(128, 0, 0), 38);
        assert_eq!(luma(192, 128, 128), 147);
        assert_eq!(luma(0, 64, 128), 52);
        assert_eq!(luma(255, 255, 255), 255);
        assert_eq!(luma(0, 0, 0), 0);
    }

    #[test]
    fn reduce_zero_label_is_mmsegmentations_arithmetic() {
        let spec = PixelSpec {
            reduce_zero_label: true,
            ..PixelSpec::default()
        };
        let img = Image {
            width: 4,
            height: 1,
            mode: Mode::L,
            samples: Samples::U8(vec![0, 1, 254, 255]),
            palette: Vec::new(),
            kind: image::Kind::Png,
            stored_bits: 8,
        };
        let Ok(Plane::U8(v)) = plane(img, &spec) else {
            panic!("u8")
        };
        assert_eq!(v, [255, 0, 253, 255]);
    }

    #[test]
    fn pixel_counts_keep_the_smallest_values_exactly_whatever_the_merge_order() {
        use crate::check::tally::{PIXEL_COUNTS, PixelEvidence};
        let parts: Vec<Vec<(Value, u64)>> = (0..6)
            .map(|p| {
                (0..40)
                    .filter(|v| (v + p) % 3 != 0)
                    .map(|v| (Value::Int(v), (v + p) as u64))
                    .collect()
            })
            .collect();
        let mut want: BTreeMap<i128, u64> = BTreeMap::new();
        for part in &parts {
            for (v, n) in part {
                let Value::Int(v) = v else { unreachable!() };
                *want.entry(*v).or_default() += n;
            }
        }
        let want: Vec<(Value, u64)> = want
            .into_iter()
            .take(PIXEL_COUNTS)
            .map(|(v, n)| (Value::Int(v), n))
            .collect();
        for order in [[0, 1, 2, 3, 4, 5], [5, 3, 1, 0, 2, 4]] {
            let mut all = PixelEvidence::default();
            for i in order {
                let mut one = PixelEvidence::default();
                one.count(parts[i].clone());
                let mut e = crate::check::tally::Evidence {
                    pixels: all.clone(),
                    ..Default::default()
                };
                let o = crate::check::tally::Evidence {
                    pixels: one,
                    ..Default::default()
                };
                e.merge(&o);
                all = e.pixels;
            }
            assert_eq!(all.counts, want);
        }
    }

    /// The fused path (one summary pass, or the histogram, standing in for
    /// the kernel) records exactly what the generic path (kernel over the
    /// Arrow plane) records: random 8- and 16-bit planes, blocky (2-D
    /// regions, as masks are) and noisy, under rules of every shape (with
    /// and without ignore_index, reduce_zero_label, luminance decoding of
    /// palette images), with and without a violation log, few and many
    /// examples.
    #[test]
    fn histogram_path_records_what_the_kernel_records() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let columns = [
            "{kind: class, num_classes: 150, ignore_index: 255}",
            "{kind: class, num_classes: 3}",
            "{kind: class, num_classes: 2, ignore_index: 0}",
            "{kind: class, num_classes: 5, ignore_index: 70000}",
            "{kind: class, num_classes: 1, ignore_index: 255, reduce_zero_label: true}",
            "{kind: class, num_classes: 150, ignore_index: 255, reduce_zero_label: true}",
            "{kind: values, allowed: [0, 2, 7, 255]}",
            "{kind: values, allowed: [3, 4, 5]}",
            "{kind: range, min: 1, max: 200}",
            "{kind: class, num_classes: 40000, ignore_index: 65535}",
            "{kind: class, num_classes: 300, ignore_index: 255}",
            "{kind: class, num_classes: 150, ignore_index: 255, decode: luminance}",
            "{kind: class, num_classes: 60, decode: luminance, reduce_zero_label: true}",
        ];
        let mut runner = TestRunner::new(Config {
            cases: 256,
            ..Config::default()
        });
        let strategy = (
            0..columns.len(),
            1usize..80,
            1usize..80,
            any::<bool>(),
            any::<bool>(),
            0usize..6,
            proptest::collection::vec(any::<u16>(), 80 * 80),
            any::<u8>(),
            1usize..20,
        );
        runner
            .run(&strategy, |(c, w, h, wide, log, examples, raw, spread, side)| {
                let s = schema(columns[c]).unwrap();
                let validator = Validator::new(s, examples);
                let spec = validator.schema().columns[0].pixels.clone().unwrap_or_default();
                // Few distinct values (as masks), or any value.
                let n = w * h;
                let pick = |r: u16| {
                    let few = [0u16, 1, 2, 3, 7, 150, 200, 255, 256, 300, 40000, 65535];
                    if spread < 128 { few[r as usize % few.len()] } else { r }
                };
                // Square regions of one value (as masks have; sometimes a
                // stray pixel in one), or a value per pixel.
                let at = |i: usize| {
                    if spread % 2 == 0 {
                        let (x, y) = (i % w, i / w);
                        let r = raw[(y / side) * 80 + x / side];
                        if raw[i] % 97 == 0 { raw[i] } else { r }
                    } else {
                        raw[i]
                    }
                };
                // A palette image under luminance decoding (indices through
                // a palette); otherwise gray.
                let luminance = spec.decode == Decode::Luminance && !wide;
                let samples = if wide && spec.decode == Decode::Raw {
                    Samples::U16((0..n).map(|i| pick(at(i))).collect())
                } else {
                    Samples::U8((0..n).map(|i| pick(at(i)) as u8).collect())
                };
                let palette = (0..256u16)
                    .map(|i| {
                        let r = raw[i as usize];
                        [r as u8, (r >> 8) as u8, (r as u8).wrapping_mul(3)]
                    })
                    .collect();
                let img = Image {
                    width: w,
                    height: h,
                    mode: match samples {
                        Samples::U16(_) => Mode::I16,
                        _ if luminance => Mode::P,
                        _ => Mode::L,
                    },
                    samples,
                    palette: if luminance { palette } else { Vec::new() },
                    kind: image::Kind::Png,
                    stored_bits: if wide { 16 } else { 8 },
                };
                let run = |fused: bool| {
                    FUSED.with(|f| f.set(fused));
                    let mut tally = validator.tally();
                    if log {
                        tally.log = Some(Vec::new());
                    }
                    let r = check_image(&validator, 0, &spec, img.clone(), 3, 9, &mut tally);
                    FUSED.with(|f| f.set(true));
                    (r, tally)
                };
                let (generic, fused) = (run(false), run(true));
                prop_assert_eq!(&generic, &fused);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn the_split_histogram_counts_every_pixel() {
        let runs = |n: usize| (0..n).map(|i| [0u8, 7, 255][(i / 13) % 3]).collect::<Vec<u8>>();
        for (n, blocky) in [0usize, 1, 3, 4, 5, 8, 9, 1000, 1003, 4099]
            .iter()
            .flat_map(|&n| [(n, false), (n, true)])
        {
            let v: Vec<u8> = if blocky {
                runs(n)
            } else {
                (0..n).map(|i| (i * 7 % 256) as u8).collect()
            };
            let mut want = [0u64; 256];
            for &p in &v {
                want[p as usize] += 1;
            }
            assert_eq!(histogram_u8(&v), want, "{n}");
            assert_eq!(presence_u8(&v), want.map(|c| u64::from(c > 0)), "{n}");
        }
    }

    /// Truncations and bit flips of real images: each decodes or is an
    /// error, never a panic, and never more samples than the header's size.
    #[test]
    fn mutated_images_never_panic() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/file");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.file_name().unwrap().to_string_lossy().starts_with("gen-image-") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap()[1..].to_vec();
            seen += 1;
            let mut inputs: Vec<Vec<u8>> = (0..bytes.len()).step_by(7).map(|n| bytes[..n].to_vec()).collect();
            for i in (0..bytes.len()).step_by(3) {
                let mut b = bytes.clone();
                b[i] ^= 0x5a;
                inputs.push(b);
            }
            for input in inputs {
                let r = std::panic::catch_unwind(|| image::decode(&input));
                let Ok(r) = r else {
                    panic!("{}: a mutation panicked", path.display())
                };
                if let Ok(img) = r {
                    assert!((img.width * img.height) as u64 <= image::MAX_PIXELS);
                }
            }
        }
        assert!(seen >= 8);
    }
}
