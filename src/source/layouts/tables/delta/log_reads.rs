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
//! A file the kernel's listing showed to be small is fetched whole at its
//! first read (a checkpoint's footer, metadata and rows are then one
//! round trip, not three in a row) and its ranges cut from those bytes.
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

/// A log file no larger than this, by the listing, is fetched whole.
const WHOLE: u64 = 16 << 20;

/// A store that answers a repeated read of an immutable log file from
/// memory, until [`LogReads::forget`].
#[derive(Debug)]
pub(super) struct LogReads {
    inner: Arc<dyn ObjectStore>,
    kept: Mutex<HashMap<String, Kept>>,
    /// The sizes of log files, as listings through this store showed them.
    sizes: Arc<Mutex<HashMap<String, u64>>>,
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
            sizes: Default::default(),
        }
    }

    /// Drops what was kept: the replay is over.
    pub(super) fn forget(&self) {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.sizes.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// A listing, the sizes it shows noted.
    fn noting(&self, listing: BoxStream<'static, Result<ObjectMeta>>) -> BoxStream<'static, Result<ObjectMeta>> {
        use futures_util::StreamExt;
        let sizes = self.sizes.clone();
        Box::pin(listing.inspect(move |m| {
            if let Ok(m) = m {
                sizes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(m.location.to_string(), m.size);
            }
        }))
    }

    /// The read `options` asks of `location`, from memory or fetched once.
    async fn kept(&self, location: &Path, options: GetOptions, key: String) -> Result<Kept> {
        let known = self.kept.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some(k) = known {
            return Ok(k);
        }
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
        Ok(k)
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
        let listed = self
            .sizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(location.as_ref())
            .copied();
        let kept = match (&options.range, listed) {
            // A range of a small file: cut from the whole.
            (Some(range), Some(size)) if size <= WHOLE && !options.head => {
                let range = range.clone();
                let whole_key = LogReads::key(location, &GetOptions::default()).unwrap_or_default();
                let whole = self.kept(location, GetOptions::default(), whole_key).await?;
                let len = whole.bytes.len() as u64;
                let r = range.as_range(len).map_err(|e| object_store::Error::Generic {
                    store: "LogReads",
                    source: Box::new(e),
                })?;
                Kept {
                    range: r.clone(),
                    bytes: whole.bytes.slice(r.start as usize..r.end as usize),
                    ..whole
                }
            }
            _ => self.kept(location, options, key).await?,
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
        self.noting(self.inner.list(prefix))
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        self.noting(self.inner.list_with_offset(prefix, offset))
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
            // Once a listing shows the file small, its ranges come from one
            // read of the whole.
            store.forget();
            use futures_util::TryStreamExt;
            let listed: Vec<_> = store
                .list(Some(&Path::from("t/_delta_log")))
                .try_collect()
                .await
                .unwrap();
            assert_eq!(listed.len(), 2);
            assert_eq!(store.get_range(&commit, 7..10).await.unwrap(), &b"789"[..]);
            assert_eq!(store.get_range(&commit, 0..2).await.unwrap(), &b"01"[..]);
            let tail = store
                .get_opts(
                    &commit,
                    GetOptions {
                        range: Some(object_store::GetRange::Suffix(3)),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            assert_eq!(tail.range, 7..10);
            assert_eq!(tail.bytes().await.unwrap(), &b"789"[..]);
            assert_eq!(reads(), 8);
        });
    }
}
