//! `preflight init` on token shards: which `dtype:` a raw `.bin` stream
//! holds, which id ends documents (`eod_id`), and the bounds of the model.
//!
//! A raw nanoGPT `.bin` records nothing about itself, so its dtype is
//! inferred: the model's vocabulary when one is given (nanoGPT writes
//! uint16 when every id fits, uint32 past 65,535), else the bytes: uint32
//! ids below 2^17 read as uint16 pairs have a high half of 0 or 1 in every
//! second slot, which uint16 token data almost never has. The EOD id is
//! proposed when an id that ends or starts documents in a common tokenizer
//! (or the model's `eos_token_id` / `bos_token_id`) occurs regularly: at
//! least twice in the profiled tokens and at least once per 20,000 of
//! them (a document of text is rarely longer, and no ordinary token is
//! that rare and that regular at once in the sample of every file).

use std::path::Path;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Int64Type};

use crate::error::ReadError;
use crate::source::formats::tokens::{self as tokenbin, Dtype};
use crate::source::read::Source;

/// End- or start-of-document ids of common tokenizers, with their names:
/// GPT-2 / r50k `<|endoftext|>`, cl100k `<|endoftext|>`, o200k
/// `<|endoftext|>`, Llama 3 `<|begin_of_text|>` (llm.c's delimiter) and
/// `<|end_of_text|>`, Qwen2 `<|endoftext|>`.
const KNOWN_EOD: [(i128, &str); 6] = [
    (50256, "GPT-2's <|endoftext|>"),
    (100257, "cl100k's <|endoftext|>"),
    (199999, "o200k's <|endoftext|>"),
    (128000, "Llama 3's <|begin_of_text|>"),
    (128001, "Llama 3's <|end_of_text|>"),
    (151643, "Qwen2's <|endoftext|>"),
];

/// At most one EOD per this many tokens on average to be proposed.
const MAX_MEAN_DOCUMENT: u64 = 20_000;

/// What the profiled token files showed.
#[derive(Debug, Default)]
pub(super) struct TokenStats {
    /// Candidate EOD ids (with why they are candidates) and their counts.
    candidates: Vec<(i128, String, u64)>,
    /// Tokens looked at.
    seen: u64,
    /// The dtype guessed for the first raw stream, and from what.
    raw_dtype: Option<(Dtype, String)>,
    /// Raw streams whose guessed dtype differs from the first's.
    disagree: Vec<String>,
}

impl TokenStats {
    /// Candidates: the known ids, and the model's own EOS/BOS ids.
    pub(super) fn new(model: Option<&serde_json::Value>) -> TokenStats {
        let mut candidates: Vec<(i128, String, u64)> =
            KNOWN_EOD.iter().map(|&(id, why)| (id, why.to_string(), 0)).collect();
        for key in ["eos_token_id", "bos_token_id"] {
            let ids: Vec<i64> = match model.and_then(|m| m.get(key)) {
                Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_i64()).collect(),
                Some(v) => v.as_i64().into_iter().collect(),
                None => Vec::new(),
            };
            for id in ids {
                let id = i128::from(id);
                match candidates.iter_mut().find(|c| c.0 == id) {
                    Some(c) if c.1.starts_with("the model's") => {}
                    Some(c) => c.1 = format!("the model's {key}"),
                    None => candidates.push((id, format!("the model's {key}"), 0)),
                }
            }
        }
        TokenStats {
            candidates,
            ..Default::default()
        }
    }

    /// Counts the candidate ids among a batch of `tokens` (a column of ids
    /// or of lists of ids).
    pub(super) fn observe(&mut self, col: &ArrayRef) {
        let values = match col.data_type() {
            DataType::List(_) => col.as_list::<i32>().values().clone(),
            DataType::LargeList(_) => col.as_list::<i64>().values().clone(),
            DataType::FixedSizeList(..) => col.as_fixed_size_list().values().clone(),
            _ => col.clone(),
        };
        let Ok(ints) = arrow::compute::cast(&values, &DataType::Int64) else {
            return;
        };
        let ints = ints.as_primitive::<Int64Type>();
        self.seen += ints.len() as u64;
        for c in &mut self.candidates {
            if let Ok(id) = i64::try_from(c.0) {
                c.2 += ints.values().iter().filter(|&&v| v == id).count() as u64;
            }
        }
    }

    /// The schema lines for a `tokens` column beyond its bounds: the raw
    /// streams' dtype and the EOD id, each with where it came from.
    pub(super) fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some((dtype, why)) = &self.raw_dtype {
            lines.push(format!("dtype: {}  # raw .bin streams: {why}", dtype.name()));
            for d in &self.disagree {
                lines.push(format!("# {d}"));
            }
        }
        let best = self
            .candidates
            .iter()
            .filter(|c| c.2 >= 2 && c.2.saturating_mul(MAX_MEAN_DOCUMENT) >= self.seen)
            .max_by_key(|c| c.2);
        match best {
            Some((id, why, n)) => lines.push(format!(
                "eod_id: {id}  # {why}: seen {n} times in {} tokens (one document per {} tokens)",
                self.seen,
                self.seen / n
            )),
            None if self.seen > 0 => lines.push(
                "# no end-of-document id seen regularly: set eod_id to judge documents (max_length, min_length)".into(),
            ),
            None => {}
        }
        lines
    }

    /// Opens a token `.bin` for profiling: a Megatron dataset or llm.c
    /// shard as they are, a raw stream with its dtype inferred (`vocab`:
    /// the model's vocab_size, if known).
    pub(super) fn open(&mut self, path: &Path, shown: &str, vocab: Option<i128>) -> Result<Box<dyn Source>, ReadError> {
        if !tokenbin::is_raw(path) {
            return tokenbin::open(path, None, None);
        }
        let (dtype, why) = guess(path, vocab)?;
        match &self.raw_dtype {
            None => self.raw_dtype = Some((dtype, why)),
            Some((first, _)) if *first != dtype => self.disagree.push(format!(
                "{shown} looks like {} ({why}): give it a schema of its own",
                dtype.name()
            )),
            Some(_) => {}
        }
        tokenbin::open(path, Some(dtype.name()), None)
    }
}

/// The dtype of a raw stream, and why.
fn guess(path: &Path, vocab: Option<i128>) -> Result<(Dtype, String), ReadError> {
    let size = std::fs::metadata(path)?.len();
    if let Some(v) = vocab {
        let dtype = if v <= 1 << 16 { Dtype::U16 } else { Dtype::U32 };
        return Ok((
            dtype,
            format!("the model's vocab_size {v} fits {} (as nanoGPT chooses)", dtype.name()),
        ));
    }
    // The first MiB, as uint16 pairs.
    let mut head = vec![0u8; size.min(1 << 20) as usize];
    std::io::Read::read_exact(&mut std::fs::File::open(path)?, &mut head)?;
    let (pairs, _) = head.as_chunks::<4>();
    let high_small = pairs.iter().filter(|p| u16::from_le_bytes([p[2], p[3]]) <= 1).count();
    let low_varied = pairs.iter().filter(|p| u16::from_le_bytes([p[0], p[1]]) > 1).count();
    if size.is_multiple_of(4) && pairs.len() >= 16 && high_small == pairs.len() && low_varied * 2 > pairs.len() {
        Ok((
            Dtype::U32,
            "guessed from the bytes (every second uint16 is 0 or 1: uint32 ids): check it".into(),
        ))
    } else {
        Ok((
            Dtype::U16,
            "guessed (nanoGPT writes uint16; the bytes do not look like uint32): check it".into(),
        ))
    }
}
