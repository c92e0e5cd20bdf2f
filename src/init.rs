//! `preflight init`: propose a schema from the data and the model.
//!
//! A schema written by hand copies numbers that drift; `init` writes one that
//! a person can read and commit. Bounds come from the model's config.json as
//! references (so they follow the model), wired the way each `model_type`
//! consumes them; without a model, from what the data
//! shows, each with a comment saying what it was inferred from. A model's
//! bound is kept even where the data breaks it (that drift is what `check`
//! exists to catch); `init` then says so on stderr.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use arrow::array::downcast_integer;
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use serde_json::Value as Json;

use crate::source::{self, layouts::discover};

mod layouts;
mod masks;
mod tokens;

/// Rows profiled per file: enough to see the classes, cheap on big files.
const PROFILE_ROWS: u64 = 200_000;
/// Integer columns with at most this many distinct values look like classes.
const MAX_CLASSES: usize = 1000;

/// What the data showed of one column.
#[derive(Debug, Default, Clone)]
struct Profile {
    name: String,
    list: bool,
    integer: bool,
    float: bool,
    string: bool,
    min: Option<i128>,
    max: Option<i128>,
    max_len: u64,
    distinct: BTreeSet<i128>,
    strings: BTreeSet<String>,
    many: bool,
    /// The pad id that does not take a position (RoBERTa's), and the
    /// longest row without it.
    pad: Option<i128>,
    max_len_nonpad: u64,
}

impl Profile {
    fn int(&mut self, v: i128) {
        self.integer = true;
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
        if !self.many {
            self.distinct.insert(v);
            self.many = self.distinct.len() > MAX_CLASSES;
        }
    }
}

/// The model's config.json, as far as bounds go.
struct Model {
    dir: String,
    config: Json,
}

impl Model {
    fn get(&self, key: &str) -> Option<i128> {
        self.config.get(key).and_then(Json::as_i64).map(i128::from)
    }
    fn model_type(&self) -> &str {
        self.config.get("model_type").and_then(Json::as_str).unwrap_or("")
    }
    fn num_labels(&self) -> Option<usize> {
        self.config.get("id2label").and_then(Json::as_object).map(|m| m.len())
    }
    /// Positions come from `pad_token_id` + a count of non-pad tokens.
    fn pad_offset_positions(&self) -> bool {
        ["roberta", "xlm-roberta", "camembert"].contains(&self.model_type())
    }
    /// A token-level `labels` column indexes the head's classes (token
    /// classification) rather than the vocabulary (language modelling):
    /// as `architectures` says, else when id2label is the model's own (not
    /// the two placeholder labels every config has by default).
    fn token_labels_are_classes(&self) -> bool {
        let archs: Vec<&str> = self
            .config
            .get("architectures")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        if archs.iter().any(|a| a.ends_with("ForTokenClassification")) {
            return true;
        }
        let lm = [
            "ForCausalLM",
            "ForMaskedLM",
            "LMHeadModel",
            "ForPreTraining",
            "ForConditionalGeneration",
        ];
        if archs.iter().any(|a| lm.iter().any(|h| a.ends_with(h))) {
            return false;
        }
        let placeholder = |m: &serde_json::Map<String, Json>| {
            m.len() == 2
                && m.get("0").and_then(Json::as_str) == Some("LABEL_0")
                && m.get("1").and_then(Json::as_str) == Some("LABEL_1")
        };
        self.config
            .get("id2label")
            .and_then(Json::as_object)
            .is_some_and(|m| m.len() > 1 && !placeholder(m))
            || self.get("vocab_size").is_none()
    }
}

/// The stderr line for a column whose data breaks a model's bound: what
/// it `reaches` (its largest value or longest row) against `bound`.
fn past(column: &str, reaches: &str, bound: &str) -> String {
    format!("column `{column}` {reaches} but {bound}: `preflight check` will report them")
}

/// A proposed schema, where the data already breaks the model's bounds,
/// and the PATHs it was not made from.
#[derive(Debug, Default)]
pub(crate) struct Proposal {
    /// The schema as YAML text; its `dataset.files` lists the PATHs
    /// profiled (relative to the schema's folder), so `preflight check`
    /// with no PATH checks what `init` saw.
    pub text: String,
    /// One line per column whose data breaks a bound the model defines.
    pub warnings: Vec<String>,
    /// Each PATH not used, with why.
    pub skipped: Vec<(String, String)>,
}

/// Proposes a schema for the data at `paths` (and the model at `model`, a
/// folder with config.json); `schema_dir` is where the schema will live,
/// which model references and `dataset.files` are relative to.
pub(crate) fn propose(paths: &[PathBuf], model: Option<&Path>, schema_dir: &Path) -> Result<Proposal, String> {
    let Draft {
        text,
        used,
        skipped,
        warnings,
    } = draft(paths, model, schema_dir)?;
    let files: Vec<String> = used.iter().map(|p| yaml_str(&dataset_path(p, schema_dir))).collect();
    let line = format!(
        "  files: [{}]  # what init profiled; `preflight check` with no PATH checks these\n",
        files.join(", ")
    );
    let text = match text.find("\ndataset:\n") {
        Some(at) => {
            let at = at + "\ndataset:\n".len();
            format!("{}{line}{}", &text[..at], &text[at..])
        }
        None => match text.find("\ncolumns:\n") {
            Some(at) => format!("{}\ndataset:\n{line}{}", &text[..at], &text[at + 1..]),
            None => text,
        },
    };
    Ok(Proposal {
        text,
        warnings,
        skipped,
    })
}

/// Whether `check --model` judges a column: the inputs and labels a
/// Hugging Face model takes by these names.
fn conventional(name: &str) -> bool {
    ["input_ids", "token_type_ids", "position_ids", "attention_mask"]
        .iter()
        .any(|n| name.ends_with(n))
        || name == "labels"
        || name == "label"
}

/// The schema `check --model` uses: what `init --model` proposes for the
/// data at `paths`, kept to the conventional columns. References are
/// resolved against the current folder, as the model folder was named;
/// the schema is named `--model DIR` in messages.
pub(crate) fn model_schema(paths: &[PathBuf], model: &Path) -> Result<crate::Schema, String> {
    let proposal = propose(paths, Some(model), Path::new(""))?;
    let mut schema =
        crate::Schema::from_yaml(&proposal.text, Path::new("preflight.yaml")).map_err(|e| e.to_string())?;
    let kept: Vec<usize> = (0..schema.columns.len())
        .filter(|&i| conventional(&schema.columns[i].name))
        .collect();
    if kept.is_empty() {
        return Err(format!(
            "--model {}: the data has none of the columns a model takes by name (input_ids, token_type_ids, \
             position_ids, attention_mask, labels, label): write a schema (preflight init --model)",
            model.display()
        ));
    }
    let dropped: Vec<String> = (0..schema.columns.len())
        .filter(|i| !kept.contains(i))
        .map(|i| format!("columns.{}.", schema.columns[i].name))
        .collect();
    let mut columns: Vec<crate::schema::ColumnSpec> = kept.iter().map(|&i| schema.columns[i].clone()).collect();
    for c in &mut columns {
        c.same_length_as = c.same_length_as.and_then(|o| kept.iter().position(|&k| k == o));
    }
    schema.columns = columns;
    schema
        .warnings
        .retain(|w| !dropped.iter().any(|d| w.starts_with(d.as_str())));
    schema.files.clear();
    schema.path = PathBuf::from(format!("--model {}", model.display()));
    Ok(schema)
}

/// A PATH as `dataset.files` lists it: relative to the schema's folder
/// (`../data` included) when the two share a folder below the root, else
/// absolute; a URL as typed.
fn dataset_path(path: &Path, schema_dir: &Path) -> String {
    use std::path::Component;
    if source::storage::remote::is_url(path) {
        return path.to_string_lossy().into_owned();
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let full = path.canonicalize().unwrap_or_else(|_| cwd.join(path));
    let base = if schema_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        schema_dir
    };
    let base = base.canonicalize().unwrap_or_else(|_| cwd.join(base));
    let (a, b): (Vec<Component>, Vec<Component>) = (full.components().collect(), base.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common < 2 {
        return full.to_string_lossy().into_owned();
    }
    let mut rel = PathBuf::new();
    for _ in common..b.len() {
        rel.push("..");
    }
    for c in &a[common..] {
        rel.push(c);
    }
    if rel.as_os_str().is_empty() {
        ".".into()
    } else {
        rel.to_string_lossy().into_owned()
    }
}

/// Whether `file` is `arg` or lies below it (a glob: matches it).
fn comes_from(file: &Path, arg: &Path) -> bool {
    if file == arg || file.starts_with(arg) {
        return true;
    }
    let text = arg.to_string_lossy();
    text.contains(['*', '?', '['])
        && glob::Pattern::new(&text).is_ok_and(|p| {
            file.ancestors()
                .any(|a| p.matches_path_with(a, glob::MatchOptions::new()))
        })
}

/// PATHs not in `used`, each with `why`.
fn not_used(paths: &[PathBuf], used: &[PathBuf], why: impl Fn(&Path) -> String) -> Vec<(String, String)> {
    paths
        .iter()
        .filter(|p| !used.iter().any(|u| comes_from(u, p)))
        .map(|p| (p.to_string_lossy().into_owned(), why(p)))
        .collect()
}

/// A proposal before `dataset.files` is written into it.
struct Draft {
    text: String,
    /// The paths `dataset.files` lists.
    used: Vec<PathBuf>,
    skipped: Vec<(String, String)>,
    warnings: Vec<String>,
}

/// The proposal's text, what it was made from, what it skipped, and where
/// the data breaks the model's bounds.
fn draft(paths: &[PathBuf], model: Option<&Path>, schema_dir: &Path) -> Result<Draft, String> {
    let model = match model {
        None => None,
        Some(dir) => {
            let file = if dir.is_dir() {
                dir.join("config.json")
            } else {
                dir.to_path_buf()
            };
            let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
            let config = serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", file.display()))?;
            Some(Model {
                dir: relative_to(dir, schema_dir),
                config,
            })
        }
    };
    // Image folders, YOLO label trees and COCO files have their own proposal.
    if let Some(layout) = layouts::propose(paths, schema_dir) {
        let (text, used) = layout?;
        let skipped = not_used(paths, &used, |_| {
            "no COCO annotation file here, and a schema proposed from COCO files checks those; \
             run init on it alone for a schema of its own"
                .into()
        });
        return Ok(Draft {
            text,
            used,
            skipped,
            warnings: Vec::new(),
        });
    }
    // Token `.bin` files are searched for too (as for a `tokens` column),
    // and images, which count only in a folder of masks (not beside
    // tables, where one is a README picture).
    let hints = source::Hints {
        columns: vec![
            source::formats::tokens::TOKENS.to_string(),
            source::formats::image::PIXELS.to_string(),
        ],
        ..Default::default()
    };
    // WebDataset and TFRecord shards are searched for a schema's member or
    // feature names; without a schema yet, every shard is (a folder of
    // shards alone is then no "folder without data files").
    let is_shard =
        |f: &discover::DataFile| source::Format::from_path(&f.path).is_some_and(source::Format::is_shard_set);
    let found = |paths: &[PathBuf]| {
        let discover::Discovered { mut files, errors, .. } = discover::discover(paths, &hints);
        let plain = discover::discover(paths, &source::Hints::default()).files;
        files.extend(plain.into_iter().filter(is_shard));
        files.sort_by(|a, b| a.display.cmp(&b.display));
        files.dedup_by(|a, b| a.display == b.display);
        (files, errors)
    };
    let (mut files, errors) = found(paths);
    if let Some(e) = errors.first()
        && !files.iter().any(is_shard)
    {
        return Err(e.to_string());
    }
    let is_image = |f: &discover::DataFile| source::Format::from_path(&f.path) == Some(source::formats::image::FORMAT);
    let beside_tables = files.iter().any(|f| !is_image(f));
    if beside_tables {
        files.retain(|f| !is_image(f));
    }
    // What each PATH found, to name those that gave nothing profiled.
    let used: Vec<PathBuf> = paths
        .iter()
        .filter(|p| {
            let (own, _) = found(std::slice::from_ref(*p));
            own.iter().any(|f| files.iter().any(|g| g.display == f.display))
        })
        .cloned()
        .collect();
    let skipped = not_used(paths, &used, |p| {
        let (own, errors) = found(&[p.to_path_buf()]);
        if let Some(e) = errors.first().filter(|_| own.is_empty()) {
            e.message()
        } else if beside_tables && !own.is_empty() && own.iter().all(is_image) {
            format!(
                "{} image(s) not profiled: beside tables an image is taken for a picture, not a mask; \
                 run `preflight init {}` on its own for a schema of the masks",
                own.len(),
                p.display()
            )
        } else {
            "nothing here was profiled".into()
        }
    });
    let mut masks = masks::MaskProfile::default();
    if files.is_empty() {
        return Err("no data files found".into());
    }
    let mut profiles: Vec<Profile> = Vec::new();
    let mut token_stats = tokens::TokenStats::new(model.as_ref().map(|m| &m.config));
    let vocab = model.as_ref().and_then(|m| m.get("vocab_size"));
    for f in &files {
        let src = if source::Format::from_path(&f.path) == Some(source::formats::tokens::FORMAT) {
            token_stats.open(&f.path, &f.display, vocab)
        } else if let Some(opens) = &f.opens {
            // A table's data file, with its table's columns and rows.
            opens.0.open(&source::Hints::default())
        } else {
            source::open(&f.path)
        }
        .map_err(|e| format!("{}: {e}", f.display))?;
        let names: Vec<String> = src.columns().to_vec();
        let projection: Vec<usize> = (0..names.len()).collect();
        let mut seen = 0u64;
        for unit in 0..src.units() {
            if seen >= PROFILE_ROWS {
                break;
            }
            src.read(unit, &projection, &mut |b| {
                masks.add(&b.batch);
                for (i, col) in b.batch.columns().iter().enumerate() {
                    if b.batch
                        .schema_ref()
                        .field(i)
                        .metadata()
                        .contains_key(source::formats::image::IMAGE_FIELD)
                    {
                        continue; // profiled as a mask
                    }
                    let name = &names[projection[i]];
                    let p = match profiles.iter_mut().position(|p| &p.name == name) {
                        Some(k) => &mut profiles[k],
                        None => {
                            profiles.push(Profile {
                                name: name.clone(),
                                pad: model
                                    .as_ref()
                                    .filter(|m| m.pad_offset_positions() && name.ends_with("input_ids"))
                                    .map(|m| m.get("pad_token_id").unwrap_or(1)),
                                ..Default::default()
                            });
                            profiles.last_mut().expect("just pushed")
                        }
                    };
                    profile(p, col);
                    if name == source::formats::tokens::TOKENS {
                        token_stats.observe(col);
                    }
                }
                seen += b.batch.num_rows() as u64;
                Ok(())
            })
            .map_err(|e| format!("{}: {e}", f.display))?;
        }
    }
    // The tokenizer's size as a second bound, when the model folder has
    // one that fits its embedding (checked as `check` will read it).
    let mut token_lines = Vec::new();
    let mut tokenizer_size = None;
    if let Some(m) = &model {
        let tok = format!("{{tokenizer: {}}}", yaml_str(&format!("{}/tokenizer.json", m.dir)));
        let probe = format!(
            "version: 1\ncolumns:\n  tokens: {{kind: index, size: {{hf_config: {}, key: vocab_size}}, tokenizer_size: {tok}}}\n",
            yaml_str(&m.dir)
        );
        if let Ok(s) = crate::Schema::from_yaml(&probe, &schema_dir.join("preflight.yaml")) {
            tokenizer_size = s.columns.first().and_then(|c| c.tokenizer_size);
            token_lines.push(format!(
                "tokenizer_size: {tok}  # ids the tokenizer emits: ids past them have untrained rows"
            ));
        }
    }
    token_lines.extend(token_stats.lines());
    let mut warnings = Vec::new();
    let mut out = render(
        &profiles,
        model.as_ref(),
        &files.iter().map(|f| f.display.clone()).collect::<Vec<_>>(),
        (&token_lines, tokenizer_size),
        &mut warnings,
    );
    if !masks.is_empty() {
        let n = model.as_ref().and_then(|m| m.num_labels()).filter(|&n| n > 1);
        let head = model
            .as_ref()
            .filter(|_| n.is_some())
            .map(|m| format!("{{hf_config: {}, key: num_labels}}", yaml_str(&m.dir)));
        if let (Some(n), Some(hi)) = (n, masks.largest_class())
            && hi >= n as i64
        {
            warnings.push(past(
                source::formats::image::PIXELS,
                &format!("reaches class {hi}"),
                &format!("the model's head has {n} classes (num_labels)"),
            ));
        }
        out.push_str("  pixels:\n");
        for l in masks.render(head, masks::sibling_images(paths)) {
            let _ = writeln!(out, "    {l}");
        }
    }
    Ok(Draft {
        text: out,
        used,
        skipped,
        warnings,
    })
}

fn profile(p: &mut Profile, col: &ArrayRef) {
    match col.data_type() {
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
            p.list = true;
            let (lens, child, first): (Vec<u64>, ArrayRef, usize) = match col.data_type() {
                DataType::List(_) => {
                    let l = col.as_list::<i32>();
                    (
                        l.offsets().windows(2).map(|w| (w[1] - w[0]) as u64).collect(),
                        l.values().clone(),
                        l.offsets()[0] as usize,
                    )
                }
                DataType::LargeList(_) => {
                    let l = col.as_list::<i64>();
                    (
                        l.offsets().windows(2).map(|w| (w[1] - w[0]) as u64).collect(),
                        l.values().clone(),
                        l.offsets()[0] as usize,
                    )
                }
                _ => {
                    let l = col.as_fixed_size_list();
                    (vec![l.value_length() as u64; l.len()], l.values().clone(), 0)
                }
            };
            p.max_len = p.max_len.max(lens.iter().copied().max().unwrap_or(0));
            if let Some(pad) = p.pad {
                p.max_len_nonpad = p.max_len_nonpad.max(longest_without(&lens, &child, first, pad));
            }
            scalars(p, &child);
        }
        _ => scalars(p, col),
    }
}

/// The most elements of a row (rows `lens` long, laid out in `child`) that
/// are not `pad`.
fn longest_without(lens: &[u64], child: &ArrayRef, first: usize, pad: i128) -> u64 {
    let Ok(values) = arrow::compute::cast(child, &DataType::Int64) else {
        return lens.iter().copied().max().unwrap_or(0);
    };
    let values = values.as_primitive::<arrow::datatypes::Int64Type>();
    let mut start = first;
    let mut longest = 0u64;
    for &len in lens {
        let end = (start + len as usize).min(values.len());
        let n = (start..end)
            .filter(|&i| values.is_null(i) || i128::from(values.value(i)) != pad)
            .count() as u64;
        longest = longest.max(n);
        start = end;
    }
    longest
}

fn scalars(p: &mut Profile, a: &ArrayRef) {
    use arrow::datatypes::*;
    macro_rules! ints {
        ($t:ty) => {
            for v in a.as_primitive::<$t>().iter().flatten() {
                p.int(i128::from(v));
            }
        };
    }
    downcast_integer! {
        a.data_type() => (ints),
        DataType::Float16 | DataType::Float32 | DataType::Float64 => p.float = true,
        DataType::Utf8 | DataType::LargeUtf8 => {
            p.string = true;
            let strings: Vec<String> = match a.data_type() {
                DataType::Utf8 => a.as_string::<i32>().iter().flatten().map(str::to_string).collect(),
                _ => a.as_string::<i64>().iter().flatten().map(str::to_string).collect(),
            };
            for s in strings {
                if p.strings.len() <= 100 {
                    p.strings.insert(s);
                }
            }
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => scalars_nested(p, a),
        _ => {}
    }
}

fn scalars_nested(p: &mut Profile, a: &ArrayRef) {
    let child = match a.data_type() {
        DataType::List(_) => a.as_list::<i32>().values().clone(),
        DataType::LargeList(_) => a.as_list::<i64>().values().clone(),
        _ => a.as_fixed_size_list().values().clone(),
    };
    scalars(p, &child);
}

const ROPE: &[&str] = &[
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "gpt_neox", "gemma", "gemma2", "phi3", "t5", "mt5",
];
const SEGMENTATION: &[&str] = &[
    "segformer",
    "beit",
    "data2vec-vision",
    "dpt",
    "mobilevit",
    "mobilevitv2",
    "mobilenet_v2",
    "upernet",
];

fn render(
    profiles: &[Profile],
    model: Option<&Model>,
    files: &[String],
    (token_lines, tokenizer_size): (&[String], Option<i128>),
    warnings: &mut Vec<String>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Written by `preflight init` from {} file(s){}.",
        files.len(),
        model
            .map(|m| format!(" and the model in {}", m.dir))
            .unwrap_or_default()
    );
    out.push_str("# Every bound says where it came from: check them before you rely on them.\nversion: 1\ncolumns:\n");
    let ids = profiles
        .iter()
        .find(|p| p.name == "input_ids" && p.list)
        .map(|p| p.name.clone());
    let cfg = |key: &str, m: &Model| format!("{{hf_config: {}, key: {key}}}", yaml_str(&m.dir));
    // The embedding bound of token ids, and the line saying where ids break it.
    let vocab_size = |p: &Profile, m: &Model, warnings: &mut Vec<String>| {
        let v = m.get("vocab_size")?;
        if let Some(hi) = p.max.filter(|&hi| hi >= v) {
            warnings.push(past(
                &p.name,
                &format!("reaches {hi}"),
                &format!("the model's embedding has {v} rows (vocab_size)"),
            ));
        }
        Some(format!(
            "size: {}  # the embedding rows: vocab_size of the model",
            cfg("vocab_size", m)
        ))
    };
    for p in profiles {
        let name = yaml_str(&p.name);
        let mut lines: Vec<String> = Vec::new();
        let is_positions = p.list && p.integer && p.name.ends_with("position_ids");
        let is_ids = p.list && p.integer && p.name.ends_with("input_ids");
        let is_types = p.name == "token_type_ids" && p.integer;
        let is_mask = p.name == "attention_mask" && p.integer;
        if p.name == source::formats::tokens::TOKENS && p.integer {
            // Token shards: the embedding bound, the tokenizer's, the stored
            // type and the documents (no length rule: loaders cut windows).
            lines.push("kind: index".into());
            match model.and_then(|m| vocab_size(p, m, warnings)) {
                Some(l) => lines.push(l),
                None => lines.push(format!(
                    "size: {}  # observed largest id + 1: replace with the model's vocab_size (or use --model)",
                    p.max.unwrap_or(0) + 1
                )),
            }
            if let (Some(t), Some(hi)) = (tokenizer_size, p.max)
                && hi >= t
                && model.and_then(|m| m.get("vocab_size")).is_some_and(|v| hi < v)
            {
                warnings.push(past(
                    &p.name,
                    &format!("reaches {hi}"),
                    &format!(
                        "the model's tokenizer emits {t} ids (tokenizer.json): the rows past them were never trained"
                    ),
                ));
            }
            lines.extend(token_lines.iter().cloned());
        } else if is_ids {
            lines.push("kind: index".into());
            match model.and_then(|m| vocab_size(p, m, warnings)) {
                Some(l) => lines.push(l),
                None => lines.push(format!(
                    "size: {}  # observed largest id + 1: replace with the model's vocab_size",
                    p.max.unwrap_or(0) + 1
                )),
            }
            lines.extend(length_rule(p, model, warnings));
        } else if is_positions {
            // Explicit position ids index the position table itself (no
            // pad offset); RoPE/relative models have none to index.
            match model.and_then(|m| position_table(m).map(|t| (m, t))) {
                Some((m, None)) => {
                    let _ = writeln!(
                        out,
                        "  # {name}: not checked ({} computes positions: RoPE/relative, no table to index)",
                        m.model_type()
                    );
                    continue;
                }
                Some((m, Some(key))) => {
                    let n = m.get(key).unwrap_or_default();
                    lines.push(format!(
                        "kind: index\nsize: {}  # the rows of the model's position table",
                        cfg(key, m)
                    ));
                    if let Some(hi) = p.max.filter(|&hi| hi >= n) {
                        warnings.push(past(
                            &p.name,
                            &format!("reaches {hi}"),
                            &format!("the model's position table has {n} rows ({key})"),
                        ));
                    }
                }
                None => lines.push(format!(
                    "kind: index\nsize: {}  # observed largest position + 1: replace with the model's max_position_embeddings",
                    p.max.unwrap_or(0) + 1
                )),
            }
            if let Some(i) = &ids {
                lines.push(format!("same_length_as: {}", yaml_str(i)));
            }
        } else if is_types {
            let bound = match model {
                Some(m) if m.model_type() == "gpt2" => m.get("vocab_size").map(|v| {
                    (
                        format!(
                            "size: {}  # GPT-2 looks token types up in its word embedding",
                            cfg("vocab_size", m)
                        ),
                        v,
                        format!(
                            "the model's word embedding, which GPT-2 looks token types up in, has {v} rows (vocab_size)"
                        ),
                    )
                }),
                Some(m) if m.get("type_vocab_size") == Some(0) => {
                    let _ = writeln!(
                        out,
                        "  # {name}: not checked (type_vocab_size 0: the model ignores token types)"
                    );
                    continue;
                }
                Some(m) => m.get("type_vocab_size").filter(|&t| t > 0).map(|t| {
                    (
                        format!("size: {}", cfg("type_vocab_size", m)),
                        t,
                        format!(
                            "the model has {t} token type{} (type_vocab_size)",
                            if t == 1 { "" } else { "s" }
                        ),
                    )
                }),
                None => None,
            };
            lines.push("kind: index".into());
            match bound {
                Some((line, n, what)) => {
                    lines.push(line);
                    if let Some(hi) = p.max.filter(|&hi| hi >= n) {
                        warnings.push(past(&p.name, &format!("reaches {hi}"), &what));
                    }
                }
                None => lines.push(format!("size: {}  # observed largest type + 1", p.max.unwrap_or(0) + 1)),
            }
            if let Some(i) = &ids {
                lines.push(format!("same_length_as: {}", yaml_str(i)));
            }
        } else if is_mask {
            lines.push("kind: values\nallowed: [0, 1]".into());
            if let Some(i) = &ids
                && p.list
            {
                lines.push(format!("same_length_as: {}", yaml_str(i)));
            }
        } else if p.integer && !p.many {
            lines.push("kind: class".into());
            let seg = model.is_some_and(|m| SEGMENTATION.contains(&m.model_type()));
            let is_label = p.name == "label" || p.name == "labels";
            // The values the loss ignores do not count against a bound.
            let ignored = if seg { 255 } else { -100 };
            let largest = p.distinct.iter().rev().copied().find(|&v| v != ignored);
            let head = model.and_then(|m| m.num_labels().filter(|&n| n > 1).map(|n| (m, n as i128)));
            let vocab = model.and_then(|m| m.get("vocab_size").map(|v| (m, v)));
            match (head, vocab) {
                (Some((m, n)), _) if is_label && (!p.list || m.token_labels_are_classes()) => {
                    lines.push(format!(
                        "num_classes: {}  # len(id2label) of the model's head",
                        cfg("num_labels", m)
                    ));
                    if let Some(hi) = largest.filter(|&hi| hi >= n) {
                        warnings.push(past(
                            &p.name,
                            &format!("reaches {hi}"),
                            &format!("the model's head has {n} classes (num_labels)"),
                        ));
                    }
                }
                (_, Some((m, v))) if is_label && p.list => {
                    lines.push(format!(
                        "num_classes: {}  # token labels index the vocabulary",
                        cfg("vocab_size", m)
                    ));
                    if let Some(hi) = largest.filter(|&hi| hi >= v) {
                        warnings.push(past(
                            &p.name,
                            &format!("reaches {hi}"),
                            &format!("the model's vocabulary has {v} ids (vocab_size)"),
                        ));
                    }
                }
                _ => {
                    let lo = p.min.unwrap_or(0);
                    let note = if lo >= 1 {
                        " (no 0 seen: are the labels 1-indexed?)"
                    } else {
                        ""
                    };
                    lines.push(format!(
                        "num_classes: {}  # observed values {}..={}{note}: set the model's class count",
                        p.max.unwrap_or(0).max(0) + 1,
                        lo,
                        p.max.unwrap_or(0)
                    ));
                }
            }
            if seg {
                lines.push("ignore_index: 255  # semantic_loss_ignore_index of Hugging Face segmentation heads".into());
            } else if p.distinct.contains(&-100) {
                lines.push("ignore_index: -100  # seen in the data; torch's default".into());
            }
            if p.list && p.name == "labels" && ids.is_some() && !seg {
                lines.push(format!("same_length_as: {}", yaml_str(ids.as_deref().unwrap_or(""))));
            }
        } else if p.string && !p.list && p.strings.len() <= 100 && !p.strings.is_empty() {
            let names: Vec<String> = p.strings.iter().map(|s| yaml_str(s)).collect();
            lines.push(format!(
                "kind: class\nclasses: [{}]  # every value seen",
                names.join(", ")
            ));
        } else {
            let why = if p.float {
                "floats"
            } else if p.many {
                "more distinct integers than classes"
            } else {
                "no rule fits"
            };
            let _ = writeln!(out, "  # {name}: not checked ({why})");
            continue;
        }
        let _ = writeln!(out, "  {name}:");
        for l in lines.iter().flat_map(|l| l.lines()) {
            let _ = writeln!(out, "    {l}");
        }
    }
    out
}

/// Whether the model computes positions (RoPE or relative attention: no
/// table, so no length crashes it).
fn computes_positions(m: &Model) -> bool {
    let t = m.model_type();
    ROPE.contains(&t) || (t == "deberta-v2" && m.config.get("position_biased_input") != Some(&Json::Bool(true)))
}

/// The config key of the model's position table: `Some(None)` when it
/// computes positions, `None` when its config names no table.
fn position_table(m: &Model) -> Option<Option<&'static str>> {
    if computes_positions(m) {
        return Some(None);
    }
    let key = if m.model_type() == "gpt2" {
        "n_positions"
    } else {
        "max_position_embeddings"
    };
    m.get(key).map(|_| Some(key))
}

/// The sequence-length rule of the model's position table (part B), and
/// the line saying where rows are longer.
fn length_rule(p: &Profile, model: Option<&Model>, warnings: &mut Vec<String>) -> Vec<String> {
    let cfg = |key: &str, m: &Model, extra: &str| format!("{{hf_config: {}, key: {key}{extra}}}", yaml_str(&m.dir));
    let Some(m) = model else {
        return vec![format!(
            "# observed longest row: {} (set max_length to the model's position limit)",
            p.max_len
        )];
    };
    let t = m.model_type();
    if computes_positions(m) {
        return vec![format!(
            "# no max_length: {t} computes positions (RoPE/relative), longer rows do not crash"
        )];
    }
    let mut longer = |n: i128, longest: u64, what: &str, limit: &str| {
        if i128::from(longest) > n {
            warnings.push(past(
                &p.name,
                &format!("has rows of {longest} {what}"),
                &format!("the model takes {n} ({limit})"),
            ));
        }
    };
    match (t, position_table(m)) {
        ("roberta" | "xlm-roberta" | "camembert", Some(Some(key))) => {
            let pad = m.get("pad_token_id").unwrap_or(1);
            longer(
                m.get(key).unwrap_or_default() - pad - 1,
                p.max_len_nonpad,
                "non-pad tokens",
                "max_position_embeddings - pad_token_id - 1",
            );
            vec![
                format!(
                    "max_length: {}  # non-pad tokens <= max_position_embeddings - pad_token_id - 1",
                    cfg(key, m, &format!(", offset: {}", -(pad + 1)))
                ),
                format!("pad_id: {pad}  # pad_token_id: pads do not take positions"),
            ]
        }
        (_, Some(Some(key))) => {
            longer(m.get(key).unwrap_or_default(), p.max_len, "tokens", key);
            let why = if t == "gpt2" {
                "left pads count too"
            } else {
                "pads and special tokens count"
            };
            vec![format!("max_length: {}  # {why}", cfg(key, m, ""))]
        }
        _ => vec![format!(
            "# observed longest row: {}; the model's config has no position limit",
            p.max_len
        )],
    }
}

fn yaml_str(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
        && !s
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.')
        && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"].contains(&s.to_ascii_lowercase().as_str());
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

/// `target` as a path relative to `base` when it lies below it, else absolute.
fn relative_to(target: &Path, base: &Path) -> String {
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    match (target.canonicalize(), base.canonicalize()) {
        (Ok(t), Ok(b)) => match t.strip_prefix(&b) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
            Ok(rest) => rest.display().to_string(),
            Err(_) => t.display().to_string(),
        },
        _ => target.display().to_string(),
    }
}
