//! Token shards: flat streams of token ids (llm.c, modded-nanogpt, raw
//! nanoGPT `.bin`) and Megatron-LM's indexed datasets (`.bin` + `.idx`),
//! which share the `.bin` name and the stream's column and batches.

pub(crate) mod megatron;
pub(crate) mod stream;

use std::path::Path;

pub(crate) use super::dtype::Dtype;
use crate::error::ReadError;
use crate::source::format::Format;
use crate::source::read::Source;
use crate::source::storage;
pub(crate) use megatron::MegatronSource;
pub(crate) use stream::{TOKENS, TokenStreamSource, is_raw};

/// A `.bin` of token ids: a Megatron-LM dataset (an `.idx` beside it), an
/// llm.c / modded-nanogpt shard (its header) or a raw nanoGPT stream
/// (`dtype:` from the schema). Searched for only when the schema has a
/// `tokens` column, and never inside an MDS or LitData dataset (a folder
/// with an `index.json`, whose reader owns its files).
pub(crate) const FORMAT: Format = Format::new(
    "tokens",
    |n, _| n.ext == Some("bin"),
    |path, o| {
        let tokens = o.hints.column(TOKENS);
        open(path, o.hints.dtype(TOKENS), tokens.and_then(|c| c.eod_id))
    },
)
.searched_when(
    |path, columns| wants_tokens(columns) && !path.parent().is_some_and(|d| d.join("index.json").is_file()),
    wants_tokens,
)
.with_companion(
    "idx",
    "a Megatron-LM index: name the dataset by its .bin (the pair is one file in reports)",
);

fn wants_tokens(columns: &[String]) -> bool {
    columns.iter().any(|c| c == TOKENS)
}

/// Opens a `.bin` token file: a Megatron-LM dataset when an `.idx` lies
/// beside it, else an llm.c shard or a raw stream. `dtype` is the schema's
/// `dtype:` for `tokens`, if given, and `eod` its `eod_id` (a Megatron
/// dataset's documents are its index's sequences, so it takes none).
pub(crate) fn open(path: &Path, dtype: Option<&str>, eod: Option<i128>) -> Result<Box<dyn Source>, ReadError> {
    let idx = path.with_extension("idx");
    if storage::exists(&idx) {
        return Ok(Box::new(MegatronSource::open(path, &idx, dtype)?));
    }
    let source = TokenStreamSource::open(path, dtype)?;
    Ok(Box::new(match eod {
        Some(eod) => source.with_documents(eod),
        None => source,
    }))
}
