//! The log files one snapshot's replay reads, each fetched once.
//!
//! Why: the kernel reads a table's log twice, once to find the protocol
//! and metadata when it builds the snapshot and once more to list the
//! live files when it scans, and it reads a checkpoint's footer before
//! its rows each time. In object storage every read is a round trip. A
//! commit, checkpoint or compaction file never changes once written (the
//! protocol's rule: a version is written once), so its bytes are kept for
//! the one replay and dropped with it. `_last_checkpoint`, which a writer
//! rewrites, and every file outside `_delta_log/` are always read afresh.
//! No crate wraps an `object_store` with such a cache for one bounded use.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// A read kept: what the store answered, and the bytes.
#[derive(Clone)]
struct Kept {
    meta: ObjectMeta,
    range: Range<u64>,
    attributes: object_store::Attributes,
    bytes: Bytes,
}

/// A store that answers a repeated read of an immutable log file from
/// memory, until [`LogReads::forget`].
#[derive(Debug)]
pub(super) struct LogReads {
    inner: Arc<dyn ObjectStore>,
    kept: Mutex<HashMap<String, Kept>>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes of {}", self.bytes.len(), self.meta.location)
    }
}

impl std::fmt::Display for LogReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LogReads({})", self.inner)
    }
}

impl LogReads {
    pub(super) fn new(inner: Arc<dyn ObjectStore>) -> LogReads {
        LogReads {
            inner,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// Drops what was kept: the replay is over.
    pub(super) fn forget(&self) {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The key a read of `location` is kept under, if it is kept: an
    /// unconditional read of a file of the log that never changes.
    fn key(location: &Path, options: &GetOptions) -> Option<String> {
        let text = location.as_ref();
        let (dir, name) = text.rsplit_once('/')?;
        let immutable =
            (dir == "_delta_log" || dir.ends_with("/_delta_log")) && name.starts_with(|c: char| c.is_ascii_digit());
        let conditional = options.if_match.is_some()
            || options.if_none_match.is_some()
            || options.if_modified_since.is_some()
            || options.if_unmodified_since.is_some()
            || options.version.is_some();
        (immutable && !conditional).then(|| format!("{text}\u{0}{:?}\u{0}{}", options.range, options.head))
    }
}

#[async_trait]
impl ObjectStore for LogReads {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let Some(key) = LogReads::key(location, &options) else {
            return self.inner.get_opts(location, options).await;
        };
        let known = self.kept.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        let kept = match known {
            Some(k) => k,
            None => {
                let got = self.inner.get_opts(location, options).await?;
                let (meta, range, attributes) = (got.meta.clone(), got.range.clone(), got.attributes.clone());
                let bytes = got.bytes().await?;
                let k = Kept {
                    meta,
                    range,
                    attributes,
                    bytes,
                };
                self.kept
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, k.clone());
                k
            }
        };
        let bytes = kept.bytes;
        Ok(GetResult {
            payload: GetResultPayload::Stream(Box::pin(futures_util::stream::once(async move { Ok(bytes) }))),
            meta: kept.meta,
            range: kept.range,
            attributes: kept.attributes,
            extensions: Default::default(),
        })
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;

    /// A store that counts the reads that reach it.
    #[derive(Debug)]
    struct Counting(InMemory, std::sync::atomic::AtomicUsize);

    impl std::fmt::Display for Counting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Counting")
        }
    }

    #[async_trait]
    impl ObjectStore for Counting {
        async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
            self.0.put_opts(l, p, o).await
        }
        async fn put_multipart_opts(&self, l: &Path, o: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
            self.0.put_multipart_opts(l, o).await
        }
        async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.0.get_opts(l, o).await
        }
        fn delete_stream(&self, l: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
            self.0.delete_stream(l)
        }
        fn list(&self, p: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.0.list(p)
        }
        async fn list_with_delimiter(&self, p: Option<&Path>) -> Result<ListResult> {
            self.0.list_with_delimiter(p).await
        }
        async fn copy_opts(&self, f: &Path, t: &Path, o: CopyOptions) -> Result<()> {
            self.0.copy_opts(f, t, o).await
        }
    }

    #[test]
    fn immutable_log_files_are_read_once_until_forgotten() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let inner = Arc::new(Counting(InMemory::new(), Default::default()));
            let commit = Path::from("t/_delta_log/00000000000000000001.json");
            let last = Path::from("t/_delta_log/_last_checkpoint");
            let data = Path::from("t/part-0.parquet");
            for p in [&commit, &last, &data] {
                inner.put(p, PutPayload::from_static(b"0123456789")).await.unwrap();
            }
            let store = LogReads::new(inner.clone());
            let reads = || inner.1.load(std::sync::atomic::Ordering::SeqCst);
            for _ in 0..2 {
                assert_eq!(
                    store.get(&commit).await.unwrap().bytes().await.unwrap(),
                    &b"0123456789"[..]
                );
                assert_eq!(store.get_range(&commit, 2..5).await.unwrap(), &b"234"[..]);
            }
            assert_eq!(reads(), 2, "a whole read and a range, each once");
            for _ in 0..2 {
                store.get(&last).await.unwrap().bytes().await.unwrap();
                store.get(&data).await.unwrap().bytes().await.unwrap();
            }
            assert_eq!(reads(), 6, "_last_checkpoint and data files are read every time");
            store.forget();
            store.get(&commit).await.unwrap().bytes().await.unwrap();
            assert_eq!(reads(), 7);
        });
    }
}
