//! The pages of one column chunk, walked for their levels only.
//!
//! A length rule on a list column whose values the row group's statistics
//! already prove needs each row's length and nothing else, and in Parquet the
//! lengths live in the repetition and definition levels at the front of each
//! data page. The parquet crate's page reader decompresses whole pages (and
//! keeps its page-header decoder private), so this module reads the page
//! headers itself (Thrift compact protocol) and decompresses a data page
//! only as far as its levels reach: with zstd or gzip that is the first
//! block of the page, not the values behind it.
//!
//! Everything read here comes from the file and is checked before use: page
//! sizes against the column chunk, level lengths against the page, header
//! nesting against a depth limit.

use crate::source::storage::Blob;
use std::io::{self, BufReader, Read};

use parquet::basic::Compression;

use super::thrift::{Bad, Compact, I32, STRUCT};
use crate::error::ReadError;

/// Parquet's encodings of dictionary indices.
const PLAIN_DICTIONARY: i32 = 2;
const RLE_DICTIONARY: i32 = 8;

/// A dictionary page larger than this is not read for a proof (the chunk is
/// decoded instead); writers cap theirs at about 1 MiB.
const MAX_DICTIONARY: usize = 16 << 20;

/// Parquet's level encodings.
const RLE: i32 = 3;
const BIT_PACKED: i32 = 4;

/// Page headers longer than this are corrupt (they hold a few integers and,
/// at most, statistics).
const MAX_HEADER: usize = 16 << 20;

/// The codecs whose pages this module can open.
pub(super) fn supported(codec: Compression) -> bool {
    matches!(
        codec,
        Compression::UNCOMPRESSED
            | Compression::SNAPPY
            | Compression::GZIP(_)
            | Compression::ZSTD(_)
            | Compression::LZ4_RAW
    )
}

/// How a page's level run of one kind is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LevelEncoding {
    /// The RLE / bit-packing hybrid.
    Rle,
    /// The deprecated bit-packed encoding (one bit stream for the page).
    BitPacked,
}

/// The levels of one data page, as stored.
#[derive(Debug)]
pub(super) struct PageLevels<'a> {
    /// Levels (slots) in the page.
    pub values: usize,
    pub rep: &'a [u8],
    pub rep_encoding: LevelEncoding,
    pub def: &'a [u8],
    pub def_encoding: LevelEncoding,
}

/// Walks the data pages of one column chunk.
pub(super) struct PageWalker<'f> {
    file: &'f Blob,
    pos: u64,
    end: u64,
    codec: Compression,
    max_rep: i16,
    max_def: i16,
    header: Vec<u8>,
    compressed: Vec<u8>,
    /// A whole decompressed page (block codecs).
    whole: Vec<u8>,
    /// The decompressed levels of the current page.
    plain: Vec<u8>,
    /// Created on the first zstd page, then reused.
    zstd: Option<zstd::zstd_safe::DCtx<'static>>,
    /// The writer compressed v2 data pages whatever their headers say.
    v2_always_compressed: bool,
}

/// Where the parts of a whole data page lie in the buffer it was
/// decompressed into (see [`PageWalker::next_whole_page`]).
#[derive(Debug, Clone)]
pub(super) struct WholePage {
    /// Level slots in the page.
    pub values: usize,
    /// The values' encoding (Parquet's code).
    pub encoding: i32,
    pub rep: std::ops::Range<usize>,
    pub rep_encoding: LevelEncoding,
    pub def: std::ops::Range<usize>,
    pub def_encoding: LevelEncoding,
    /// The encoded values behind the levels.
    pub body: std::ops::Range<usize>,
}

/// A page as [`PageWalker::next_whole_page`] hands it out.
#[derive(Debug, Clone)]
pub(super) enum Whole {
    /// A dictionary page of this many entries: the whole buffer.
    Dictionary(usize),
    Data(WholePage),
}

impl<'f> PageWalker<'f> {
    /// Pages of the chunk at `start..start + len` of `file`.
    pub(super) fn new(
        file: &'f Blob,
        start: u64,
        len: u64,
        codec: Compression,
        max_rep: i16,
        max_def: i16,
    ) -> Result<Self, ReadError> {
        let size = file.size()?;
        let end = start.checked_add(len).filter(|&e| e <= size).ok_or_else(|| {
            ReadError::new(format!(
                "the column chunk at {start}+{len} lies past the end of the file"
            ))
        })?;
        Ok(PageWalker {
            file,
            pos: start,
            end,
            codec,
            max_rep,
            max_def,
            header: Vec::new(),
            compressed: Vec::new(),
            whole: Vec::new(),
            plain: Vec::new(),
            zstd: None,
            v2_always_compressed: false,
        })
    }

    /// Ends the walk at file offset `end` (before the chunk's end): a walk
    /// over the dictionary page alone.
    pub(super) fn end_at(&mut self, end: u64) {
        self.end = self.end.min(end);
    }

    /// Treat v2 data pages as compressed whatever their headers say (see
    /// `patched`).
    pub(super) fn v2_always_compressed(mut self, yes: bool) -> Self {
        self.v2_always_compressed = yes;
        self
    }

    /// The value encodings of the chunk's data pages (Parquet's codes,
    /// sorted, without repeats), from the page headers alone.
    pub(super) fn data_encodings(&mut self) -> Result<Vec<i32>, ReadError> {
        let mut found = Vec::new();
        while let Some((header, _, _)) = self.next_header()? {
            if let Kind::DataV1 { encoding, .. } | Kind::DataV2 { encoding, .. } = header.kind
                && !found.contains(&encoding)
            {
                found.push(encoding);
            }
        }
        found.sort_unstable();
        Ok(found)
    }

    /// The next dictionary or data page, decompressed whole into `out`
    /// (cleared first, its capacity reused); `None` at the end of the chunk.
    /// Memory follows the bytes a page really decompresses to, never a size
    /// its header claims beyond what the codec can reach.
    pub(super) fn next_whole_page(&mut self, out: &mut Vec<u8>) -> Result<Option<Whole>, ReadError> {
        out.clear();
        loop {
            let Some((header, at, body)) = self.next_header()? else {
                return Ok(None);
            };
            let compressed = header.compressed as usize;
            let uncompressed = header.uncompressed as usize;
            let with_at = |e: ReadError| ReadError::new(format!("page at byte {at}: {}", e.message));
            match header.kind {
                Kind::Dictionary { values } => {
                    let entries = count(values, at)?;
                    self.compressed.resize(compressed, 0);
                    self.file.read_exact_at(&mut self.compressed, body)?;
                    decompress_append(self.codec, &self.compressed, uncompressed, out, &mut self.zstd)
                        .map_err(with_at)?;
                    return Ok(Some(Whole::Dictionary(entries)));
                }
                Kind::DataV1 {
                    values,
                    encoding,
                    rep_encoding,
                    def_encoding,
                } => {
                    let values = count(values, at)?;
                    let rep_encoding = level_encoding(rep_encoding, at)?;
                    let def_encoding = level_encoding(def_encoding, at)?;
                    self.compressed.resize(compressed, 0);
                    self.file.read_exact_at(&mut self.compressed, body)?;
                    decompress_append(self.codec, &self.compressed, uncompressed, out, &mut self.zstd)
                        .map_err(with_at)?;
                    let mut pos = 0;
                    let mut section =
                        |max: i16, encoding: LevelEncoding| -> Result<std::ops::Range<usize>, ReadError> {
                            if max == 0 {
                                return Ok(pos..pos);
                            }
                            let (start, len) = match encoding {
                                LevelEncoding::Rle => {
                                    let prefix = out
                                        .get(pos..pos + 4)
                                        .ok_or_else(|| ReadError::new("the page ends inside its levels"))?;
                                    let len = i32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
                                    let len = usize::try_from(len)
                                        .map_err(|_| ReadError::new("a level run has a negative length"))?;
                                    (pos + 4, len)
                                }
                                LevelEncoding::BitPacked => {
                                    let bits = values as u64 * u64::from(bit_width(max));
                                    (pos, usize::try_from(bits.div_ceil(8)).unwrap_or(usize::MAX))
                                }
                            };
                            let end = start
                                .checked_add(len)
                                .filter(|&e| e <= out.len())
                                .ok_or_else(|| ReadError::new("the page ends inside its levels"))?;
                            pos = end;
                            Ok(start..end)
                        };
                    let rep = section(self.max_rep, rep_encoding).map_err(with_at)?;
                    let def = section(self.max_def, def_encoding).map_err(with_at)?;
                    let body = pos..out.len();
                    return Ok(Some(Whole::Data(WholePage {
                        values,
                        encoding,
                        rep,
                        rep_encoding,
                        def,
                        def_encoding,
                        body,
                    })));
                }
                Kind::DataV2 {
                    values,
                    encoding,
                    rep_len,
                    def_len,
                    uncompressed_flag,
                } => {
                    let values = count(values, at)?;
                    let rep_len = count(rep_len, at)?;
                    let def_len = count(def_len, at)?;
                    let levels = rep_len + def_len;
                    if levels > compressed || levels > uncompressed {
                        return Err(ReadError::new(format!(
                            "page at byte {at}: its levels ({levels} bytes) are longer than the page"
                        )));
                    }
                    self.compressed.resize(compressed, 0);
                    self.file.read_exact_at(&mut self.compressed, body)?;
                    out.extend_from_slice(&self.compressed[..levels]);
                    let packed = uncompressed_flag.is_none() || self.v2_always_compressed;
                    let codec = if packed { self.codec } else { Compression::UNCOMPRESSED };
                    // An empty values section is stored as nothing, whatever the codec.
                    if uncompressed > levels {
                        decompress_append(
                            codec,
                            &self.compressed[levels..],
                            uncompressed - levels,
                            out,
                            &mut self.zstd,
                        )
                        .map_err(with_at)?;
                    }
                    return Ok(Some(Whole::Data(WholePage {
                        values,
                        encoding,
                        rep: 0..rep_len,
                        rep_encoding: LevelEncoding::Rle,
                        def: rep_len..levels,
                        def_encoding: LevelEncoding::Rle,
                        body: levels..out.len(),
                    })));
                }
                Kind::Other => continue,
            }
        }
    }

    /// The next page's header, where it starts and where its body starts,
    /// checked to lie inside the chunk; `None` at the end of the chunk.
    fn next_header(&mut self) -> Result<Option<(Header, u64, u64)>, ReadError> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let at = self.pos;
        let (header, header_len) = self.read_header()?;
        let body = at + header_len as u64;
        let next = u64::try_from(header.compressed)
            .ok()
            .and_then(|c| body.checked_add(c))
            .filter(|&n| n <= self.end)
            .ok_or_else(|| ReadError::new(format!("page at byte {at} runs past its column chunk")))?;
        if header.uncompressed < 0 {
            return Err(ReadError::new(format!(
                "page at byte {at} has a negative uncompressed size"
            )));
        }
        self.pos = next;
        Ok(Some((header, at, body)))
    }

    /// Reads every page header of the chunk before the parquet crate does:
    /// each must decode within the chunk (that crate reads a hostile header
    /// a byte per system call: seconds for a few hundred bytes), and, for
    /// codecs whose decoder there fills the claimed size before
    /// decompressing, claim no more than the codec can expand the page's
    /// bytes to (a few bytes claiming 2 GiB must be an error, not 2 GiB of
    /// memory).
    pub(super) fn vet(&mut self) -> Result<(), ReadError> {
        let ratio = fill_ratio(self.codec);
        while let Some((header, at, _)) = self.next_header()? {
            let compressed = header.compressed as u64;
            if let Some(ratio) = ratio
                && header.uncompressed as u64 > compressed * ratio + 4096
            {
                return Err(ReadError::new(format!(
                    "page at byte {at} claims {} bytes from {compressed} compressed bytes, more than {} can expand to",
                    header.uncompressed, self.codec
                )));
            }
        }
        Ok(())
    }

    /// Where the chunk's v2 data page headers say `is_compressed = false`:
    /// the file offset of each byte holding that flag.
    pub(super) fn uncompressed_v2_flags(&mut self) -> Result<Vec<u64>, ReadError> {
        let mut flags = Vec::new();
        while let Some((header, at, _)) = self.next_header()? {
            if let Kind::DataV2 {
                uncompressed_flag: Some(offset),
                ..
            } = header.kind
            {
                flags.push(at + offset as u64);
            }
        }
        Ok(flags)
    }

    /// The chunk's dictionary page, decompressed, with its entry count,
    /// when every data page of the chunk is dictionary-encoded (so every
    /// value is one of its entries); `None` when a data page is encoded
    /// otherwise (a writer's fallback to plain once its dictionary grew
    /// too large), or there is no dictionary page, or more than one.
    pub(super) fn dictionary(&mut self) -> Result<Option<(usize, Vec<u8>)>, ReadError> {
        let mut dictionary = None;
        let mut first = true;
        while let Some((header, at, body)) = self.next_header()? {
            match header.kind {
                Kind::Dictionary { values } if first => {
                    let uncompressed = header.uncompressed as usize;
                    if uncompressed > MAX_DICTIONARY {
                        return Ok(None);
                    }
                    self.compressed.resize(header.compressed as usize, 0);
                    self.file.read_exact_at(&mut self.compressed, body)?;
                    let bytes = decompress_page(self.codec, &self.compressed, uncompressed)
                        .map_err(|e| ReadError::new(format!("dictionary page at byte {at}: {}", e.message)))?;
                    dictionary = Some((count(values, at)?, bytes));
                }
                Kind::DataV1 { encoding, .. } | Kind::DataV2 { encoding, .. }
                    if encoding == PLAIN_DICTIONARY || encoding == RLE_DICTIONARY => {}
                Kind::Other => {}
                _ => return Ok(None),
            }
            first = false;
        }
        Ok(dictionary)
    }

    /// The levels of the next data page, or `None` at the end of the chunk.
    pub(super) fn next_page(&mut self) -> Result<Option<PageLevels<'_>>, ReadError> {
        loop {
            let Some((header, at, body)) = self.next_header()? else {
                return Ok(None);
            };
            let compressed = header.compressed as u64;
            let uncompressed = header.uncompressed as usize;
            match header.kind {
                Kind::DataV1 {
                    values,
                    rep_encoding,
                    def_encoding,
                    ..
                } => {
                    let values = count(values, at)?;
                    let rep_encoding = level_encoding(rep_encoding, at)?;
                    let def_encoding = level_encoding(def_encoding, at)?;
                    return self
                        .v1_levels(body, compressed, uncompressed, values, rep_encoding, def_encoding)
                        .map(Some)
                        .map_err(|e| ReadError::new(format!("page at byte {at}: {}", e.message)));
                }
                Kind::DataV2 {
                    values,
                    rep_len,
                    def_len,
                    ..
                } => {
                    let values = count(values, at)?;
                    let rep_len = count(rep_len, at)?;
                    let def_len = count(def_len, at)?;
                    let levels = rep_len as u64 + def_len as u64;
                    if levels > compressed {
                        return Err(ReadError::new(format!(
                            "page at byte {at}: its levels ({levels} bytes) are longer than the page"
                        )));
                    }
                    self.plain.resize(levels as usize, 0);
                    self.file.read_exact_at(&mut self.plain, body)?;
                    let (rep, def) = self.plain.split_at(rep_len);
                    return Ok(Some(PageLevels {
                        values,
                        rep,
                        rep_encoding: LevelEncoding::Rle,
                        def,
                        def_encoding: LevelEncoding::Rle,
                    }));
                }
                Kind::Dictionary { .. } | Kind::Other => continue,
            }
        }
    }

    /// Reads the page header at the current position, growing the window
    /// until the header fits.
    fn read_header(&mut self) -> Result<(Header, usize), ReadError> {
        let mut window = 256usize;
        loop {
            let left = (self.end - self.pos) as usize;
            let want = window.min(left);
            self.header.resize(want, 0);
            // As far as the bytes run: a level walk over an object fetches
            // each page's header and levels, not the values behind them.
            let got = self.file.read_upto(&mut self.header, self.pos)?;
            self.header.truncate(got);
            match parse_header(&self.header) {
                Ok(found) => return Ok(found),
                Err(Bad::Short) if got == want && want < left && window < MAX_HEADER => window *= 4,
                Err(Bad::Short) => {
                    return Err(ReadError::new(format!(
                        "page header at byte {} is cut off by the end of its column chunk",
                        self.pos
                    )));
                }
                Err(Bad::Corrupt(why)) => {
                    return Err(ReadError::new(format!(
                        "page header at byte {} is corrupt: {why}",
                        self.pos
                    )));
                }
            }
        }
    }

    /// A v1 page stores its levels inside the compressed page, in front of
    /// the values: decompress only as far as they reach.
    fn v1_levels(
        &mut self,
        body: u64,
        compressed: u64,
        uncompressed: usize,
        values: usize,
        rep_encoding: LevelEncoding,
        def_encoding: LevelEncoding,
    ) -> Result<PageLevels<'_>, ReadError> {
        let span = Span {
            file: self.file,
            pos: body,
            end: body + compressed,
        };
        self.plain.clear();
        let sections = [(self.max_rep, rep_encoding), (self.max_def, def_encoding)];
        let mut bounds = [(0usize, 0usize); 2];
        let mut read = |plain: &mut Vec<u8>, reader: &mut dyn Read| -> Result<(), ReadError> {
            for (i, &(max, encoding)) in sections.iter().enumerate() {
                if max == 0 {
                    bounds[i] = (plain.len(), plain.len());
                    continue;
                }
                let len = match encoding {
                    LevelEncoding::Rle => {
                        let mut prefix = [0u8; 4];
                        reader.read_exact(&mut prefix).map_err(short)?;
                        let len = i32::from_le_bytes(prefix);
                        usize::try_from(len).map_err(|_| ReadError::new("a level run has a negative length"))?
                    }
                    LevelEncoding::BitPacked => {
                        let bits = values as u64 * u64::from(bit_width(max));
                        usize::try_from(bits.div_ceil(8)).unwrap_or(usize::MAX)
                    }
                };
                let start = plain.len();
                if start.saturating_add(len) > uncompressed {
                    return Err(ReadError::new(format!(
                        "its levels ({len} bytes) are longer than the page ({uncompressed} bytes)"
                    )));
                }
                // Grows with the bytes the page really holds, not with what
                // its header claims.
                let got = reader.take(len as u64).read_to_end(plain).map_err(short)?;
                if got < len {
                    return Err(ReadError::new("the page ends inside its levels"));
                }
                bounds[i] = (start, start + len);
            }
            Ok(())
        };
        match self.codec {
            Compression::UNCOMPRESSED => read(&mut self.plain, &mut BufReader::with_capacity(16 << 10, span))?,
            Compression::ZSTD(_) => {
                let zstd = self.zstd.get_or_insert_with(zstd::zstd_safe::DCtx::create);
                zstd.reset(zstd::zstd_safe::ResetDirective::SessionOnly)
                    .map_err(|_| ReadError::new("zstd: cannot reset the decoder"))?;
                let mut reader =
                    zstd::stream::read::Decoder::with_context(BufReader::with_capacity(32 << 10, span), zstd);
                read(&mut self.plain, &mut reader)?
            }
            Compression::GZIP(_) => {
                let mut reader = flate2::bufread::MultiGzDecoder::new(BufReader::with_capacity(32 << 10, span));
                read(&mut self.plain, &mut reader)?
            }
            Compression::SNAPPY | Compression::LZ4_RAW => {
                // Block formats: the page is decompressed whole.
                self.compressed.resize(compressed as usize, 0);
                self.file.read_exact_at(&mut self.compressed, body)?;
                self.whole.clear();
                decompress_block(self.codec, &self.compressed, uncompressed, &mut self.whole)?;
                read(&mut self.plain, &mut io::Cursor::new(&self.whole))?
            }
            other => {
                return Err(ReadError::new(format!(
                    "pages compressed with {other} are not walked here"
                )));
            }
        }
        let (rep, def) = (bounds[0], bounds[1]);
        Ok(PageLevels {
            values,
            rep: &self.plain[rep.0..rep.1],
            rep_encoding,
            def: &self.plain[def.0..def.1],
            def_encoding,
        })
    }
}

/// What a walk over a page's levels needs of the page whose header starts
/// at file offset `at` (see [`level_span`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LevelSpan {
    /// `bytes` holds no whole header: fetch more.
    Short,
    /// The walk needs `at..need` (the header, and a v2 data page's levels);
    /// the next page starts at `next`.
    Prefix { need: u64, next: u64 },
    /// A v1 data page: its levels are inside the compressed body, so the
    /// whole page is needed (and, as writers do not mix versions, the rest
    /// of the chunk).
    Whole,
    /// A header that does not hold together (the walk over the whole chunk
    /// reports it as a local read does).
    Bad,
}

/// What the level walk ([`PageWalker::next_page`]) reads of the page whose
/// header is at the front of `bytes` (fetched from file offset `at`), in a
/// column chunk ending at `end`.
pub(super) fn level_span(bytes: &[u8], at: u64, end: u64) -> LevelSpan {
    let (header, len) = match parse_header(bytes) {
        Ok(found) => found,
        Err(Bad::Short) => return LevelSpan::Short,
        Err(Bad::Corrupt(_)) => return LevelSpan::Bad,
    };
    let body = at + len as u64;
    let (Ok(compressed), true) = (u64::try_from(header.compressed), header.uncompressed >= 0) else {
        return LevelSpan::Bad;
    };
    let Some(next) = body.checked_add(compressed).filter(|&n| n <= end) else {
        return LevelSpan::Bad;
    };
    match header.kind {
        Kind::DataV1 { .. } => LevelSpan::Whole,
        Kind::DataV2 { rep_len, def_len, .. } => match (u64::try_from(rep_len), u64::try_from(def_len)) {
            (Ok(r), Ok(d)) if r + d <= compressed => LevelSpan::Prefix {
                need: body + r + d,
                next,
            },
            _ => LevelSpan::Bad,
        },
        Kind::Dictionary { .. } | Kind::Other => LevelSpan::Prefix { need: body, next },
    }
}

/// The most a codec whose decoder fills the claimed size first expands its
/// input: snappy ~22x (a 3-byte copy of 64 bytes), LZ4 ~255x.
fn fill_ratio(codec: Compression) -> Option<u64> {
    match codec {
        Compression::SNAPPY => Some(32),
        Compression::LZ4 | Compression::LZ4_RAW => Some(256),
        _ => None,
    }
}

/// Decompresses a whole snappy or LZ4 block onto the end of `out`,
/// refusing sizes the codec cannot reach from the compressed bytes.
fn decompress_block(codec: Compression, input: &[u8], uncompressed: usize, out: &mut Vec<u8>) -> Result<(), ReadError> {
    let ratio = fill_ratio(codec).unwrap_or(1) as usize;
    if uncompressed > input.len().saturating_mul(ratio).saturating_add(4096) {
        return Err(ReadError::new(format!(
            "the page claims {uncompressed} bytes from {} compressed bytes",
            input.len()
        )));
    }
    let start = out.len();
    out.resize(start + uncompressed, 0);
    let dest = &mut out[start..];
    let n = match codec {
        Compression::SNAPPY => {
            let len = snap::raw::decompress_len(input).map_err(|e| ReadError::new(format!("snappy: {e}")))?;
            if len != uncompressed {
                return Err(ReadError::new(format!(
                    "snappy: the page holds {len} bytes, its header says {uncompressed}"
                )));
            }
            snap::raw::Decoder::new()
                .decompress(input, dest)
                .map_err(|e| ReadError::new(format!("snappy: {e}")))?
        }
        _ => lz4_flex::block::decompress_into(input, dest).map_err(|e| ReadError::new(format!("lz4: {e}")))?,
    };
    out.truncate(start + n);
    Ok(())
}

/// The codecs whose pages can be decompressed whole (`next_whole_page`).
pub(super) fn whole_supported(codec: Compression) -> bool {
    supported(codec) || matches!(codec, Compression::BROTLI(_))
}

/// Decompresses a page of `uncompressed` bytes onto the end of `out`.
/// Stream codecs grow `out` with the bytes the page really holds, past a
/// first reservation capped at 64 MiB.
fn decompress_append(
    codec: Compression,
    input: &[u8],
    uncompressed: usize,
    out: &mut Vec<u8>,
    zstd: &mut Option<zstd::zstd_safe::DCtx<'static>>,
) -> Result<(), ReadError> {
    let start = out.len();
    let limit = uncompressed as u64 + 1;
    match codec {
        Compression::UNCOMPRESSED => out.extend_from_slice(input),
        Compression::SNAPPY | Compression::LZ4_RAW => {
            decompress_block(codec, input, uncompressed, out)?;
        }
        Compression::ZSTD(_) if uncompressed <= 64 << 20 && zstd_into(input, uncompressed, out, zstd) => {}
        Compression::ZSTD(_) => {
            out.truncate(start);
            out.reserve(uncompressed.min(64 << 20));
            let ctx = zstd.get_or_insert_with(zstd::zstd_safe::DCtx::create);
            ctx.reset(zstd::zstd_safe::ResetDirective::SessionOnly)
                .map_err(|_| ReadError::new("zstd: cannot reset the decoder"))?;
            zstd::stream::read::Decoder::with_context(input, ctx)
                .take(limit)
                .read_to_end(out)
                .map_err(|e| ReadError::new(format!("zstd: {e}")))?;
        }
        Compression::GZIP(_) => {
            out.reserve(uncompressed.min(64 << 20));
            flate2::read::MultiGzDecoder::new(input)
                .take(limit)
                .read_to_end(out)
                .map_err(|e| ReadError::new(format!("gzip: {e}")))?;
        }
        Compression::BROTLI(_) => {
            out.reserve(uncompressed.min(64 << 20));
            brotli::Decompressor::new(input, 4096)
                .take(limit)
                .read_to_end(out)
                .map_err(|e| ReadError::new(format!("brotli: {e}")))?;
        }
        other => return Err(ReadError::new(format!("{other} pages are not read here"))),
    }
    if out.len() - start != uncompressed {
        return Err(ReadError::new(format!(
            "the page holds {} bytes, its header says {uncompressed}",
            out.len() - start
        )));
    }
    Ok(())
}

/// Decompresses zstd frames straight into `out`'s spare room (reserved for
/// the `uncompressed` bytes the header says): no zero-filling and no
/// intermediate buffer, which `read_to_end` on a stream decoder costs.
/// False when anything is off (an error, more or fewer bytes than said):
/// the caller then runs the streaming decoder, which says what.
fn zstd_into(
    input: &[u8],
    uncompressed: usize,
    out: &mut Vec<u8>,
    zstd: &mut Option<zstd::zstd_safe::DCtx<'static>>,
) -> bool {
    use zstd::zstd_safe::{InBuffer, OutBuffer, ResetDirective};
    let start = out.len();
    // One byte over: a page holding more than it says shows as such.
    out.reserve_exact(uncompressed + 1);
    let ctx = zstd.get_or_insert_with(zstd::zstd_safe::DCtx::create);
    if ctx.reset(ResetDirective::SessionOnly).is_err() {
        return false;
    }
    let mut src = InBuffer::around(input);
    loop {
        let before = (src.pos(), out.len());
        let mut dst = OutBuffer::around_pos(out, before.1);
        let Ok(hint) = ctx.decompress_stream(&mut dst, &mut src) else {
            return false;
        };
        let end = dst.pos();
        if end - start > uncompressed {
            return false;
        }
        if hint == 0 && src.pos() == input.len() {
            return end - start == uncompressed;
        }
        if (src.pos(), end) == before {
            return false;
        }
    }
}

/// Decompresses a whole page of `uncompressed` bytes.
fn decompress_page(codec: Compression, input: &[u8], uncompressed: usize) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    match codec {
        Compression::UNCOMPRESSED => out.extend_from_slice(input),
        Compression::SNAPPY | Compression::LZ4_RAW => decompress_block(codec, input, uncompressed, &mut out)?,
        // Streamed: memory grows with what the page really holds, not with
        // what its header claims.
        Compression::ZSTD(_) => {
            zstd::stream::read::Decoder::new(input)
                .and_then(|d| d.take(uncompressed as u64 + 1).read_to_end(&mut out))
                .map_err(|e| ReadError::new(format!("zstd: {e}")))?;
        }
        Compression::GZIP(_) => {
            flate2::read::MultiGzDecoder::new(input)
                .take(uncompressed as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| ReadError::new(format!("gzip: {e}")))?;
        }
        other => return Err(ReadError::new(format!("{other} pages are not read here"))),
    }
    if out.len() != uncompressed {
        return Err(ReadError::new(format!(
            "the page holds {} bytes, its header says {uncompressed}",
            out.len()
        )));
    }
    Ok(out)
}

fn short(e: io::Error) -> ReadError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        ReadError::new("the page ends inside its levels")
    } else {
        ReadError::new(format!("cannot decompress the page: {e}"))
    }
}

fn count(n: i32, at: u64) -> Result<usize, ReadError> {
    usize::try_from(n).map_err(|_| ReadError::new(format!("page at byte {at} has a negative count ({n})")))
}

fn level_encoding(code: i32, at: u64) -> Result<LevelEncoding, ReadError> {
    match code {
        RLE => Ok(LevelEncoding::Rle),
        BIT_PACKED => Ok(LevelEncoding::BitPacked),
        other => Err(ReadError::new(format!(
            "page at byte {at} has levels in encoding {other}, which is not a level encoding"
        ))),
    }
}

/// Bits per level for levels up to `max`.
pub(super) fn bit_width(max: i16) -> u32 {
    16 - (max.max(0) as u16).leading_zeros()
}

/// A byte range of a file, read with positioned reads.
struct Span<'f> {
    file: &'f Blob,
    pos: u64,
    end: u64,
}

impl Read for Span<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = (self.end - self.pos).min(buf.len() as u64) as usize;
        if left == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..left], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// What a page header says, of what the level walk needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    uncompressed: i32,
    compressed: i32,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    DataV1 {
        values: i32,
        encoding: i32,
        rep_encoding: i32,
        def_encoding: i32,
    },
    DataV2 {
        values: i32,
        encoding: i32,
        rep_len: i32,
        def_len: i32,
        /// Where in the header `is_compressed = false` is written, if it is.
        uncompressed_flag: Option<usize>,
    },
    /// A dictionary page of this many entries.
    Dictionary { values: i32 },
    /// Dictionary and index pages, and page types this reader does not know.
    Other,
}

/// Decodes a `PageHeader` (Thrift compact protocol) at the front of `buf`,
/// returning it and its length in bytes.
fn parse_header(buf: &[u8]) -> Result<(Header, usize), Bad> {
    let mut c = Compact { buf, pos: 0 };
    let mut page_type = None;
    let mut uncompressed = None;
    let mut compressed = None;
    let mut v1 = None;
    let mut v2 = None;
    let mut dictionary = None;
    let mut last = 0i16;
    while let Some((id, ty)) = c.field(&mut last)? {
        match (id, ty) {
            (1, I32) => page_type = Some(c.i32()?),
            (2, I32) => uncompressed = Some(c.i32()?),
            (3, I32) => compressed = Some(c.i32()?),
            (5, STRUCT) => v1 = Some(c.struct_i32s::<4>()?.0),
            (8, STRUCT) => v2 = Some(c.struct_i32s::<6>()?),
            (7, STRUCT) => dictionary = Some(c.struct_i32s::<1>()?.0),
            _ => c.skip(ty, 0)?,
        }
    }
    let (Some(page_type), Some(uncompressed), Some(compressed)) = (page_type, uncompressed, compressed) else {
        return Err(Bad::Corrupt("a required field is missing"));
    };
    let need = |f: Option<i32>| f.ok_or(Bad::Corrupt("a required field of the data page header is missing"));
    let kind = match page_type {
        0 => {
            let f = v1.ok_or(Bad::Corrupt("a data page without its data page header"))?;
            Kind::DataV1 {
                values: need(f[0])?,
                encoding: need(f[1])?,
                rep_encoding: need(f[3])?,
                def_encoding: need(f[2])?,
            }
        }
        3 => {
            let (f, uncompressed_flag) = v2.ok_or(Bad::Corrupt("a v2 data page without its data page header"))?;
            Kind::DataV2 {
                values: need(f[0])?,
                encoding: need(f[3])?,
                def_len: need(f[4])?,
                rep_len: need(f[5])?,
                uncompressed_flag,
            }
        }
        2 => {
            let f = dictionary.ok_or(Bad::Corrupt("a dictionary page without its dictionary page header"))?;
            Kind::Dictionary { values: need(f[0])? }
        }
        _ => Kind::Other,
    };
    Ok((
        Header {
            uncompressed,
            compressed,
            kind,
        },
        c.pos,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::thrift::push_uleb128 as varint;
    use super::super::thrift::*;
    use super::*;

    /// A compact-protocol writer for hand-made headers.
    fn field(out: &mut Vec<u8>, delta: u8, ty: u8) {
        out.push(delta << 4 | ty);
    }

    fn i32f(out: &mut Vec<u8>, delta: u8, v: i32) {
        field(out, delta, I32);
        varint(out, ((v << 1) ^ (v >> 31)) as u32 as u64);
    }

    #[test]
    fn parses_a_v1_header_and_skips_statistics() {
        let mut h = Vec::new();
        i32f(&mut h, 1, 0); // type DATA_PAGE
        i32f(&mut h, 1, 1000);
        i32f(&mut h, 1, 900);
        field(&mut h, 2, STRUCT); // field 5
        i32f(&mut h, 1, 77);
        i32f(&mut h, 1, 0);
        i32f(&mut h, 1, 3);
        i32f(&mut h, 1, 3);
        field(&mut h, 1, STRUCT); // statistics, skipped
        field(&mut h, 1, BINARY);
        varint(&mut h, 3);
        h.extend_from_slice(b"abc");
        field(&mut h, 1, LIST);
        h.push(2 << 4 | TRUE);
        h.extend_from_slice(&[1, 0]);
        h.push(0);
        h.push(0);
        h.push(0);
        let (header, len) = parse_header(&h).unwrap();
        assert_eq!(len, h.len());
        assert_eq!(header.compressed, 900);
        assert_eq!(
            header.kind,
            Kind::DataV1 {
                values: 77,
                encoding: 0,
                rep_encoding: 3,
                def_encoding: 3
            }
        );
        for cut in 0..h.len() {
            assert_eq!(parse_header(&h[..cut]).unwrap_err(), Bad::Short, "cut at {cut}");
        }
    }

    #[test]
    fn hostile_headers_are_errors() {
        // Structs nested past the limit.
        let mut h = Vec::new();
        for _ in 0..100 {
            field(&mut h, 1, STRUCT);
        }
        assert!(matches!(parse_header(&h), Err(Bad::Corrupt(_))));
        // A varint longer than 64 bits.
        let mut h = Vec::new();
        field(&mut h, 1, I32);
        h.extend_from_slice(&[0xff; 11]);
        assert!(matches!(parse_header(&h), Err(Bad::Corrupt(_))));
        // A list claiming 2^60 elements ends at the buffer, not in a hang.
        let mut h = Vec::new();
        field(&mut h, 4, LIST);
        h.push(15 << 4 | BINARY);
        varint(&mut h, 1 << 60);
        assert_eq!(parse_header(&h).unwrap_err(), Bad::Short);
        // No type.
        assert!(matches!(parse_header(&[0]), Err(Bad::Corrupt(_))));
    }
}
