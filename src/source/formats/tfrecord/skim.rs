//! The listing pass's look at a large record: its feature names and kinds
//! read by position (a [`Window`] of the file), hopping over the values.
//!
//! Why: listing needs a few bytes per record (the header, each entry's key
//! and the tag of its value), but touching them through the memory map maps
//! the 64 KiB around each one (the kernel's fault-around), so for
//! ImageNet-like records the listing mapped, then unmapped, most of the file
//! before the reading pass mapped all of it again. Page-table work was a
//! third of the run. Positioned reads of those bytes cost one `pread` per
//! hop instead.
//!
//! prost decodes whole buffers only, so this walks the wire format by hand,
//! and only the plain shape `tf.train.Example` writers produce: one key and
//! one value per entry, one kind per value, no unknown fields, no repeated
//! key, UTF-8 keys, every list's framing whole. Anything else answers
//! `None`, and the record is listed through the map by prost as before
//! ([`super::entries`]), so errors and unusual records are judged by one
//! decoder.

use std::io::{Read, Seek, SeekFrom};

use super::FKind;
use crate::source::storage::Window;

/// Longest key skimmed (a longer one goes to the map).
const MAX_KEY: u64 = 4096;
/// Most entries of a record skimmed.
const MAX_ENTRIES: usize = 64;

/// Wire types.
const VARINT: u64 = 0;
const I32: u64 = 5;
const LEN: u64 = 2;

/// The entries of one record: keys back to back in `keys`, and for each
/// (end of its key in `keys`, its kind).
#[derive(Default)]
pub(super) struct Skimmed {
    pub keys: Vec<u8>,
    pub entries: Vec<(usize, Option<FKind>)>,
}

impl Skimmed {
    /// (key, kind) of each entry, in record order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[u8], Option<FKind>)> {
        let mut start = 0;
        self.entries.iter().map(move |&(end, kind)| {
            let key = &self.keys[start..end];
            start = end;
            (key, kind)
        })
    }
}

/// A file read by position, at `pos`.
pub(super) struct Cursor {
    pub file: Window,
    pos: u64,
}

impl Cursor {
    pub(super) fn new(file: Window) -> Cursor {
        Cursor { file, pos: 0 }
    }

    /// `buf.len()` bytes at `at`.
    pub(super) fn read_at(&mut self, at: u64, buf: &mut [u8]) -> Option<()> {
        self.file.seek(SeekFrom::Start(at)).ok()?;
        self.file.read_exact(buf).ok()?;
        self.pos = at + buf.len() as u64;
        Some(())
    }

    fn byte(&mut self) -> Option<u8> {
        let mut b = [0u8];
        let at = self.pos;
        self.read_at(at, &mut b)?;
        Some(b[0])
    }

    /// A varint before `end` (at most 10 bytes, the 10th at most 1, as
    /// prost accepts them).
    fn varint(&mut self, end: u64) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            if self.pos >= end {
                return None;
            }
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// A field's (number, wire type).
    fn tag(&mut self, end: u64) -> Option<(u64, u64)> {
        let t = self.varint(end)?;
        let field = t >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return None;
        }
        Some((field, t & 7))
    }

    /// A length-delimited field's [start, end), the cursor moved past it.
    fn len(&mut self, end: u64) -> Option<(u64, u64)> {
        let n = self.varint(end)?;
        let start = self.pos;
        if n > end - start {
            return None;
        }
        self.pos = start + n;
        Some((start, start + n))
    }
}

/// The entries of the `Example` at [start, end) into `out`, or `None` when
/// the record is not of the plain shape (see the module doc).
pub(super) fn example(c: &mut Cursor, start: u64, end: u64, out: &mut Skimmed) -> Option<()> {
    out.keys.clear();
    out.entries.clear();
    c.pos = start;
    while c.pos < end {
        if c.tag(end)? != (1, LEN) {
            return None;
        }
        let (s, e) = c.len(end)?;
        features(c, s, e, out)?;
        c.pos = e;
    }
    // A repeated key keeps its last entry: left to prost.
    let mut start = 0;
    for (i, &(end, _)) in out.entries.iter().enumerate() {
        let key = &out.keys[start..end];
        let mut s = 0;
        for &(e, _) in &out.entries[..i] {
            if &out.keys[s..e] == key {
                return None;
            }
            s = e;
        }
        start = end;
    }
    Some(())
}

/// `Features`: its map entries.
fn features(c: &mut Cursor, start: u64, end: u64, out: &mut Skimmed) -> Option<()> {
    c.pos = start;
    while c.pos < end {
        if c.tag(end)? != (1, LEN) {
            return None;
        }
        let (s, e) = c.len(end)?;
        entry(c, s, e, out)?;
        c.pos = e;
    }
    Some(())
}

/// One map entry: exactly one key (field 1) and one value (field 2).
fn entry(c: &mut Cursor, start: u64, end: u64, out: &mut Skimmed) -> Option<()> {
    if out.entries.len() >= MAX_ENTRIES {
        return None;
    }
    c.pos = start;
    let mut key = None;
    let mut value = None;
    while c.pos < end {
        match c.tag(end)? {
            (1, LEN) if key.is_none() => key = Some(c.len(end)?),
            (2, LEN) if value.is_none() => value = Some(c.len(end)?),
            _ => return None,
        }
    }
    let ((ks, ke), (vs, ve)) = (key?, value?);
    if ke - ks > MAX_KEY {
        return None;
    }
    let from = out.keys.len();
    out.keys.resize(from + (ke - ks) as usize, 0);
    c.read_at(ks, &mut out.keys[from..])?;
    if std::str::from_utf8(&out.keys[from..]).is_err() {
        return None;
    }
    let kind = feature(c, vs, ve)?;
    out.entries.push((out.keys.len(), kind));
    Some(())
}

/// A `Feature`: no field (no kind) or one list field, its framing whole.
fn feature(c: &mut Cursor, start: u64, end: u64) -> Option<Option<FKind>> {
    c.pos = start;
    if start == end {
        return Some(None);
    }
    let (field, wire) = c.tag(end)?;
    if wire != LEN {
        return None;
    }
    let (s, e) = c.len(end)?;
    if e != end {
        return None;
    }
    c.pos = s;
    let kind = match field {
        1 => FKind::Bytes,
        2 => FKind::Float,
        3 => FKind::Int64,
        _ => return None,
    };
    while c.pos < e {
        match (kind, c.tag(e)?) {
            (FKind::Bytes, (1, LEN)) => {
                c.len(e)?;
            }
            (FKind::Float, (1, LEN)) => {
                let (s, t) = c.len(e)?;
                if (t - s) % 4 != 0 {
                    return None;
                }
            }
            (FKind::Float, (1, I32)) => {
                if e - c.pos < 4 {
                    return None;
                }
                c.pos += 4;
            }
            (FKind::Int64, (1, LEN)) => {
                let (s, t) = c.len(e)?;
                c.pos = s;
                while c.pos < t {
                    c.varint(t)?;
                }
            }
            (FKind::Int64, (1, VARINT)) => {
                c.varint(e)?;
            }
            _ => return None,
        }
    }
    Some(Some(kind))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use bytes::Bytes;
    use proptest::prelude::*;
    use prost::Message;

    use super::super::framing::MapRecords;
    use super::super::proto::{BytesList, EntryRaw, ExampleRaw, Feature, FeaturesRaw, FloatList, Int64List, Kind};
    use super::super::{entries, kind_of};
    use super::*;

    /// (key, kind) of each entry of a record.
    type Listed = Vec<(Vec<u8>, Option<FKind>)>;

    /// What prost lists for a record.
    fn by_prost(data: &[u8]) -> Result<Listed, String> {
        entries(Bytes::copy_from_slice(data))?
            .into_iter()
            .map(|e| Ok((e.key.to_vec(), kind_of(&e.value)?)))
            .collect()
    }

    /// What the skim lists for `data` written to a file in `dir`.
    fn by_skim(dir: &Path, data: &[u8]) -> Option<Listed> {
        let path = dir.join("r.bin");
        std::fs::write(&path, data).expect("write");
        let input = crate::source::storage::Input::open(&path).expect("open");
        let mut c = Cursor::new(input.window(0..input.size()).expect("window"));
        let mut out = Skimmed::default();
        example(&mut c, 0, data.len() as u64, &mut out)?;
        Some(out.iter().map(|(k, kind)| (k.to_vec(), kind)).collect())
    }

    #[test]
    fn skim_lists_what_prost_lists_on_the_tfrecord_writers_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new(crate::source::test_python())
            .arg("-c")
            .arg(
                "from tfrecord import TFRecordWriter\n\
                 w = TFRecordWriter('t.tfrecord')\n\
                 for i in range(60):\n\
                 \x20   d = {'image/encoded': (bytes([i]) * (20000 + 997 * i), 'byte'),\n\
                 \x20        'image/class/label': ([i, -i, 2**62] if i % 3 else [], 'int'),\n\
                 \x20        'bbox': ([0.5, -1.25] * (i % 4), 'float'),\n\
                 \x20        'caption': ([b'a', b'', 'é'.encode()], 'byte'),\n\
                 \x20        'ключ': (i, 'int')}\n\
                 \x20   if i % 7 == 0: del d['bbox']\n\
                 \x20   w.write(d)\n\
                 w.close()\n",
            )
            .current_dir(dir.path())
            .output()
            .expect("python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let all = Bytes::from(std::fs::read(dir.path().join("t.tfrecord")).expect("read"));
        let mut records = MapRecords {
            data: all,
            pos: 0,
            record: 0,
            check_data: true,
        };
        let mut n = 0;
        while let Some((_, data)) = records.next_record().expect("record") {
            let prost = by_prost(&data).expect("prost");
            assert_eq!(prost.len(), if n % 7 == 0 { 4 } else { 5 });
            assert_eq!(by_skim(dir.path(), &data), Some(prost), "record {n}");
            n += 1;
        }
        assert_eq!(n, 60);
    }

    fn entry(key: &[u8], value: Vec<Vec<u8>>) -> EntryRaw {
        EntryRaw {
            key: Bytes::copy_from_slice(key),
            value: value.into_iter().map(Bytes::from).collect(),
        }
    }

    fn feature(kind: Kind) -> Vec<u8> {
        Feature { kind: Some(kind) }.encode_to_vec()
    }

    fn record(entries: Vec<EntryRaw>) -> Vec<u8> {
        ExampleRaw {
            features: vec![FeaturesRaw { feature: entries }],
        }
        .encode_to_vec()
    }

    #[test]
    fn unusual_shapes_are_left_to_prost() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ints = || feature(Kind::Int64List(Int64List { value: vec![1, -2] }));
        let plain = record(vec![entry(b"a", vec![ints()])]);
        assert_eq!(
            by_skim(dir.path(), &plain),
            Some(vec![(b"a".to_vec(), Some(FKind::Int64))])
        );
        // A repeated key, a value in two parts, a non-UTF-8 key, a
        // SequenceExample's field 2.
        for data in [
            record(vec![entry(b"a", vec![ints()]), entry(b"a", vec![ints()])]),
            record(vec![entry(b"a", vec![ints(), ints()])]),
            record(vec![entry(b"\xff", vec![ints()])]),
            {
                let mut d = plain.clone();
                d.extend_from_slice(&[0x12, 0]);
                d
            },
        ] {
            assert_eq!(by_skim(dir.path(), &data), None);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Whatever the damage, the skim lists a record only as prost does.
        #[test]
        fn skim_never_disagrees_with_prost(
            flips in proptest::collection::vec((0usize..400, any::<u8>()), 0..4),
            cut in 0usize..400,
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut data = record(vec![
                entry(b"image", vec![feature(Kind::BytesList(BytesList { value: vec![Bytes::from(vec![7u8; 200])] }))]),
                entry(b"label", vec![feature(Kind::Int64List(Int64List { value: vec![3, -1, i64::MAX] }))]),
                entry(b"score", vec![feature(Kind::FloatList(FloatList { value: vec![0.5; 5] }))]),
                entry(b"none", vec![Vec::new()]),
            ]);
            for (at, b) in flips {
                let i = at % data.len();
                data[i] = b;
            }
            data.truncate(cut.max(1).min(data.len()));
            if let Some(skim) = by_skim(dir.path(), &data) {
                prop_assert_eq!(Some(skim), by_prost(&data).ok());
            }
        }
    }
}
