//! The sample-shard containers of streaming loaders: MosaicML Streaming
//! (MDS) and LitData, each a folder of shards an `index.json` lists, whose
//! samples hold little-endian numbers and text gathered into Arrow columns
//! the same way ([`column`]).

pub(crate) mod column;
pub(crate) mod litdata;
pub(crate) mod mds;
mod mdshash;
