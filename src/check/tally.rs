//! What checking produces: a count per check and the first examples in row
//! order ([`Tally`]), with the evidence the hints read.
//!
//! Why with the kernels: they write it, and readers name rows in its terms
//! ([`Origin`]). Tallies merge associatively in (file, row) order, so the
//! report is the same for every thread count and every way the work was
//! split.

/// An offending value as stored in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A null value or element (rule `null`).
    Null,
    /// A whole number (every integer type; a row's length for length rules).
    Int(i128),
    /// A float as stored (f32 values are widened exactly).
    Float(f64),
    /// A string.
    Str(String),
}

impl Value {
    /// The value as JSON: integers and floats as numbers, NaN and infinities
    /// as the strings "NaN", "inf", "-inf" (JSON has no such numbers).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::Null => J::Null,
            Value::Int(i) => {
                if let Ok(v) = i64::try_from(*i) {
                    J::from(v)
                } else if let Ok(v) = u64::try_from(*i) {
                    J::from(v)
                } else {
                    J::String(i.to_string())
                }
            }
            Value::Float(f) if f.is_nan() => J::String("NaN".into()),
            Value::Float(f) if f.is_infinite() => J::String(if *f > 0.0 { "inf" } else { "-inf" }.into()),
            Value::Float(f) => J::from(*f),
            Value::Str(s) => J::String(s.clone()),
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) if x.is_nan() => f.write_str("NaN"),
            Value::Float(x) if x.is_infinite() => f.write_str(if *x > 0.0 { "inf" } else { "-inf" }),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// One offending value and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// Index of the file in the run's sorted file list.
    pub file: usize,
    /// 0-based row within the file.
    pub row: u64,
    /// The value (the row's length for a length rule).
    pub value: Value,
    /// For an element of a list of lists (an image's pixel rows): its index
    /// in its innermost list and that list's index, i.e. a pixel's (x, y).
    pub xy: Option<(u64, u64)>,
    /// For a row of a mapped dataset ([`Origin`]), where it is stored;
    /// `row` is then the dataset index.
    pub origin: Option<Origin>,
}

/// Where a row of a mapped dataset (a Hugging Face `datasets` index
/// mapping applied to its data files: the file's rows are the dataset's
/// indices) is stored: the data file as reports name it, and its row there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The data file, as reports name it.
    pub file: std::sync::Arc<str>,
    /// 0-based row within that file.
    pub row: u64,
}

impl Spot {
    /// (pos, parent) when both are known: a pixel's (x, y).
    pub fn xy(&self) -> Option<(u64, u64)> {
        self.pos.zip(self.parent)
    }
}

/// Where a value sits in its file: its row and, for a list element, its
/// index in its innermost list (`pos`) and that list's index in the list
/// around it (`parent`): for an image of pixel rows, x and y.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Spot {
    /// 0-based row within the file.
    pub row: u64,
    /// Index of the element in its innermost list.
    pub pos: Option<u64>,
    /// Index of that list in the list around it.
    pub parent: Option<u64>,
}

impl Spot {
    /// A whole row (a scalar value, a null row, a row's length).
    pub fn row(row: u64) -> Spot {
        Spot {
            row,
            pos: None,
            parent: None,
        }
    }
}

/// One violation as `--violations-out` writes it: every one, uncapped.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    /// Index of the check (schema column and rule, in report order).
    pub check: usize,
    /// Index of the file in the run's sorted file list.
    pub file: usize,
    /// Where in the file.
    pub spot: Spot,
    /// The offending value, as in examples.
    pub value: Value,
    /// For a row of a mapped dataset, where it is stored ([`Origin`]).
    pub origin: Option<Origin>,
}

/// What the data showed about a value check, for hints.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// Smallest whole number among the offending values.
    pub bad_min: Option<i128>,
    /// Largest whole number among the offending values.
    pub bad_max: Option<i128>,
    /// Smallest whole number among all checked values.
    pub min: Option<i128>,
    /// Offending values seen of the well-known sentinels -1, -100 and 255.
    pub saw_minus_one: bool,
    /// See [`Evidence::saw_minus_one`].
    pub saw_minus_100: bool,
    /// See [`Evidence::saw_minus_one`].
    pub saw_255: bool,
    /// Offending values with a fractional part.
    pub saw_fraction: bool,
    /// Offending whole numbers >= 2^16 (a uint16 file read as uint32 gives
    /// mostly these) and >= 2^32 (int32 data read as int64).
    pub bad_wide: [u64; 2],
    /// What decoded images showed (pixel columns only).
    pub pixels: PixelEvidence,
}

/// Bad values whose pixel counts a check keeps: the smallest ones.
pub const PIXEL_COUNTS: usize = 16;

/// What the images of a pixel column showed: per bad value its pixel
/// count, and what the hints need.
///
/// `counts` keeps the [`PIXEL_COUNTS`] smallest distinct bad values (in
/// [`value_order`]) with exact counts. That merges exactly: a value among
/// the smallest of the whole run is among the smallest of every part that
/// holds it, so each part kept its full count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PixelEvidence {
    /// Images decoded.
    pub images: u64,
    /// Of them, JPEG or WebP.
    pub lossy: u64,
    /// Palette images read with `decode: luminance`.
    pub palette_luminance: u64,
    /// Images holding exactly the values 0 and 255.
    pub binary_255: u64,
    /// 16-bit images holding values above 255.
    pub wide16: u64,
    /// Bad pixels strictly between their two neighbours (left/right or
    /// above/below): interpolation's signature.
    pub boundary: u64,
    /// Bad pixels whose neighbours were looked at.
    pub located: u64,
    /// (bad value, pixels), in [`value_order`].
    pub counts: Vec<(Value, u64)>,
}

/// The order of bad values in pixel counts: numbers by value (integers
/// before floats of equal value), then strings.
pub fn value_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Int(_) | Value::Float(_) => 1,
            Value::Str(_) => 2,
        }
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
        (Value::Int(x), Value::Float(y)) => crate::schema::cmp_int_float(*x, *y).unwrap_or(Ordering::Less),
        (Value::Float(x), Value::Int(y)) => crate::schema::cmp_int_float(*y, *x)
            .map(Ordering::reverse)
            .unwrap_or(Ordering::Greater),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)),
    }
    .then_with(|| rank(a).cmp(&rank(b)))
}

/// The same bad value: same type, equal in [`value_order`] (NaN is NaN).
fn same_value(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) && value_order(a, b).is_eq()
}

impl PixelEvidence {
    /// Adds pixel counts of bad values, keeping the smallest.
    pub fn count(&mut self, more: impl IntoIterator<Item = (Value, u64)>) {
        let mut all = std::mem::take(&mut self.counts);
        all.extend(more);
        all.sort_by(|a, b| value_order(&a.0, &b.0));
        let mut out: Vec<(Value, u64)> = Vec::with_capacity(all.len().min(PIXEL_COUNTS));
        for (v, n) in all {
            match out.last_mut() {
                Some((w, m)) if same_value(w, &v) => *m = m.saturating_add(n),
                _ => out.push((v, n)),
            }
        }
        out.truncate(PIXEL_COUNTS);
        self.counts = out;
    }

    fn merge(&mut self, o: &PixelEvidence) {
        // Saturating: counts read from a hostile partial may not wrap.
        self.images = self.images.saturating_add(o.images);
        self.lossy = self.lossy.saturating_add(o.lossy);
        self.palette_luminance = self.palette_luminance.saturating_add(o.palette_luminance);
        self.binary_255 = self.binary_255.saturating_add(o.binary_255);
        self.wide16 = self.wide16.saturating_add(o.wide16);
        self.boundary = self.boundary.saturating_add(o.boundary);
        self.located = self.located.saturating_add(o.located);
        if !o.counts.is_empty() {
            self.count(o.counts.iter().cloned());
        }
    }
}

impl Evidence {
    /// Notes an offending whole number.
    pub fn bad_whole(&mut self, v: i128) {
        self.bad_min = Some(self.bad_min.map_or(v, |m| m.min(v)));
        self.bad_max = Some(self.bad_max.map_or(v, |m| m.max(v)));
        if v >= 1 << 16 {
            self.bad_wide[0] += 1;
        }
        if v >= 1 << 32 {
            self.bad_wide[1] += 1;
        }
        match v {
            -1 => self.saw_minus_one = true,
            -100 => self.saw_minus_100 = true,
            255 => self.saw_255 = true,
            _ => {}
        }
    }

    /// Notes the smallest whole number of some checked values.
    pub fn seen_min(&mut self, v: i128) {
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
    }

    pub(crate) fn merge(&mut self, o: &Evidence) {
        fn pick(a: Option<i128>, b: Option<i128>, f: fn(i128, i128) -> i128) -> Option<i128> {
            match (a, b) {
                (Some(x), Some(y)) => Some(f(x, y)),
                (x, None) => x,
                (None, y) => y,
            }
        }
        self.bad_min = pick(self.bad_min, o.bad_min, i128::min);
        self.bad_max = pick(self.bad_max, o.bad_max, i128::max);
        self.min = pick(self.min, o.min, i128::min);
        self.saw_minus_one |= o.saw_minus_one;
        self.saw_minus_100 |= o.saw_minus_100;
        self.saw_255 |= o.saw_255;
        self.saw_fraction |= o.saw_fraction;
        self.bad_wide[0] += o.bad_wide[0];
        self.bad_wide[1] += o.bad_wide[1];
        self.pixels.merge(&o.pixels);
    }
}

/// The running result of one check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckTally {
    /// Offending values (value rules) or rows (length rules).
    pub violations: u64,
    /// The first examples, in (file, row) order.
    pub examples: Vec<Example>,
    /// What the data showed, for hints.
    pub evidence: Evidence,
}

/// Results of checking some part of the data, ready to merge with others.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    /// One entry per check, in report order.
    pub checks: Vec<CheckTally>,
    /// Rows read.
    pub rows: u64,
    /// Examples kept per check.
    pub max_examples: usize,
    /// Every violation, when they are wanted (`--violations-out`); the
    /// scanner drains it after each batch.
    pub log: Option<Vec<Logged>>,
    /// The documents open in the unit being checked (`eod_id` columns of a
    /// source whose units hold whole documents); never merged.
    pub(crate) docs: Option<Box<super::Documents>>,
    /// Per schema column, how often each class occurred (a run with
    /// splits counts its class columns); empty for a column not counted.
    pub classes: Vec<Vec<u64>>,
}

impl Tally {
    /// An empty tally for `checks` checks.
    pub fn new(checks: usize, max_examples: usize) -> Tally {
        Tally {
            checks: vec![CheckTally::default(); checks],
            rows: 0,
            max_examples,
            log: None,
            docs: None,
            classes: Vec::new(),
        }
    }

    /// Adds class counts, column by column.
    pub fn add_classes(&mut self, more: Vec<Vec<u64>>) {
        add_counts(&mut self.classes, more);
    }

    /// Adds `later`, which covers data after all of `self`'s in (file, row)
    /// order, so examples stay the first ones.
    pub fn merge(&mut self, later: Tally) {
        self.rows += later.rows;
        for (a, b) in self.checks.iter_mut().zip(later.checks) {
            a.violations += b.violations;
            let room = self.max_examples.saturating_sub(a.examples.len());
            a.examples.extend(b.examples.into_iter().take(room));
            a.evidence.merge(&b.evidence);
        }
        if let (Some(log), Some(later)) = (self.log.as_mut(), later.log) {
            log.extend(later);
        }
        self.add_classes(later.classes);
    }

    /// Records one violation of check `check`; `value` is only built while
    /// examples are still wanted.
    #[inline]
    pub fn hit(&mut self, check: usize, file: usize, spot: Spot, value: impl FnOnce() -> Value) {
        let c = &mut self.checks[check];
        c.violations += 1;
        let wanted = c.examples.len() < self.max_examples;
        if !wanted && self.log.is_none() {
            return;
        }
        let value = value();
        if let Some(log) = self.log.as_mut() {
            log.push(Logged {
                check,
                file,
                spot,
                value: value.clone(),
                origin: None,
            });
        }
        if wanted {
            c.examples.push(Example {
                file,
                row: spot.row,
                value,
                xy: spot.xy(),
                origin: None,
            });
        }
    }
}

/// Adds per-column class counts to `counts`, column by column and class
/// by class (saturating: counts read from a hostile partial may not wrap).
pub(crate) fn add_counts(counts: &mut Vec<Vec<u64>>, more: Vec<Vec<u64>>) {
    if more.iter().all(Vec::is_empty) {
        return;
    }
    if counts.len() < more.len() {
        counts.resize(more.len(), Vec::new());
    }
    for (mine, theirs) in counts.iter_mut().zip(more) {
        if mine.len() < theirs.len() {
            mine.resize(theirs.len(), 0);
        }
        for (a, b) in mine.iter_mut().zip(theirs) {
            *a = a.saturating_add(b);
        }
    }
}
