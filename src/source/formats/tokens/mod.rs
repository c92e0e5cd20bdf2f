//! Token shards: flat streams of token ids (llm.c, modded-nanogpt, raw
//! nanoGPT `.bin`) and Megatron-LM's indexed datasets (`.bin` + `.idx`),
//! which share the `.bin` name and the stream's column and batches.

pub mod megatron;
pub mod stream;

use std::path::Path;

use crate::error::ReadError;
use crate::source::read::Source;
use crate::source::storage;
pub use megatron::MegatronSource;
pub use stream::{TOKENS, TokenDtype, TokenStreamSource, is_raw};

/// Opens a `.bin` token file: a Megatron-LM dataset when an `.idx` lies
/// beside it, else an llm.c shard or a raw stream. `dtype` is the schema's
/// `dtype:` for `tokens`, if given, and `eod` its `eod_id` (a Megatron
/// dataset's documents are its index's sequences, so it takes none).
pub fn open(path: &Path, dtype: Option<&str>, eod: Option<i128>) -> Result<Box<dyn Source>, ReadError> {
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
