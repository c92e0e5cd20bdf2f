//! Hints: the likely cause of a check's violations, when the data shows one
//! (1-indexed labels, a segmentation void label, a grown tokenizer, missing
//! truncation, ...). Shown by every report format. A bound's cause follows
//! its source: ids past a vocabulary were added tokens, token types past
//! `type_vocab_size` are segments, positions past the table want truncation,
//! labels past `num_labels` a head of another size.

use super::CheckTally;
use crate::schema::bound::{BoundKind, kind_of};
use crate::schema::{ColumnSpec, Rule, ValueRule};

/// What a mask column's images show, most specific cause first.
fn pixel_hint(spec: &ColumnSpec, t: &CheckTally) -> Option<String> {
    let e = &t.evidence;
    let p = &e.pixels;
    let masks = |n: u64| super::plural(n, "mask", "masks");
    if p.palette_luminance > 0 {
        return Some(format!(
            "{} are palette images read with decode: luminance: the values are the luminance of each palette colour (VOC's class 1 becomes 38, class 15 becomes 147), not class indices. detectron2's read_image(f, \"L\") and cv2.IMREAD_GRAYSCALE read them so; read palette masks with np.array(Image.open(f)) (decode: raw)",
            masks(p.palette_luminance)
        ));
    }
    if p.lossy > 0 {
        return Some(format!(
            "{} are JPEG/WebP: lossy compression invents values around class boundaries; export the masks as PNG",
            masks(p.lossy)
        ));
    }
    if p.wide16 > 0 {
        return Some(format!(
            "{} are 16-bit with values above 255: an 8-bit loader wraps or clamps them (mmsegmentation's .astype(np.uint8) turns 300 into 44; convert(\"L\") clamps to 255); remap the classes or check the bound",
            masks(p.wide16)
        ));
    }
    let ValueRule::Class {
        num_classes: n,
        ignore_index,
    } = &spec.values
    else {
        return None;
    };
    if *n == 19
        && let (Some(lo), Some(hi)) = (e.bad_min, e.bad_max)
        && lo >= 19
        && hi <= 33
    {
        return Some(format!(
            "values {lo}..={hi} against 19 classes: Cityscapes labelIds (0..33) instead of trainIds (0..18, 255); use the *_labelTrainIds.png masks (cityscapesscripts' createTrainIdLabelImgs)"
        ));
    }
    if p.binary_255 > 0 && *n == 2 && *ignore_index != Some(255) {
        return Some(format!(
            "{} hold only 0 and 255: a binary mask saved as 0/255; divide by 255 (mask // 255) to get classes 0 and 1",
            masks(p.binary_255)
        ));
    }
    if p.located > 0 && p.boundary * 2 >= p.located {
        return Some(format!(
            "{} of {} bad pixels sit between two different classes: masks resized with bilinear/bicubic interpolation gain in-between values; resize masks with NEAREST",
            p.boundary, p.located
        ));
    }
    None
}

/// A warning about a mask column that holds even without violations: 0/255
/// binary masks whose 255 the loss ignores.
pub fn pixel_warning(spec: &ColumnSpec, rule: Rule, e: &super::Evidence) -> Option<String> {
    let ValueRule::Class {
        num_classes: 2,
        ignore_index: Some(255),
    } = spec.values
    else {
        return None;
    };
    (rule == Rule::Class && e.pixels.binary_255 > 0).then(|| {
        format!(
            "column `{}`: {} hold only 0 and 255 with ignore_index 255: nothing crashes, but the loss silently ignores every foreground pixel; divide the masks by 255",
            spec.name,
            super::plural(e.pixels.binary_255, "mask", "masks")
        )
    })
}

/// COCO category ids: raw ids are no class indices (80 classes, ids
/// 1..90), and under a mapping a null is an id the mapping lacks.
fn coco_hint(spec: &ColumnSpec, rule: Rule) -> Option<String> {
    if spec.name != crate::schema::columns::CATEGORY_ID {
        return None;
    }
    match (rule, &spec.coco_mapping) {
        (Rule::Class, None) => Some("COCO category ids are not class indices (COCO's 80 classes have ids 1..90): torchvision's detection models take raw ids and need num_classes = the largest id + 1 (91); detectron2 and mmdetection map them to 0..N-1: set `coco_mapping: contiguous` (detectron2) or `coco_mapping: {by_name: [...]}` (mmdetection) to check them as mapped".into()),
        (Rule::Null, Some(_)) => Some("under coco_mapping a null is also an annotation whose category_id the mapping has no class for (absent from `categories`, or not in the by_name list): detectron2 raises KeyError on it, mmdetection silently drops the box".into()),
        _ => None,
    }
}

/// A likely cause of a check's violations, when the data shows one.
pub fn hint(spec: &ColumnSpec, rule: Rule, t: &CheckTally) -> Option<String> {
    if t.violations == 0 {
        return None;
    }
    let e = &t.evidence;
    if rule == spec.values.rule()
        && e.pixels.images > 0
        && let Some(h) = pixel_hint(spec, t)
    {
        return Some(h);
    }
    if let Some(h) = coco_hint(spec, rule) {
        return Some(h);
    }
    match (rule, &spec.values) {
        (Rule::Class, ValueRule::Class { num_classes: n, ignore_index }) => {
            if e.saw_255 && *n <= 255 && *ignore_index != Some(255) {
                return Some("255 is the usual void/boundary label of segmentation masks: set `ignore_index: 255` if the loss ignores it (Hugging Face segmentation heads do), or map it to a class".into());
            }
            if e.saw_minus_100 && ignore_index.is_some() {
                return Some(format!("-100 is torch's default ignore_index, but this schema ignores {} instead", ignore_index.unwrap_or_default()));
            }
            if e.saw_minus_one {
                return Some("-1 is a common missing-label sentinel (GLUE test splits ship label -1): drop those rows, or set `ignore_index: -1` if the loss ignores it".into());
            }
            // Token labels (language modelling) are ids, never 1-indexed.
            let (kind, key) = kind_of(&spec.bound_sources, "num_classes").unwrap_or((BoundKind::Other, None));
            if kind == BoundKind::Vocabulary {
                return vocabulary_hint(*n, t, "labels", key.as_deref().unwrap_or("num_classes"));
            }
            if e.bad_max == Some(*n) && e.bad_min == Some(*n) && e.min.is_some_and(|m| m >= 1) {
                return Some(format!(
                    "labels look 1-indexed (the smallest is {}, the largest equals num_classes {n}): subtract 1 from every label",
                    e.min.unwrap_or(1)
                ));
            }
            if let (Some(lo), Some(hi)) = (e.bad_min, e.bad_max)
                && lo >= *n
                && hi < 1 << 31
            {
                if kind == BoundKind::Labels {
                    return Some(format!(
                        "labels reach {hi} but the model's head has {n} classes ({}: len(id2label)): the data has more classes than the head was built for (a num_labels or id2label from another config?); load the model with num_labels={} and its id2label, or drop or remap the extra labels",
                        key.as_deref().unwrap_or("num_labels"),
                        hi + 1
                    ));
                }
                if kind != BoundKind::Other {
                    return beyond_hint(kind, key.as_deref(), *n, hi, "num_classes");
                }
                return Some(format!(
                    "labels reach {hi} but num_classes is {n}: the head has too few classes for this data (it needs num_classes >= {})",
                    hi + 1
                ));
            }
            None
        }
        (Rule::Class, ValueRule::ClassNames { classes }) => {
            // A near miss: the same name up to case and surrounding spaces.
            t.examples.iter().find_map(|e| {
                let super::Value::Str(v) = &e.value else { return None };
                let want = v.trim().to_lowercase();
                classes.iter().find(|c| c.trim().to_lowercase() == want).map(|c| {
                    format!("{v:?} differs from the class {c:?} only in case or spaces: normalise the labels")
                })
            })
        }
        (Rule::Index, ValueRule::Index { size, .. }) => {
            let (kind, key) = size_kind(spec);
            if e.saw_minus_100 {
                return Some("-100 is the ignore value of labels, not a valid id: were labels copied into an id column?".into());
            }
            if e.saw_minus_one {
                return Some(match kind {
                    BoundKind::Vocabulary => "-1 is often used as a padding id, but embedding lookups reject negative ids: pad with the tokenizer's pad_token_id".into(),
                    BoundKind::TokenTypes => "-1 is no token type: embedding lookups reject negative ids; pad token_type_ids with 0 (as tokenizers do)".into(),
                    _ => "-1 is often used as padding, but embedding lookups reject negative ids: pad with 0".into(),
                });
            }
            if e.bad_wide[1] > 0 && e.bad_max.is_some_and(|m| m >= 1 << 32) {
                return Some(format!(
                    "{} ids are >= 2^32 (up to {}): no vocabulary is that large, so these are two 32-bit ids read as one 64-bit value: int32 token data read as int64 (check the dtype the shard was written with, and the `dtype:` it is read with)",
                    e.bad_wide[1],
                    e.bad_max.unwrap_or_default()
                ));
            }
            match kind {
                // GPT-2 looks token types up in its word embedding.
                BoundKind::Vocabulary if spec.name.ends_with("token_type_ids") => {
                    let hi = e.bad_max.filter(|&h| h >= *size && h < 1 << 31)?;
                    Some(format!(
                        "token types reach {hi} but {} is {size}: the model looks token types up in its word embedding (as GPT-2 does), whose rows they pass; token types are segment ids (0, 1, ...), not token ids: were ids copied into token_type_ids?",
                        key.as_deref().unwrap_or("size")
                    ))
                }
                BoundKind::Vocabulary => vocabulary_hint(*size, t, "ids", "size"),
                _ => beyond_hint(kind, key.as_deref(), *size, e.bad_max?, "size"),
            }
        }
        (Rule::TokenizerSize, ValueRule::Index { size, .. }) => {
            let tok = spec.tokenizer_size.unwrap_or_default();
            let ids = match (e.bad_min, e.bad_max) {
                (Some(lo), Some(hi)) if lo < hi => format!("ids {lo}..={hi} are"),
                (Some(lo), _) => format!("id {lo} is"),
                _ => "ids are".to_string(),
            };
            Some(format!(
                "{ids} past the tokenizer's {tok} ids but inside the embedding's {size} rows: padding rows that were never trained (the data was tokenized with another, larger tokenizer, or tokenizer_size is out of date)"
            ))
        }
        (Rule::MaxLength, _) if spec.eod_id.is_some() => Some(format!(
            "documents longer than max_length {}: end-of-document ids missing between documents (the tokenizer job did not append them, or eod_id is not the tokenizer's)",
            spec.max_length.unwrap_or(0)
        )),
        (Rule::MaxLength, _) => {
            let n = spec.max_length.unwrap_or(0);
            Some(match kind_of(&spec.bound_sources, "max_length") {
                Some((BoundKind::Positions, Some(key))) => format!(
                    "rows longer than max_length {n} (the model's position limit, from {key}{}): truncation is missing (tokenizer(..., truncation=True, max_length={n})), and longer rows index past the position table",
                    if spec.pad_id.is_some() { "; pads do not count" } else { "" }
                ),
                _ => format!(
                    "rows longer than max_length {n}: truncation is missing (tokenizer(..., truncation=True, max_length={n}))"
                ),
            })
        }
        (Rule::NotInteger, _) if e.saw_fraction => Some(
            "fractional values where whole numbers belong: probabilities or soft labels in a class/index column, or values corrupted by a float conversion".into(),
        ),
        (Rule::NotInteger, _) => Some("non-numbers (NaN, infinities or text) where whole numbers belong: a missing value turned into NaN, or a label column holding names (use `classes:`)".into()),
        (Rule::Null, _) => Some("missing values in a column without `nullable: true`: fill or drop those rows".into()),
        (Rule::Box, _) => Some("torchvision's detection models raise \"All bounding boxes should have positive height and width\" at the step that meets such a box (NaN boxes train into NaN losses): drop or fix these boxes, or filter them in the dataset as torchvision's detection references do (remove degenerate boxes after clamping to the image)".into()),
        (Rule::PairWith, _) => Some("a mask must cover its image pixel for pixel: one of another size fails the joint crop/flip transforms or the loss's shape check (resize masks with nearest-neighbour, never bilinear); an image without a mask, or a name with several images, fails mmsegmentation's and Pytorch-UNet's loaders".into()),
        _ => None,
    }
}

/// What an `index` column's `size` counts: its source's meaning, or for a
/// literal, the column's name (`token_type_ids`, `position_ids`; other
/// index columns are token ids).
fn size_kind(spec: &ColumnSpec) -> (BoundKind, Option<String>) {
    kind_of(&spec.bound_sources, "size").unwrap_or_else(|| {
        let kind = if spec.name.ends_with("token_type_ids") {
            BoundKind::TokenTypes
        } else if spec.name.ends_with("position_ids") {
            BoundKind::Positions
        } else {
            BoundKind::Vocabulary
        };
        (kind, None)
    })
}

/// Ids past a vocabulary: added tokens (just above), a uint16 file read as
/// uint32, or another tokenizer (far above). `what` names the values,
/// `bound` the schema key.
fn vocabulary_hint(size: i128, t: &CheckTally, what: &str, bound: &str) -> Option<String> {
    let e = &t.evidence;
    // "Just above": within what added tokens plausibly are (1% of the
    // vocabulary, at least 1,024), but never past half a small one.
    if let (Some(lo), Some(hi)) = (e.bad_min, e.bad_max)
        && lo >= size
        && hi < size + (size / 100).max(1024).min((size / 2).max(1))
    {
        let (one, many) = match what {
            "labels" => ("label", "labels"),
            _ => ("id", "ids"),
        };
        let ids = if lo == hi {
            format!("{one} {lo} is")
        } else {
            format!("{many} {lo}..={hi} are")
        };
        return Some(format!(
            "{ids} just above the {bound} {size}: tokens were added to the tokenizer without resizing the embedding matrix (model.resize_token_embeddings(len(tokenizer)))"
        ));
    }
    if size <= 1 << 16 && t.violations >= 4 && e.bad_wide[0] * 2 >= t.violations {
        return Some(format!(
            "{} of the {} offending ids are >= 65536 although {bound} is {size}: pairs of uint16 ids read as one uint32 value (a uint16 file read with the wrong dtype; nanoGPT and llm.c GPT-2 shards are uint16)",
            e.bad_wide[0], t.violations
        ));
    }
    if let Some(hi) = e.bad_max
        && hi >= size
        && hi < 1 << 31
    {
        return Some(format!(
            "{what} reach {hi}, far above {bound} {size}: the data was tokenized with a different tokenizer than the model's"
        ));
    }
    None
}

/// Values past a bound that is no vocabulary: the cause its source names.
/// `key` is the config key the bound came from (`None`: a literal).
fn beyond_hint(kind: BoundKind, key: Option<&str>, size: i128, hi: i128, bound: &str) -> Option<String> {
    if hi < size || hi >= 1 << 31 {
        return None;
    }
    let key = key.unwrap_or(bound);
    Some(match kind {
        BoundKind::TokenTypes if size == 1 => format!(
            "token types reach {hi} but {key} is 1: the model has a single segment type, as RoBERTa-family checkpoints (RoBERTa, XLM-R, CamemBERT) do; pass no token_type_ids, or all zeros (a BERT-style tokenizer gives the second text of a pair type 1)"
        ),
        BoundKind::TokenTypes => format!(
            "token types reach {hi} but {key} is {size}: the model has {size} segment types (BERT: 0 for the first text of a pair, 1 for the second), and more segments than that do not fit: encode at most {size} segments a row, or give the extra ones type {}",
            size - 1
        ),
        BoundKind::Positions => format!(
            "positions reach {hi} but {key} is {size}: the model's position table has {size} rows, so these rows are longer than the model takes: truncate them (tokenizer(..., truncation=True, max_length=...)) and compute position ids from the truncated rows"
        ),
        BoundKind::Labels => format!(
            "values reach {hi} but the model's head has {size} classes ({key}: len(id2label)): the data has more classes than the head was built for"
        ),
        BoundKind::Vocabulary | BoundKind::Other => format!(
            "values reach {hi} but {key} is {size}: the model's table for this column has {size} rows (is it the right model, and is `{key}` what this column indexes?)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;

    fn index_hint(size: u32, bad: &[i128]) -> Option<String> {
        let yaml = format!("columns:\n  ids: {{kind: index, size: {size}}}\n");
        let schema = Schema::from_yaml(&yaml, "t.yaml".as_ref()).unwrap();
        let mut t = CheckTally::default();
        for &v in bad {
            t.evidence.bad_whole(v);
            t.violations += 1;
        }
        hint(&schema.columns[0], Rule::Index, &t)
    }

    /// The hint of `rule` on `column`, whose `key` bound came from
    /// `source` (as `resolve` writes it; `None`: a literal), with `bad`
    /// values.
    fn sourced_hint(
        column: &str,
        spec: &str,
        source: Option<(&str, &str)>,
        rule: Rule,
        bad: &[i128],
    ) -> Option<String> {
        let yaml = format!("columns:\n  {column}: {spec}\n");
        let mut schema = Schema::from_yaml(&yaml, "t.yaml".as_ref()).unwrap();
        if let Some((k, s)) = source {
            schema.columns[0].bound_sources.push((k.to_string(), s.to_string()));
        }
        let mut t = CheckTally::default();
        for &v in bad {
            t.evidence.bad_whole(v);
            t.violations += 1;
        }
        hint(&schema.columns[0], rule, &t)
    }

    #[test]
    fn each_bound_source_gets_the_cause_that_fits_it() {
        let index = |column: &str, size: u32, source: Option<&str>, bad: &[i128]| {
            sourced_hint(
                column,
                &format!("{{kind: index, size: {size}}}"),
                source.map(|s| ("size", s)),
                Rule::Index,
                bad,
            )
            .unwrap()
        };
        // Token types: from type_vocab_size, or a literal size on a
        // `token_type_ids` column; 1 is RoBERTa's.
        let h = index("token_type_ids", 1, Some("m/config.json: type_vocab_size"), &[1]);
        assert!(
            h.starts_with("token types reach 1 but type_vocab_size is 1: the model has a single segment type"),
            "{h}"
        );
        let h = index("token_type_ids", 2, None, &[2]);
        assert!(
            h.starts_with("token types reach 2 but size is 2: the model has 2 segment types"),
            "{h}"
        );
        let h = index("segments", 2, Some("m/config.json: type_vocab_size"), &[2]);
        assert!(h.starts_with("token types reach 2 but type_vocab_size is 2"), "{h}");
        // GPT-2's token types, bounded by vocab_size.
        let h = index("token_type_ids", 1000, Some("g/config.json: vocab_size"), &[1000]);
        assert!(
            h.starts_with(
                "token types reach 1000 but vocab_size is 1000: the model looks token types up in its word embedding"
            ),
            "{h}"
        );
        // Positions: from a position key (an offset too), or by name.
        for (source, key) in [
            (
                Some("m/config.json: max_position_embeddings"),
                "max_position_embeddings",
            ),
            (Some("m/config.json: n_positions - 2"), "n_positions"),
            (None, "size"),
        ] {
            let h = index("position_ids", 16, source, &[16, 17]);
            assert!(
                h.starts_with(&format!(
                    "positions reach 17 but {key} is 16: the model's position table has 16 rows"
                )),
                "{h}"
            );
        }
        // Labels and another key: never the added-tokens hint.
        let h = index("x", 3, Some("m/config.json: num_labels"), &[3]);
        assert!(
            h.starts_with("values reach 3 but the model's head has 3 classes (num_labels"),
            "{h}"
        );
        let h = index("x", 8, Some("m/config.json: num_experts"), &[8]);
        assert!(
            h.starts_with("values reach 8 but num_experts is 8: the model's table for this column has 8 rows"),
            "{h}"
        );
        // Vocabularies: a config key, a tokenizer file, a literal.
        for source in [
            Some("m/config.json: vocab_size"),
            Some("m/tokenizer.json"),
            Some("a: b/tokenizer.json"),
            None,
        ] {
            let h = index("input_ids", 1000, source, &[1000]);
            assert!(
                h.starts_with("id 1000 is just above the size 1000: tokens were added"),
                "{source:?}: {h}"
            );
        }
        // Negative ids: padding advice of the column's kind.
        let h = index("token_type_ids", 2, None, &[-1]);
        assert!(h.contains("pad token_type_ids with 0"), "{h}");
        let h = index("input_ids", 10, None, &[-1]);
        assert!(h.contains("pad with the tokenizer's pad_token_id"), "{h}");

        // Classes: the model's head, the vocabulary (token labels), a literal.
        let class = |source: Option<&str>, bad: &[i128]| {
            sourced_hint(
                "labels",
                "{kind: class, num_classes: 3}",
                source.map(|s| ("num_classes", s)),
                Rule::Class,
                bad,
            )
            .unwrap()
        };
        let h = class(Some("m/config.json: num_labels"), &[3]);
        assert!(
            h.starts_with("labels reach 3 but the model's head has 3 classes (num_labels: len(id2label))"),
            "{h}"
        );
        assert!(h.contains("num_labels=4"), "{h}");
        let h = class(Some("y/data.yaml: nc"), &[3]);
        assert!(
            h.starts_with("labels reach 3 but num_classes is 3: the head has too few classes"),
            "{h}"
        );
        let h = class(None, &[3]);
        assert!(
            h.starts_with("labels reach 3 but num_classes is 3: the head has too few classes"),
            "{h}"
        );
        let h = sourced_hint(
            "labels",
            "{kind: class, num_classes: 1000}",
            Some(("num_classes", "g/config.json: vocab_size")),
            Rule::Class,
            &[1000, 1001],
        )
        .unwrap();
        assert!(
            h.starts_with("labels 1000..=1001 are just above the vocab_size 1000: tokens were added"),
            "{h}"
        );

        // Lengths: a position key says so; a literal keeps the plain hint.
        let len = |source: Option<&str>, pad: &str| {
            sourced_hint(
                "input_ids",
                &format!("{{kind: index, size: 10, max_length: 16{pad}}}"),
                source.map(|s| ("max_length", s)),
                Rule::MaxLength,
                &[0],
            )
            .unwrap()
        };
        assert_eq!(
            len(Some("r/config.json: max_position_embeddings - 2"), ", pad_id: 1"),
            "rows longer than max_length 16 (the model's position limit, from max_position_embeddings; pads do not count): truncation is missing (tokenizer(..., truncation=True, max_length=16)), and longer rows index past the position table"
        );
        assert_eq!(
            len(None, ""),
            "rows longer than max_length 16: truncation is missing (tokenizer(..., truncation=True, max_length=16))"
        );
    }

    #[test]
    fn ids_just_above_or_far_above_the_size() {
        let h = index_hint(30522, &[30522, 30524]).unwrap();
        assert!(h.starts_with("ids 30522..=30524 are just above the size 30522"), "{h}");
        let h = index_hint(1000, &[1000]).unwrap();
        assert!(h.starts_with("id 1000 is just above the size 1000"), "{h}");
        // Twice a small vocabulary is another tokenizer, not added tokens.
        let h = index_hint(1000, &[2000]).unwrap();
        assert!(h.starts_with("ids reach 2000, far above size 1000"), "{h}");
    }
}
