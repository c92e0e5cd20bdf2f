//! The content hashes an MDS `index.json` records for each shard file.
//!
//! `MDSWriter(hashes=[...])` stores, beside each shard file's `basename`
//! and `bytes`, a `hashes` map from algorithm name to hex digest, for the
//! raw shard (`raw_data`) and for its compressed file (`zip_data`);
//! `StreamingDataset(validate_hash=...)` checks them after a download. The
//! names are mosaicml-streaming's (`streaming/base/hashing.py`): every
//! `hashlib` constructor that is an attribute of the module (md5, sha1,
//! sha224, sha256, sha384, sha512, sha3_224, sha3_256, sha3_384, sha3_512,
//! blake2b, blake2s) and every `xxhash.algorithms_available` (xxh32, xxh64,
//! xxh3_64, xxh3_128, and xxh128, its alias), digests as `hexdigest()`
//! writes them (xxhash's canonical, big-endian form). A mismatch is the
//! shard's error: the file is not the one the index describes. The
//! implementations are RustCrypto's and twox-hash's.

use std::collections::BTreeMap;

use sha2::Digest;

use crate::error::ReadError;

/// A running hash of one of the algorithms mosaicml-streaming names.
enum State {
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
    Sha3_224(sha3::Sha3_224),
    Sha3_256(sha3::Sha3_256),
    Sha3_384(sha3::Sha3_384),
    Sha3_512(sha3::Sha3_512),
    Blake2b(blake2::Blake2b512),
    Blake2s(blake2::Blake2s256),
    Xxh32(twox_hash::XxHash32),
    Xxh64(twox_hash::XxHash64),
    Xxh3_64(Box<twox_hash::XxHash3_64>),
    Xxh3_128(Box<twox_hash::XxHash3_128>),
}

impl State {
    /// The algorithm streaming calls `name`; `None` for one it does not.
    fn new(name: &str) -> Option<State> {
        Some(match name {
            "md5" => State::Md5(Digest::new()),
            "sha1" => State::Sha1(Digest::new()),
            "sha224" => State::Sha224(Digest::new()),
            "sha256" => State::Sha256(Digest::new()),
            "sha384" => State::Sha384(Digest::new()),
            "sha512" => State::Sha512(Digest::new()),
            "sha3_224" => State::Sha3_224(Digest::new()),
            "sha3_256" => State::Sha3_256(Digest::new()),
            "sha3_384" => State::Sha3_384(Digest::new()),
            "sha3_512" => State::Sha3_512(Digest::new()),
            "blake2b" => State::Blake2b(Digest::new()),
            "blake2s" => State::Blake2s(Digest::new()),
            "xxh32" => State::Xxh32(twox_hash::XxHash32::with_seed(0)),
            "xxh64" => State::Xxh64(twox_hash::XxHash64::with_seed(0)),
            "xxh3_64" => State::Xxh3_64(Box::new(twox_hash::XxHash3_64::with_seed(0))),
            "xxh3_128" | "xxh128" => State::Xxh3_128(Box::new(twox_hash::XxHash3_128::with_seed(0))),
            _ => return None,
        })
    }

    fn update(&mut self, bytes: &[u8]) {
        use std::hash::Hasher;
        match self {
            State::Md5(h) => h.update(bytes),
            State::Sha1(h) => h.update(bytes),
            State::Sha224(h) => h.update(bytes),
            State::Sha256(h) => h.update(bytes),
            State::Sha384(h) => h.update(bytes),
            State::Sha512(h) => h.update(bytes),
            State::Sha3_224(h) => h.update(bytes),
            State::Sha3_256(h) => h.update(bytes),
            State::Sha3_384(h) => h.update(bytes),
            State::Sha3_512(h) => h.update(bytes),
            State::Blake2b(h) => h.update(bytes),
            State::Blake2s(h) => h.update(bytes),
            State::Xxh32(h) => h.write(bytes),
            State::Xxh64(h) => h.write(bytes),
            State::Xxh3_64(h) => h.write(bytes),
            State::Xxh3_128(h) => h.write(bytes),
        }
    }

    /// The digest as `hexdigest()` writes it.
    fn hex(self) -> String {
        fn hex(bytes: &[u8]) -> String {
            bytes.iter().map(|b| format!("{b:02x}")).collect()
        }
        match self {
            State::Md5(h) => hex(&h.finalize()),
            State::Sha1(h) => hex(&h.finalize()),
            State::Sha224(h) => hex(&h.finalize()),
            State::Sha256(h) => hex(&h.finalize()),
            State::Sha384(h) => hex(&h.finalize()),
            State::Sha512(h) => hex(&h.finalize()),
            State::Sha3_224(h) => hex(&h.finalize()),
            State::Sha3_256(h) => hex(&h.finalize()),
            State::Sha3_384(h) => hex(&h.finalize()),
            State::Sha3_512(h) => hex(&h.finalize()),
            State::Blake2b(h) => hex(&h.finalize()),
            State::Blake2s(h) => hex(&h.finalize()),
            State::Xxh32(h) => format!("{:08x}", h.finish_32()),
            State::Xxh64(h) => format!("{:016x}", std::hash::Hasher::finish(&h)),
            State::Xxh3_64(h) => format!("{:016x}", std::hash::Hasher::finish(&*h)),
            State::Xxh3_128(h) => format!("{:032x}", h.finish_128()),
        }
    }
}

/// The hashes an index lists for one file: algorithm name -> hex digest
/// (any other JSON value is kept, and fails the comparison).
pub(crate) type Hashes = BTreeMap<String, serde_json::Value>;

/// The listed algorithms preflight does not know (not verified: a note).
pub(crate) fn unknown(hashes: &Hashes) -> Vec<&str> {
    hashes
        .keys()
        .filter(|k| State::new(k).is_none())
        .map(String::as_str)
        .collect()
}

/// Checks `bytes` against every known hash of `hashes`; `what` names them
/// in messages ("the file", "the decompressed shard").
pub(crate) fn verify_bytes(bytes: &[u8], hashes: &Hashes, what: &str, entry: &str) -> Result<(), ReadError> {
    verify_with(hashes, what, entry, |states| {
        for s in states.iter_mut() {
            s.update(bytes);
        }
        Ok(())
    })
}

fn verify_with(
    hashes: &Hashes,
    what: &str,
    entry: &str,
    feed: impl FnOnce(&mut [State]) -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    let known: Vec<(&String, &serde_json::Value)> = hashes.iter().filter(|(k, _)| State::new(k).is_some()).collect();
    if known.is_empty() {
        return Ok(());
    }
    let mut states: Vec<State> = known.iter().filter_map(|(k, _)| State::new(k)).collect();
    feed(&mut states)?;
    for ((name, want), state) in known.into_iter().zip(states) {
        let got = state.hex();
        let matches = want.as_str().is_some_and(|w| w.eq_ignore_ascii_case(&got));
        if !matches {
            let want = want.as_str().map_or_else(|| want.to_string(), str::to_string);
            return Err(ReadError::new(format!(
                "{name} of {what} is {got}, index.json's {entry} says {want} (the file is not the one the index describes: changed or corrupted since it was written)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_hashlib_and_xxhash_hexdigests() {
        // Known answers for b"abc" (hashlib / xxhash).
        for (algo, want) in [
            ("md5", "900150983cd24fb0d6963f7d28e17f72"),
            ("sha1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                "sha256",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                "sha3_256",
                "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
            ),
            ("xxh32", "32d153ff"),
            ("xxh64", "44bc2cf5ad770999"),
            ("xxh3_64", "78af5f94892f3950"),
            ("xxh128", "06b05ab6733a618578af5f94892f3950"),
        ] {
            let mut s = State::new(algo).expect(algo);
            s.update(b"abc");
            assert_eq!(s.hex(), want, "{algo}");
        }
        assert!(State::new("sha512_256").is_none());
    }
}
