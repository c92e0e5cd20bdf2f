//! Objects in storage (`s3://`, `gs://`, `az://`, `http(s)://`), read by
//! byte range through the Arrow project's `object_store` client: the one
//! arrow-rs, DataFusion, Polars and delta-rs use, with each cloud's request
//! signing, credential chain (environment, web identity, instance
//! metadata), retries with backoff on throttling and 5xx, and timeouts.
//!
//! The rest of preflight is synchronous (rayon threads); the client is
//! async. One tokio runtime lives here, and every call blocks on it, so the
//! scanner and the kernels never learn that bytes came over the network.
//!
//! What a read costs is decided by its caller: a reader asks for the tail
//! (one request, which also gives the object's size when the listing did
//! not) and then for the ranges its metadata says it needs; nearby ranges
//! are merged and up to ten requests run at once.
//!
//! Consistency: the first response pins the object's ETag, and every later
//! request carries it as `If-Match`, so an object overwritten mid-read is
//! that file's error (HTTP 412), never checked as a mix of two versions.
//!
//! Errors say what happened in words of their own (status, retries, where
//! credentials came from) and never repeat the client's text, which holds
//! timings (reports must not vary between runs) and may hold signed URLs.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};

use crate::error::ReadError;

/// Nearby ranges closer than this are fetched as one request (the gap is
/// cheaper to transfer than another round trip).
const COALESCE: u64 = 1024 * 1024;

/// The URL schemes read from storage.
const SCHEMES: [&str; 8] = [
    "s3://", "s3a://", "gs://", "az://", "abfs://", "https://", "http://", "hf://",
];

/// Whether a PATH argument names an object in storage rather than a local
/// file.
pub(crate) fn is_url(path: &Path) -> bool {
    path.to_str().is_some_and(|s| SCHEMES.iter().any(|p| s.starts_with(p)))
}

/// The process's I/O runtime: two workers are plenty for requests that
/// mostly wait on the network.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        // TLS by rustls with `ring` (see Cargo.toml); a provider another
        // part of the process installed first is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("preflight-io")
            .enable_all()
            .build()
            .expect("the I/O runtime starts")
    })
}

/// A store and where its credentials come from (for error messages).
#[derive(Clone)]
struct Store {
    store: Arc<dyn ObjectStore>,
    credentials: String,
}

/// Splits a URL into the store's root (`s3://bucket`, `https://host:port`,
/// `hf://datasets/OWNER/NAME[@REVISION]`) and the key inside it. An
/// `http(s)://` URL's query string (`?X-Amz-Signature=...`) stays with its
/// root, to be sent with every request (see [`http_key`]).
fn split(url: &str) -> Option<(&str, &str)> {
    if url.starts_with("hf://") {
        let at = super::hub::root_len(url)?;
        return Some((&url[..at], url[at..].trim_start_matches('/')));
    }
    let (scheme, rest) = url.split_once("://")?;
    let at = rest.find('/').map_or(url.len(), |i| scheme.len() + 3 + i);
    let (root, key) = url.split_at(at);
    if is_http(url)
        && let Some(q) = key.find('?')
    {
        return Some((root, key[..q].trim_start_matches('/')));
    }
    Some((root, key.trim_start_matches('/')))
}

/// The store that holds `url` (S3, GCS, Azure: the bucket or container,
/// with the credentials every read uses), for a library that reads through
/// `object_store` itself (the Delta kernel reading a table's log).
pub(crate) fn object_store(url: &str) -> Result<Arc<dyn ObjectStore>, String> {
    let (root, _) = split(url).ok_or_else(|| not_a_url(url))?;
    store(root).map(|s| s.store)
}

/// Why [`split`] found no store in `url` (an `hf://` URL that is not a
/// dataset's says what one is).
fn not_a_url(url: &str) -> String {
    match super::hub::parse(url) {
        Err(e) if url.starts_with("hf://") => e,
        _ => format!("not a URL: {url}"),
    }
}

/// Whether a URL is read over plain HTTP(S) (no listing; a URL, so its
/// path is percent-encoded and it may carry a query string).
pub(crate) fn is_http(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

/// A path as its name tells its format: an `http(s)://` URL without its
/// query string (`x.parquet?download=true` is a `.parquet`).
pub(crate) fn without_query(path: &Path) -> std::borrow::Cow<'_, Path> {
    match path.to_str() {
        Some(s) if is_http(s) && s.contains('?') => {
            std::borrow::Cow::Owned(std::path::PathBuf::from(s.split('?').next().unwrap_or(s)))
        }
        _ => std::borrow::Cow::Borrowed(path),
    }
}

/// The store's root of an `http(s)://` URL with its query string
/// (`https://host?sig=...`): the query is sent with each request.
fn http_root(url: &str) -> Option<String> {
    let (root, _) = split(url)?;
    match url.find('?') {
        Some(q) if is_http(url) => Some(format!("{root}/{}", &url[q..])),
        _ => Some(root.to_string()),
    }
}

/// The object key an `http(s)://` URL's path names: the path is
/// percent-encoded as typed (`a%20b.parquet` is the file `a b.parquet`), and
/// the client encodes the key again when it sends it. A character a URL
/// cannot hold (a space typed as is) stays what it is.
fn http_key(key: &str) -> String {
    key.split('/')
        .map(crate::redact::percent_decode)
        .collect::<Vec<_>>()
        .join("/")
}

/// One URL path segment percent-encoded (all but RFC 3986's unreserved
/// characters), as the Hub expects a revision (`refs%2Fconvert%2Fparquet`).
pub(super) fn percent_encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Retries as `object_store` does by default (10, backoff from 100 ms to
/// 15 s; `PREFLIGHT_REMOTE_RETRIES` sets how many), with the overall time
/// bounded so a stalled server fails a file in bounded time.
fn retry() -> RetryConfig {
    let retries = std::env::var("PREFLIGHT_REMOTE_RETRIES")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    RetryConfig {
        max_retries: retries,
        retry_timeout: Duration::from_secs(120),
        ..RetryConfig::default()
    }
}

/// How long one request may take: 30 s, or `PREFLIGHT_REMOTE_TIMEOUT`
/// seconds.
fn timeout() -> Duration {
    let secs = std::env::var("PREFLIGHT_REMOTE_TIMEOUT")
        .ok()
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|&t| t > 0)
        .unwrap_or(30);
    Duration::from_secs(secs)
}

/// [`timeout`] as the clouds' builders take it.
fn timeout_text() -> String {
    format!("{}s", timeout().as_secs())
}

/// For plain HTTP(S) stores; the clouds' builders take theirs (proxies)
/// from the environment, with these same timeouts.
fn client_options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_allow_http(allow_http)
        .with_timeout(timeout())
        .with_connect_timeout(Duration::from_secs(5))
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

fn env_true(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// Where the AWS credential chain will find credentials, in words.
fn aws_credentials() -> String {
    if env_true("AWS_SKIP_SIGNATURE") {
        "none (AWS_SKIP_SIGNATURE: anonymous requests)".into()
    } else if env_set("AWS_ACCESS_KEY_ID") {
        "the environment (AWS_ACCESS_KEY_ID)".into()
    } else if env_set("AWS_WEB_IDENTITY_TOKEN_FILE") {
        "web identity (AWS_WEB_IDENTITY_TOKEN_FILE)".into()
    } else if env_set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") || env_set("AWS_CONTAINER_CREDENTIALS_FULL_URI") {
        "the container credentials endpoint".into()
    } else {
        "instance metadata (no AWS_ACCESS_KEY_ID in the environment)".into()
    }
}

/// Whether an instance-metadata service answers (one connection attempt of
/// at most a second, once per process). The clients would otherwise retry
/// it for a minute before saying that no credentials were found.
fn metadata_reachable() -> bool {
    static REACHABLE: OnceLock<bool> = OnceLock::new();
    *REACHABLE.get_or_init(|| {
        let at = std::net::SocketAddr::from(([169, 254, 169, 254], 80));
        std::net::TcpStream::connect_timeout(&at, Duration::from_secs(1)).is_ok()
    })
}

/// The error for a store whose only credentials would be instance metadata
/// when no metadata service answers.
fn no_credentials(what: &str) -> String {
    format!(
        "no credentials found: {what}, and no instance-metadata service answers; \
         set them in the environment, or AWS_SKIP_SIGNATURE=true (GOOGLE_SKIP_SIGNATURE, \
         AZURE_SKIP_SIGNATURE) for a public bucket"
    )
}

/// Whether any variable starting with `prefix` and holding one of `words`
/// is set (a credential of some kind for that cloud).
fn env_any(prefix: &str, words: &[&str]) -> bool {
    std::env::vars_os().any(|(k, v)| {
        let k = k.to_string_lossy();
        !v.is_empty() && k.starts_with(prefix) && words.iter().any(|w| k.contains(w))
    })
}

/// The store for `root`, built once per root and shared.
fn store(root: &str) -> Result<Store, String> {
    // The runtime installs the TLS provider the clients are built with.
    runtime();
    static STORES: OnceLock<Mutex<HashMap<String, Store>>> = OnceLock::new();
    let stores = STORES.get_or_init(Default::default);
    if let Some(s) = stores.lock().unwrap_or_else(|e| e.into_inner()).get(root) {
        return Ok(s.clone());
    }
    let scheme = root.split_once("://").map_or("", |(s, _)| s);
    let built: Result<(Arc<dyn ObjectStore>, String), object_store::Error> = match scheme {
        "s3" | "s3a" => {
            let anonymous = env_true("AWS_SKIP_SIGNATURE");
            let in_env = env_any(
                "AWS_",
                &[
                    "ACCESS_KEY",
                    "WEB_IDENTITY",
                    "CONTAINER_",
                    "CREDENTIALS_URI",
                    "METADATA",
                ],
            );
            // The AWS CLI's files, which `object_store` does not read.
            let profile = (!anonymous && !env_set("AWS_ACCESS_KEY_ID"))
                .then(super::awsprofile::profile)
                .flatten();
            let keys = profile.as_ref().and_then(|p| {
                Some((
                    p.access_key_id.clone()?,
                    p.secret_access_key.clone()?,
                    p.session_token.clone(),
                ))
            });
            if let Some(p) = &profile
                && keys.is_none()
                && !in_env
                && let Some(how) = &p.other_source
            {
                return Err(format!(
                    "the AWS profile {name} gets its credentials through {how}, which preflight does not follow; \
                     export them first: eval \"$(aws configure export-credentials --profile {name} --format env)\"",
                    name = p.name
                ));
            }
            if !anonymous && !in_env && keys.is_none() && !metadata_reachable() {
                return Err(no_credentials(
                    "no AWS_ACCESS_KEY_ID or other AWS_* credentials, no keys in ~/.aws",
                ));
            }
            let endpoint_http = std::env::var("AWS_ENDPOINT_URL")
                .or_else(|_| std::env::var("AWS_ENDPOINT"))
                .is_ok_and(|e| e.starts_with("http://"));
            // An S3-compatible server named by an http:// endpoint is
            // reached over plain HTTP, as the user wrote it.
            let mut b = object_store::aws::AmazonS3Builder::from_env()
                .with_url(root)
                .with_retry(retry());
            if endpoint_http {
                b = b.with_allow_http(true);
            }
            b = b.with_config(
                object_store::aws::AmazonS3ConfigKey::Client(object_store::ClientConfigKey::Timeout),
                timeout_text(),
            );
            let mut from = aws_credentials();
            if let (Some(p), Some((id, secret, token))) = (&profile, keys) {
                b = b.with_access_key_id(id).with_secret_access_key(secret);
                if let Some(t) = token {
                    b = b.with_token(t);
                }
                from = format!("the AWS profile {} (~/.aws/credentials)", p.name);
            }
            if !env_set("AWS_REGION")
                && !env_set("AWS_DEFAULT_REGION")
                && let Some(region) = profile.as_ref().and_then(|p| p.region.clone())
            {
                b = b.with_region(region);
            }
            b.build().map(|s| (Arc::new(s) as Arc<dyn ObjectStore>, from))
        }
        "gs" if !env_true("GOOGLE_SKIP_SIGNATURE")
            && !env_any("GOOGLE_", &["CREDENTIALS", "SERVICE_ACCOUNT"])
            && !metadata_reachable() =>
        {
            return Err(no_credentials(
                "no GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_SERVICE_ACCOUNT",
            ));
        }
        "gs" => object_store::gcp::GoogleCloudStorageBuilder::from_env()
            .with_url(root)
            .with_retry(retry())
            .with_config(
                object_store::gcp::GoogleConfigKey::Client(object_store::ClientConfigKey::Timeout),
                timeout_text(),
            )
            .build()
            .map(|s| {
                let from = if env_set("GOOGLE_APPLICATION_CREDENTIALS") {
                    "GOOGLE_APPLICATION_CREDENTIALS"
                } else {
                    "application default credentials / instance metadata"
                };
                (Arc::new(s) as Arc<dyn ObjectStore>, from.to_string())
            }),
        "az" | "abfs"
            if !env_true("AZURE_SKIP_SIGNATURE")
                && !env_any(
                    "AZURE_",
                    &["KEY", "SAS", "TOKEN", "SECRET", "CLIENT", "FEDERATED", "EMULATOR"],
                )
                && !metadata_reachable() =>
        {
            return Err(no_credentials(
                "no AZURE_STORAGE_ACCOUNT_KEY, SAS token or client secret",
            ));
        }
        "az" | "abfs" => object_store::azure::MicrosoftAzureBuilder::from_env()
            .with_url(root)
            .with_retry(retry())
            .with_config(
                object_store::azure::AzureConfigKey::Client(object_store::ClientConfigKey::Timeout),
                timeout_text(),
            )
            .build()
            .map(|s| {
                let from = if env_set("AZURE_STORAGE_ACCOUNT_KEY") || env_set("AZURE_STORAGE_ACCESS_KEY") {
                    "the environment (AZURE_STORAGE_ACCOUNT_KEY)"
                } else if env_set("AZURE_STORAGE_SAS_KEY") || env_set("AZURE_STORAGE_SAS_TOKEN") {
                    "the environment (a SAS token)"
                } else {
                    "managed identity / instance metadata"
                };
                (Arc::new(s) as Arc<dyn ObjectStore>, from.to_string())
            }),
        "hf" => {
            let hub = super::hub::parse(root)?;
            let (token, from) = super::hub::token();
            let mut headers = reqwest::header::HeaderMap::new();
            if let Some(t) = token {
                let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {t}"))
                    .map_err(|_| "the Hugging Face token is not a valid header value".to_string())?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
            let base = super::hub::resolve_root(&hub);
            object_store::http::HttpBuilder::new()
                .with_url(base.as_str())
                .with_retry(retry())
                .with_client_options(client_options(base.starts_with("http://")).with_default_headers(headers))
                .build()
                .map(|s| (Arc::new(s) as Arc<dyn ObjectStore>, from.to_string()))
        }
        // A URL typed with http:// is read over plain HTTP as typed; its
        // `user:password@` is sent as Basic authorization.
        "http" | "https" => {
            let (root, basic) = basic_auth(root);
            let mut headers = reqwest::header::HeaderMap::new();
            let from = match basic {
                Some(b) => {
                    let mut value = reqwest::header::HeaderValue::from_str(&b)
                        .map_err(|_| "the URL's user name or password is not a valid header value".to_string())?;
                    value.set_sensitive(true);
                    headers.insert(reqwest::header::AUTHORIZATION, value);
                    "the URL's user name and password (HTTP Basic)"
                }
                None => "none (plain HTTP)",
            };
            object_store::http::HttpBuilder::new()
                .with_url(root)
                .with_retry(retry())
                .with_client_options(client_options(scheme == "http").with_default_headers(headers))
                .build()
                .map(|s| (Arc::new(s) as Arc<dyn ObjectStore>, from.to_string()))
        }
        _ => return Err(format!("unsupported URL scheme {scheme}://")),
    };
    let (store, credentials) = built.map_err(|e| match e.to_string() {
        t if t.contains("Account must be specified") => "no Azure storage account: set AZURE_STORAGE_ACCOUNT_NAME, \
                                                        or name it in the URL (abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH)"
            .to_string(),
        t => redact(&format!("cannot set up the client: {t}")),
    })?;
    let s = Store { store, credentials };
    stores
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(root.to_string(), s.clone());
    Ok(s)
}

/// An `http(s)://` root without its `user:password@`, and that userinfo
/// as a Basic authorization header's value (percent-escapes decoded, as
/// browsers and curl send it).
fn basic_auth(root: &str) -> (String, Option<String>) {
    let Some(at) = root.find("://").map(|i| i + 3) else {
        return (root.to_string(), None);
    };
    let end = root[at..].find(['/', '?', '#']).map_or(root.len(), |i| at + i);
    let Some(sign) = root[at..end].rfind('@').map(|i| at + i) else {
        return (root.to_string(), None);
    };
    let info = &root[at..sign];
    let (user, password) = info.split_once(':').unwrap_or((info, ""));
    let pair = format!(
        "{}:{}",
        crate::redact::percent_decode(user),
        crate::redact::percent_decode(password)
    );
    (
        format!("{}{}", &root[..at], &root[sign + 1..]),
        Some(format!("Basic {}", base64(pair.as_bytes()))),
    )
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// Sizes of the objects listings found, by URL: opening a listed object
/// needs no request for its size.
fn listed() -> &'static Mutex<HashMap<String, u64>> {
    static LISTED: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    LISTED.get_or_init(Default::default)
}

/// The size of a URL's object as its listing gave it, if it was listed.
pub(crate) fn listed_size(url: &Path) -> Option<u64> {
    let url = url.to_str()?;
    listed().lock().unwrap_or_else(|e| e.into_inner()).get(url).copied()
}

/// [`listed_size`] once every listing of a folder above the URL started by
/// [`list_below_later`] has ended.
pub(crate) fn listed_size_after_listings(url: &Path) -> Option<u64> {
    let url = url.to_str()?;
    let running: Vec<Arc<Later>> = later()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|l| l.folders.iter().any(|f| url.starts_with(f.as_str())))
        .cloned()
        .collect();
    for listing in running {
        let mut ended = listing.ended.lock().unwrap_or_else(|e| e.into_inner());
        while !*ended {
            ended = listing.end.wait(ended).unwrap_or_else(|e| e.into_inner());
        }
    }
    listed().lock().unwrap_or_else(|e| e.into_inner()).get(url).copied()
}

/// Whether a listing [`list_below_later`] started, still running, covers
/// the URL.
pub(crate) fn being_listed(url: &Path) -> bool {
    let Some(url) = url.to_str() else {
        return false;
    };
    later().lock().unwrap_or_else(|e| e.into_inner()).iter().any(|l| {
        !*l.ended.lock().unwrap_or_else(|e| e.into_inner()) && l.folders.iter().any(|f| url.starts_with(f.as_str()))
    })
}

/// A listing running on a thread of its own.
struct Later {
    folders: Vec<String>,
    ended: Mutex<bool>,
    end: std::sync::Condvar,
}

fn later() -> &'static Mutex<Vec<Arc<Later>>> {
    static LATER: OnceLock<Mutex<Vec<Arc<Later>>>> = OnceLock::new();
    LATER.get_or_init(Default::default)
}

/// [`list_below`], on a thread of its own: the sizes it finds are there for
/// [`listed_size`], which waits for it; what it cannot list is simply not
/// listed (a caller then reads the object itself).
pub(crate) fn list_below_later(folders: Vec<String>, hidden: bool) {
    let listing = Arc::new(Later {
        folders,
        ended: Mutex::new(false),
        end: std::sync::Condvar::new(),
    });
    let mut running = later().lock().unwrap_or_else(|e| e.into_inner());
    running.retain(|l| !*l.ended.lock().unwrap_or_else(|e| e.into_inner()));
    running.push(listing.clone());
    drop(running);
    let finish = move |listing: &Later| {
        let _ = list_below(&listing.folders, hidden);
        *listing.ended.lock().unwrap_or_else(|e| e.into_inner()) = true;
        listing.end.notify_all();
    };
    let theirs = listing.clone();
    let spawned = std::thread::Builder::new()
        .name("preflight-list".into())
        .spawn(move || finish(&theirs));
    // No thread to be had: listed now.
    if spawned.is_err() {
        finish(&listing);
    }
}

/// The objects a URL names, as a directory search finds files: a URL
/// ending in `/` is a prefix, one with glob characters (`*`, `?`, `[`) a
/// pattern over keys (`*` stops at `/`; an object below a matched prefix is
/// in), any other URL a prefix when objects lie below it and else one
/// object. Sorted URLs with their sizes; an empty list when nothing is
/// there (the caller says so).
pub(crate) fn list(url: &str) -> Result<Vec<(String, u64)>, String> {
    list_keys(url, false)
}

/// [`list`] with hidden entries kept (torchvision's `ImageFolder` counts a
/// hidden class folder as a class).
pub(crate) fn list_with_hidden(url: &str) -> Result<Vec<(String, u64)>, String> {
    list_keys(url, true)
}

/// A folder in storage as one listing with a delimiter shows it.
#[derive(Debug, Default)]
pub(crate) struct Folder {
    /// The objects right in it: URL and size.
    pub objects: Vec<(String, u64)>,
    /// Its sub-folders' URLs, each ending in `/`.
    pub folders: Vec<String>,
}

/// The top level of the folder `url` names (a prefix in S3, GCS or Azure,
/// `/` implied at its end): one listing with a delimiter, so that what
/// lies below its sub-folders is listed only by those who need it (a
/// table's root is known by its top level). Hidden entries are kept.
pub(crate) fn list_folder(url: &str) -> Result<Folder, String> {
    let (root, key) = split(url).ok_or_else(|| not_a_url(url))?;
    if is_http(url) || root.starts_with("hf://") {
        return Err("only S3, GCS and Azure list one folder's top level".into());
    }
    let store = store(root)?;
    let prefix = key.trim_end_matches('/');
    let prefix_path = (!prefix.is_empty()).then(|| ObjPath::from(prefix));
    let page = runtime()
        .block_on(store.store.list_with_delimiter(prefix_path.as_ref()))
        .map_err(|e| describe(&e, &store.credentials))?;
    let mut objects: Vec<(String, u64)> = page
        .objects
        .into_iter()
        .map(|m| (format!("{root}/{}", m.location.as_ref()), m.size))
        .collect();
    objects.sort();
    let mut folders: Vec<String> = page
        .common_prefixes
        .into_iter()
        .map(|p| format!("{root}/{}/", p.as_ref()))
        .collect();
    folders.sort();
    let mut sizes = listed().lock().unwrap_or_else(|e| e.into_inner());
    for (u, size) in &objects {
        sizes.insert(u.clone(), *size);
    }
    Ok(Folder { objects, folders })
}

/// Every object below each of `folders` (folder URLs), as [`list`] (or,
/// with `hidden`, [`list_with_hidden`]) lists one, the folders listed at
/// once: a listing is paged, so many small listings side by side finish
/// long before one big one. Sorted; the first error is the answer.
pub(crate) fn list_below(folders: &[String], hidden: bool) -> Result<Vec<(String, u64)>, String> {
    const AT_ONCE: usize = 16;
    let next = std::sync::atomic::AtomicUsize::new(0);
    type Listing = Result<Vec<(String, u64)>, String>;
    let mut listings: Vec<(usize, Listing)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..folders.len().min(AT_ONCE))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(f) = folders.get(i) else { break mine };
                        mine.push((i, list_keys(f, hidden)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|_| vec![(0, Err("a listing thread failed".to_string()))])
            })
            .collect()
    });
    // The first folder's error, whichever listing ended first.
    listings.sort_by_key(|l| l.0);
    let mut found = Vec::new();
    for (_, listing) in listings {
        found.extend(listing?);
    }
    found.sort();
    Ok(found)
}

fn list_keys(url: &str, hidden: bool) -> Result<Vec<(String, u64)>, String> {
    let (root, key) = split(url).ok_or_else(|| not_a_url(url))?;
    if is_http(url) {
        return Err(
            "plain HTTP has no listing: an http(s):// URL names one file (name each file, \
                    or read the folder through s3://, gs://, az:// or hf://)"
                .into(),
        );
    }
    let store = store(root)?;
    let glob_at = key.find(['*', '?', '[']);
    let prefix = match glob_at {
        Some(i) => key[..i].rsplit_once('/').map_or("", |(p, _)| p),
        None => key.trim_end_matches('/'),
    };
    // A pattern ending in `/` matches folders only (as a shell glob does).
    let folders_only = key.ends_with('/');
    let pattern = match glob_at {
        Some(_) => Some(glob::Pattern::new(key.trim_end_matches('/')).map_err(|e| format!("invalid glob: {e}"))?),
        None => None,
    };
    let metas: Vec<(String, u64)> = if root.starts_with("hf://") {
        hub_list(root, prefix, &store.credentials)?
    } else {
        let prefix_path = (!prefix.is_empty()).then(|| ObjPath::from(prefix));
        runtime()
            .block_on(store.store.list(prefix_path.as_ref()).try_collect::<Vec<_>>())
            .map_err(|e| describe(&e, &store.credentials))?
            .into_iter()
            .map(|m| (m.location.as_ref().to_string(), m.size))
            .collect()
    };
    // A key with glob characters that is there (`br[1].parquet`, or a
    // folder so named) is itself, as a local path that exists is.
    let literal = key.trim_end_matches('/');
    let is_literal = |k: &str| k == literal || k.strip_prefix(literal).is_some_and(|r| r.starts_with('/'));
    let pattern = pattern.filter(|_| !metas.iter().any(|(k, _)| is_literal(k)));
    let options = glob::MatchOptions {
        require_literal_separator: true,
        ..Default::default()
    };
    let mut found = Vec::new();
    for (k, size) in metas {
        let k = k.as_str();
        if let Some(p) = &pattern {
            // The key (a file), or a folder above it, matches.
            let mut hit = !folders_only && p.matches_with(k, options);
            let mut at = 0;
            while !hit && let Some(i) = k[at..].find('/') {
                at += i + 1;
                hit = p.matches_with(&k[..at - 1], options);
            }
            if !hit {
                continue;
            }
        } else if glob_at.is_some() && !is_literal(k) {
            continue;
        }
        // Hidden entries below the prefix are skipped, as a local search
        // skips them (a hidden folder named in the URL is searched).
        let below = k.strip_prefix(prefix).unwrap_or(k);
        if !hidden && below.split('/').any(|s| s.starts_with('.')) {
            continue;
        }
        found.push((format!("{root}/{k}"), size));
    }
    found.sort();
    let mut sizes = listed().lock().unwrap_or_else(|e| e.into_inner());
    for (u, size) in &found {
        sizes.insert(u.clone(), *size);
    }
    Ok(found)
}

/// The files (path, size) below `prefix` of a Hub dataset, through its
/// tree API, page by page; throttling and 5xx retried with backoff.
fn hub_list(root: &str, prefix: &str, credentials: &str) -> Result<Vec<(String, u64)>, String> {
    let hub = super::hub::parse(root)?;
    let (token, _) = super::hub::token();
    let retries = retry().max_retries;
    runtime().block_on(async {
        let client = reqwest::Client::builder()
            .timeout(timeout())
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|_| "cannot set up the HTTP client".to_string())?;
        let mut next = Some(super::hub::tree_url(&hub, prefix));
        let mut files = Vec::new();
        while let Some(url) = next.take() {
            let mut tries = 0;
            let response = loop {
                let mut request = client.get(&url);
                if let Some(t) = &token {
                    request = request.bearer_auth(t);
                }
                let r = request.send().await;
                let retry = match &r {
                    Ok(r) => r.status().as_u16() == 429 || r.status().is_server_error(),
                    Err(e) => e.is_connect() || e.is_timeout(),
                };
                if !retry || tries >= retries {
                    break r;
                }
                tries += 1;
                let wait = Duration::from_millis(100u64 << tries.min(7)).min(Duration::from_secs(15));
                tokio::time::sleep(wait).await;
            };
            let after = if tries > 0 {
                format!(" after {tries} retries")
            } else {
                String::new()
            };
            let response = response.map_err(|e| {
                if e.is_timeout() {
                    format!("listing the Hub timed out{after}")
                } else {
                    format!("cannot connect to the Hub{after}")
                }
            })?;
            match response.status().as_u16() {
                200 => {}
                // A path that is no folder: nothing below it.
                404 if !prefix.is_empty() => return Ok(files),
                401 | 403 => {
                    return Err(format!(
                        "access denied (HTTP {}); token from {credentials}",
                        response.status().as_u16()
                    ));
                }
                404 => return Err("the dataset or revision is not on the Hub (HTTP 404)".into()),
                429 => return Err(format!("throttled (HTTP 429){after}")),
                s => return Err(format!("the Hub answered HTTP {s}{after}")),
            }
            next = response
                .headers()
                .get(reqwest::header::LINK)
                .and_then(|l| l.to_str().ok())
                .and_then(super::hub::next_link);
            let body = response
                .text()
                .await
                .map_err(|_| "the Hub's listing was cut off".to_string())?;
            files.extend(super::hub::files_of_page(&body)?);
        }
        Ok(files)
    })
}

/// The ETag each object's first response came with, by URL, for the
/// whole run: every later request for that object (by any reader, any
/// thread) carries it as `If-Match` and must come back with it.
fn pins() -> &'static Mutex<HashMap<String, String>> {
    static PINS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    PINS.get_or_init(Default::default)
}

/// One request: `range` of the object (its metadata alone for `None`),
/// sent with `if_match`; a response of another version (a server that
/// ignores `If-Match`) is refused here too.
async fn get(
    store: Arc<dyn ObjectStore>,
    key: ObjPath,
    range: Option<GetRange>,
    if_match: Option<String>,
) -> Result<(object_store::ObjectMeta, Bytes), object_store::Error> {
    let options = GetOptions {
        head: range.is_none(),
        range,
        if_match: if_match.clone(),
        ..Default::default()
    };
    let r = store.get_opts(&key, options).await?;
    let meta = r.meta.clone();
    if let (Some(pinned), Some(now)) = (&if_match, &meta.e_tag)
        && pinned != now
    {
        return Err(object_store::Error::Precondition {
            path: key.to_string(),
            source: "the ETag changed".into(),
        });
    }
    let bytes = r.bytes().await?;
    REQUESTS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    Ok((meta, bytes))
}

/// Object requests answered so far (listings aside), for the progress bar.
static REQUESTS: AtomicU64 = AtomicU64::new(0);
/// Bytes those requests brought.
static BYTES: AtomicU64 = AtomicU64::new(0);

/// (requests, bytes) of object reads so far in this process.
pub(crate) fn traffic() -> (u64, u64) {
    (REQUESTS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed))
}

/// Objects read whole as [`Object::whole_within`] reads one (each within
/// its limit, `limits[i]` bytes), many requests in flight at once (many
/// small files, such as a table's manifests, wait on round trips, not on
/// bandwidth). Each arrival is handed to `each` on the rayon pool while the
/// rest are still in flight, so a slow response holds up nothing else. At
/// most `budget` bytes of limits are fetched or being handed at once (one
/// object always), which bounds memory. The results are in the order of
/// `urls`; once `each` gives an error no further object is fetched, and the
/// error of the first object (by order) that has one is the answer (every
/// object before it was fetched, so that answer does not depend on timing).
pub(crate) fn wholes_each<T: Send, E: Send>(
    urls: &[&Path],
    limits: &[u64],
    budget: u64,
    each: impl Fn(usize, Result<Result<Bytes, u64>, ReadError>) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    use futures_util::FutureExt;
    use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
    // A panic on either side comes back as a message, never as a silence
    // this loop would wait on forever.
    enum Done {
        Fetched(usize, Result<Result<Bytes, u64>, ReadError>),
        /// Whether `each` gave a value (not an error), or its panic.
        Handed(usize, std::thread::Result<bool>),
    }
    let (tx, rx) = std::sync::mpsc::channel::<Done>();
    let out: Vec<Mutex<Option<Result<T, E>>>> = std::iter::repeat_with(|| Mutex::new(None)).take(urls.len()).collect();
    let hand = |i: usize, fetched| {
        catch_unwind(AssertUnwindSafe(|| {
            let value = each(i, fetched);
            let ok = value.is_ok();
            *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
            ok
        }))
    };
    // This loop blocks while it waits, so it runs on the calling thread and
    // hands objects to the pool; on a thread of a rayon pool (perhaps its
    // only one) it hands them itself, as blocking there could leave the
    // handing undone.
    let in_pool = rayon::current_thread_index().is_some();
    let (mut next, mut held, mut busy, mut failed) = (0, 0u64, 0usize, false);
    rayon::in_place_scope(|s| {
        loop {
            while !failed && next < urls.len() && (busy == 0 || held.saturating_add(limits[next]) <= budget) {
                let (i, limit, tx) = (next, limits[next], tx.clone());
                match Object::open(urls[i]) {
                    Ok(o) => {
                        runtime().spawn(async move {
                            let fetched = AssertUnwindSafe(o.whole_within_async(limit))
                                .catch_unwind()
                                .await
                                .unwrap_or_else(|_| Err(ReadError::new("the read failed (a panic in the I/O layer)")));
                            let _ = tx.send(Done::Fetched(i, fetched));
                        });
                    }
                    Err(e) => {
                        let _ = tx.send(Done::Fetched(i, Err(e)));
                    }
                }
                held = held.saturating_add(limit);
                (next, busy) = (next + 1, busy + 1);
            }
            if busy == 0 {
                break;
            }
            let done = match rx.recv() {
                Ok(Done::Fetched(i, fetched)) if in_pool => (i, hand(i, fetched)),
                Ok(Done::Fetched(i, fetched)) => {
                    let (tx, hand) = (tx.clone(), &hand);
                    s.spawn(move |_| {
                        let _ = tx.send(Done::Handed(i, hand(i, fetched)));
                    });
                    continue;
                }
                Ok(Done::Handed(i, handed)) => (i, handed),
                // Unreachable while `tx` is held here.
                Err(_) => break,
            };
            match done {
                (_, Err(panic)) => resume_unwind(panic),
                (i, Ok(ok)) => {
                    held = held.saturating_sub(limits[i]);
                    busy -= 1;
                    failed |= !ok;
                }
            }
        }
    });
    // In order, every object up to the first error was handed.
    out.into_iter()
        .map_while(|slot| slot.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// One object, read by ranges pinned to the version its first response
/// came from.
#[derive(Clone)]
pub(crate) struct Object {
    store: Store,
    key: ObjPath,
    url: String,
    size: Option<u64>,
}

impl Object {
    /// The object at `url` (no request yet).
    pub(crate) fn open(url: &Path) -> Result<Object, ReadError> {
        let text = url.to_str().ok_or_else(|| ReadError::new("a URL must be UTF-8"))?;
        let (root, key) = split(text).ok_or_else(|| ReadError::new(not_a_url(text)))?;
        if key.is_empty() || key.ends_with('/') {
            return Err(ReadError::new("names no object (a prefix with nothing below it)"));
        }
        let (root, key) = match is_http(text) {
            true => (http_root(text).unwrap_or_default(), http_key(key)),
            false => (root.to_string(), key.to_string()),
        };
        let store = store(&root).map_err(ReadError::new)?;
        let key = ObjPath::parse(key).map_err(|e| ReadError::new(format!("not an object key: {e}")))?;
        Ok(Object {
            store,
            key,
            url: text.to_string(),
            size: listed_size(url),
        })
    }

    /// The ETag pinned for this object, if a response came already.
    fn pinned(&self) -> Option<String> {
        pins().lock().unwrap_or_else(|e| e.into_inner()).get(&self.url).cloned()
    }

    /// One request (see [`get`]) that pins the object's version when it is
    /// the first, and checks the size against the listing's.
    fn request(&self, range: Option<GetRange>) -> Result<(u64, Bytes), ReadError> {
        if let (Some(r), Some(all)) = (&range, self.kept_whole()) {
            return Ok((all.len() as u64, slice(&all, r)));
        }
        let store = &self.store;
        let (meta, bytes) =
            match runtime().block_on(get(store.store.clone(), self.key.clone(), range.clone(), self.pinned())) {
                Ok(got) => got,
                Err(e) if ignores_range(&e) => {
                    let all = self.whole()?;
                    let r = range.unwrap_or(GetRange::Offset(0));
                    return Ok((all.len() as u64, slice(&all, &r)));
                }
                Err(e) => return Err(ReadError::new(describe(&e, &store.credentials))),
            };
        self.pin(&meta)?;
        Ok((meta.size, bytes))
    }

    /// The object read whole, for a server that answers a ranged GET with
    /// all of it (200, not 206; Python's `http.server` is one): one plain
    /// GET when it is at most [`WHOLE_MAX`] bytes, kept for the readers
    /// that open it again; a larger one is refused, naming its size.
    fn whole(&self) -> Result<Bytes, ReadError> {
        if let Some(all) = self.kept_whole() {
            return Ok(all);
        }
        let all = self.whole_within(WHOLE_MAX)?.map_err(|size| {
            ReadError::new(format!(
                "the server does not serve byte ranges (it answered a ranged GET with the whole object); \
                 objects up to {} MiB are then read whole, and this one is {size} bytes: serve it from a \
                 server that answers Range requests, or download it and check the copy",
                WHOLE_MAX >> 20
            ))
        })?;
        let mut kept = wholes().lock().unwrap_or_else(|e| e.into_inner());
        kept.push_back((self.url.clone(), all.clone()));
        let mut total: u64 = kept.iter().map(|(_, b)| b.len() as u64).sum();
        while total > WHOLE_KEPT && kept.len() > 1 {
            total -= kept.pop_front().map_or(0, |(_, b)| b.len() as u64);
        }
        Ok(all)
    }

    /// The whole object in one GET (not a size request first: a file read
    /// whole, such as a table's metadata or manifest, costs one round trip),
    /// or, when it is larger than `limit` bytes, its size with the body
    /// left unread.
    pub(crate) fn whole_within(&self, limit: u64) -> Result<Result<Bytes, u64>, ReadError> {
        runtime().block_on(self.whole_within_async(limit))
    }

    async fn whole_within_async(&self, limit: u64) -> Result<Result<Bytes, u64>, ReadError> {
        if let Some(size) = self.size
            && size > limit
        {
            return Ok(Err(size));
        }
        let store = &self.store;
        let options = GetOptions {
            if_match: self.pinned(),
            ..Default::default()
        };
        let got = async {
            let r = store.store.get_opts(&self.key, options).await?;
            let meta = r.meta.clone();
            if meta.size > limit {
                return Ok((meta, None));
            }
            let bytes = r.bytes().await?;
            REQUESTS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            Ok::<_, object_store::Error>((meta, Some(bytes)))
        };
        let (meta, all) = got
            .await
            .map_err(|e| ReadError::new(describe(&e, &store.credentials)))?;
        self.pin(&meta)?;
        match all {
            None => Ok(Err(meta.size)),
            Some(all) if all.len() as u64 != meta.size => Err(changed()),
            Some(all) => Ok(Ok(all)),
        }
    }

    /// This object as [`Object::whole`] read it, if it is kept.
    fn kept_whole(&self) -> Option<Bytes> {
        if !is_http(&self.url) {
            return None;
        }
        let kept = wholes().lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().find(|(u, _)| *u == self.url).map(|(_, b)| b.clone())
    }

    /// Pins the version a response came from (the first), or checks that
    /// it is the pinned one; and that the size is the listing's.
    fn pin(&self, meta: &object_store::ObjectMeta) -> Result<(), ReadError> {
        if let Some(size) = self.size
            && meta.size != size
        {
            return Err(changed());
        }
        if let Some(etag) = &meta.e_tag {
            let mut pins = pins().lock().unwrap_or_else(|e| e.into_inner());
            if pins.entry(self.url.clone()).or_insert_with(|| etag.clone()) != etag {
                return Err(changed());
            }
        }
        Ok(())
    }

    /// The object's size: from the listing, or one metadata request.
    pub(crate) fn size(&self) -> Result<u64, ReadError> {
        match self.size {
            Some(size) => Ok(size),
            None => self.request(None).map(|(size, _)| size),
        }
    }

    /// The object's size when its listing gave it (no request).
    pub(crate) fn listed_size(&self) -> Option<u64> {
        self.size
    }

    /// The last `n` bytes (all of a smaller object), with the object's
    /// size: one request, which pins the object's version.
    pub(crate) fn tail(&self, n: u64) -> Result<(u64, Bytes), ReadError> {
        match self.size {
            Some(0) => Ok((0, Bytes::new())),
            Some(size) => self.request(Some(GetRange::Bounded(size.saturating_sub(n)..size))),
            // Azure takes no suffix range: the size first (one HEAD).
            None if self.url.starts_with("az://") || self.url.starts_with("abfs://") => match self.request(None)? {
                (0, _) => Ok((0, Bytes::new())),
                (size, _) => self.request(Some(GetRange::Bounded(size.saturating_sub(n)..size))),
            },
            None => match self.request(Some(GetRange::Suffix(n))) {
                // A range of an empty object: S3 answers 416 or the whole
                // (empty) object, so its size says what happened.
                Err(e) if e.message.contains("Range") || e.message.contains("HTTP 416") => match self.request(None) {
                    Ok((0, _)) => Ok((0, Bytes::new())),
                    _ => Err(e),
                },
                ok => ok,
            },
        }
    }

    /// The bytes of `ranges` (of the version [`Object::tail`] pinned),
    /// nearby ones merged into one request, several requests at once.
    pub(crate) fn ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, ReadError> {
        self.ranges_merged(ranges, COALESCE)
    }

    /// [`Object::ranges`] with only touching ranges merged: one request
    /// each (page headers scattered over a column chunk, whose gaps are
    /// the values a read does not want).
    pub(crate) fn ranges_apart(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>, ReadError> {
        self.ranges_merged(ranges, 0)
    }

    fn ranges_merged(&self, ranges: &[Range<u64>], coalesce: u64) -> Result<Vec<Bytes>, ReadError> {
        let etag = self.pinned();
        let store = &self.store;
        let fetch = |r: Range<u64>| {
            let store = store.store.clone();
            let key = self.key.clone();
            let etag = etag.clone();
            async move {
                let (meta, bytes) = get(store, key.clone(), Some(GetRange::Bounded(r)), etag).await?;
                // The first response pins the version (a listed object's
                // first request may be this one), later ones must match it.
                self.pin(&meta).map_err(|_| object_store::Error::Precondition {
                    path: key.to_string(),
                    source: "the object changed".into(),
                })?;
                Ok(bytes)
            }
        };
        if let Some(all) = self.kept_whole() {
            return Ok(ranges
                .iter()
                .map(|r| slice(&all, &GetRange::Bounded(r.clone())))
                .collect());
        }
        match runtime().block_on(object_store::coalesce_ranges(ranges, fetch, coalesce)) {
            Ok(got) => Ok(got),
            Err(e) if ignores_range(&e) => {
                let all = self.whole()?;
                Ok(ranges
                    .iter()
                    .map(|r| slice(&all, &GetRange::Bounded(r.clone())))
                    .collect())
            }
            Err(e) => Err(ReadError::new(describe(&e, &store.credentials))),
        }
    }

    /// The object read from its start, block by block (see [`Stream`]).
    pub(crate) fn stream(self) -> Result<Stream, ReadError> {
        let size = self.size()?;
        Ok(Stream {
            object: self,
            size,
            pos: 0,
            buf: Bytes::new(),
            ahead: None,
        })
    }
}

/// Bytes a [`Stream`] asks for per request.
const BLOCK: u64 = 8 * 1024 * 1024;

/// An object read in order, as a file is read: one ranged request per
/// `BLOCK`, the next block requested while this one is read. Memory is
/// two blocks per open stream, whatever the object's size; nothing is
/// written to disk.
pub(crate) struct Stream {
    object: Object,
    size: u64,
    /// Where the next block starts.
    pos: u64,
    /// What is left of the block being read.
    buf: Bytes,
    /// The next block, in flight.
    ahead: Option<tokio::task::JoinHandle<Result<(object_store::ObjectMeta, Bytes), object_store::Error>>>,
}

impl Stream {
    /// The request for the block at `pos`, started.
    fn start(
        &self,
        pos: u64,
    ) -> tokio::task::JoinHandle<Result<(object_store::ObjectMeta, Bytes), object_store::Error>> {
        let range = GetRange::Bounded(pos..(pos + BLOCK).min(self.size));
        let f = get(
            self.object.store.store.clone(),
            self.object.key.clone(),
            Some(range),
            self.object.pinned(),
        );
        runtime().spawn(f)
    }

    /// The next block into `buf`; an empty `buf` at the end.
    fn fill(&mut self) -> Result<(), ReadError> {
        if self.pos >= self.size {
            return Ok(());
        }
        if let Some(all) = self.object.kept_whole() {
            return self.rest_of(all);
        }
        let ahead = match self.ahead.take() {
            Some(a) => a,
            None => self.start(self.pos),
        };
        let credentials = &self.object.store.credentials;
        let got = runtime()
            .block_on(ahead)
            .map_err(|_| ReadError::new("a request was cancelled"))?;
        let (meta, bytes) = match got {
            Ok(got) => got,
            Err(e) if ignores_range(&e) => {
                let all = self.object.whole()?;
                return self.rest_of(all);
            }
            Err(e) => return Err(ReadError::new(describe(&e, credentials))),
        };
        self.object.pin(&meta)?;
        let want = (self.size - self.pos).min(BLOCK);
        if meta.size != self.size || bytes.len() as u64 != want {
            return Err(changed());
        }
        self.pos += want;
        self.buf = bytes;
        if self.pos < self.size {
            self.ahead = Some(self.start(self.pos));
        }
        Ok(())
    }
}

impl Stream {
    /// The rest of the object from what [`Object::whole`] read.
    fn rest_of(&mut self, all: Bytes) -> Result<(), ReadError> {
        if all.len() as u64 != self.size {
            return Err(changed());
        }
        self.buf = all.slice(self.pos as usize..);
        self.pos = self.size;
        Ok(())
    }
}

impl std::io::Read for Stream {
    fn read(&mut self, dst: &mut [u8]) -> std::io::Result<usize> {
        if self.buf.is_empty() {
            self.fill().map_err(|e| std::io::Error::other(e.message))?;
        }
        let n = dst.len().min(self.buf.len());
        dst[..n].copy_from_slice(&self.buf[..n]);
        bytes::Buf::advance(&mut self.buf, n);
        Ok(n)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // A block requested ahead and no longer wanted.
        if let Some(a) = self.ahead.take() {
            a.abort();
        }
    }
}

/// Objects up to this size are read whole from a server that ignores
/// Range (see [`Object::whole`]); larger ones are refused.
const WHOLE_MAX: u64 = 64 << 20;

/// Whole objects kept for readers that open them again, by URL; the
/// oldest are dropped past this many bytes.
const WHOLE_KEPT: u64 = 256 << 20;

fn wholes() -> &'static Mutex<std::collections::VecDeque<(String, Bytes)>> {
    static KEPT: OnceLock<Mutex<std::collections::VecDeque<(String, Bytes)>>> = OnceLock::new();
    KEPT.get_or_init(Default::default)
}

/// Whether a request failed because the server answered a ranged GET with
/// the whole object (200).
fn ignores_range(e: &object_store::Error) -> bool {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&c.to_string());
        cause = c.source();
    }
    // (The HTTP client's words, and the other clients'.)
    text.contains("Range request not supported") || text.contains("non-partial response")
}

/// The bytes `range` names of a whole object (clamped to it).
fn slice(all: &Bytes, range: &GetRange) -> Bytes {
    let size = all.len() as u64;
    let (start, end) = match range {
        GetRange::Bounded(r) => (r.start, r.end),
        GetRange::Offset(o) => (*o, size),
        GetRange::Suffix(n) => (size.saturating_sub(*n), size),
    };
    let end = end.min(size);
    all.slice(start.min(end) as usize..end as usize)
}

fn changed() -> ReadError {
    ReadError::new(
        "the object changed while it was read (HTTP 412: its ETag no longer matches); \
         not checked as a mix of two versions",
    )
}

/// A client error in words: the status and cause, retries, where
/// credentials came from; never the client's own text with its timings
/// and URLs.
fn describe(e: &object_store::Error, credentials: &str) -> String {
    use object_store::Error as E;
    // The whole chain of causes (a timeout shows only in a cause's text).
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    let retries = text
        .split_once(", after ")
        .and_then(|(_, r)| r.split_once(" retries"))
        .and_then(|(n, _)| n.trim().parse::<u32>().ok())
        .map(|n| format!(" after {n} retries"))
        .unwrap_or_default();
    match e {
        E::NotFound { .. } => "not found (HTTP 404)".into(),
        E::PermissionDenied { .. } => format!("access denied (HTTP 403); credentials from {credentials}"),
        E::Unauthenticated { .. } => format!("not authenticated (HTTP 401); credentials from {credentials}"),
        E::Precondition { .. } => changed().message,
        // A listed key the client cannot take (`a//b`, `./`, `../`): the
        // listing fails as a whole.
        E::InvalidPath { source } => format!(
            "a key here cannot be read (the storage client takes no empty, `.` or `..` path segments): {source}"
        ),
        _ => {
            let status = text
                .split_once("status code: ")
                .and_then(|(_, s)| s.get(..3))
                .and_then(|s| s.parse::<u16>().ok());
            match status {
                Some(403) => format!("access denied (HTTP 403); credentials from {credentials}"),
                Some(404) => "not found (HTTP 404)".into(),
                Some(412) => changed().message,
                Some(429) | Some(503) => format!("throttled (HTTP {}){retries}", status.unwrap_or(0)),
                Some(s) => format!("the server answered HTTP {s}{retries}"),
                None if ignores_range(e) => {
                    "the server does not serve byte ranges (it answered a ranged GET with the whole object)".into()
                }
                None if text.contains("credential") || text.contains("Credential") => format!(
                    "no credentials found (looked in {credentials}); set them in the environment, \
                     or AWS_SKIP_SIGNATURE=true for a public bucket"
                ),
                // (The retry wrapper's own text names its `retry_timeout`.)
                None if text.replace("retry_timeout", "").contains("timed out")
                    || text.replace("retry_timeout", "").contains("timeout") =>
                {
                    format!("the request timed out{retries}")
                }
                None if text.contains("dns error") => format!("cannot resolve the server's host name{retries}"),
                None if text.contains("onnect") => format!("cannot connect to the server{retries}"),
                None => format!("the request failed{retries}"),
            }
        }
    }
}

/// Removes URL query strings (signatures, SAS tokens) from a message.
fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_query = false;
    for c in text.chars() {
        if c == '?' {
            in_query = true;
        } else if in_query && (c.is_whitespace() || c == ')' || c == '"') {
            in_query = false;
        }
        if !in_query {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server on 127.0.0.1 answering `GET /<n>` with n bytes, after a
    /// pause, one connection per thread; it counts the most requests it
    /// held at once.
    fn slow_server() -> (String, Arc<AtomicU64>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (now, most) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let seen = Arc::clone(&most);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (now, most) = (Arc::clone(&now), Arc::clone(&most));
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let n: usize = line.split(' ').nth(1).and_then(|p| p[1..].parse().ok()).unwrap_or(0);
                        while reader.read_line(&mut line).is_ok_and(|k| k > 2) {}
                        most.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(30));
                        now.fetch_sub(1, Ordering::SeqCst);
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nLast-Modified: Mon, 07 Dec 2026 00:00:00 GMT\r\nETag: \"{n}\"\r\n\r\n"
                        );
                        if stream
                            .write_all(head.as_bytes())
                            .and_then(|_| stream.write_all(&vec![b'x'; n]))
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        (url, seen)
    }

    #[test]
    fn wholes_arrive_in_order_within_the_budget() {
        let (url, most) = slow_server();
        let urls: Vec<std::path::PathBuf> = (1..=8).map(|n| format!("{url}/{n}").into()).collect();
        let paths: Vec<&Path> = urls.iter().map(|u| u.as_path()).collect();
        // Limits of 10 bytes in a budget of 25: two objects at once.
        let sizes = wholes_each(&paths, &[10; 8], 25, |i, got| {
            Ok::<_, ()>((i, got.map(|r| r.map(|b| b.len()))))
        })
        .unwrap();
        let want: Vec<_> = (0..8).map(|i| (i, Ok(Ok(i + 1)))).collect();
        assert_eq!(
            sizes
                .iter()
                .map(|(i, r)| (*i, r.clone().map_err(|e| e.to_string())))
                .collect::<Vec<_>>(),
            want
        );
        assert_eq!(most.load(Ordering::SeqCst), 2);
        // An object past its limit is its size; a budget smaller than one
        // limit still reads one at a time.
        let big = wholes_each(&paths[7..], &[5], 1, |_, got| got.map(|r| r.map(|b| b.len())));
        assert!(matches!(big.as_deref(), Ok([Err(8)])), "{big:?}");
    }

    #[test]
    fn wholes_are_handed_from_inside_a_one_thread_pool() {
        // Blocking the only worker of a pool while handing there would
        // wait forever: the call runs on a thread of its own, with a limit.
        let (url, _) = slow_server();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let urls: Vec<std::path::PathBuf> = (1..=4).map(|n| format!("{url}/{n}").into()).collect();
            let paths: Vec<&Path> = urls.iter().map(|u| u.as_path()).collect();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let sizes = pool
                .install(|| {
                    wholes_each(&paths, &[10; 4], 100, |_, got| {
                        Ok::<_, ()>(got.map(|r| r.map(|b| b.len())))
                    })
                })
                .unwrap();
            let _ = tx.send(
                sizes
                    .into_iter()
                    .map(|r| r.ok().and_then(|r| r.ok()))
                    .collect::<Vec<_>>(),
            );
        });
        let sizes = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("handed within a minute");
        assert_eq!(sizes, [Some(1), Some(2), Some(3), Some(4)]);
    }

    #[test]
    fn the_first_error_stops_further_reads_and_is_the_answer() {
        let (url, most) = slow_server();
        let urls: Vec<std::path::PathBuf> = (1..=8).map(|n| format!("{url}/{n}").into()).collect();
        let paths: Vec<&Path> = urls.iter().map(|u| u.as_path()).collect();
        let handed = AtomicU64::new(0);
        // One object at a time: objects 3 and 4 fail, 4 is never fetched.
        let got = wholes_each(&paths, &[10; 8], 10, |i, _| {
            handed.fetch_add(1, Ordering::SeqCst);
            if i >= 2 { Err(i) } else { Ok(i) }
        });
        assert_eq!(got, Err(2));
        assert_eq!(handed.load(Ordering::SeqCst), 3);
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_panic_while_handing_comes_back_as_a_panic() {
        let (url, _) = slow_server();
        let urls: Vec<std::path::PathBuf> = (1..=3).map(|n| format!("{url}/{n}").into()).collect();
        let paths: Vec<&Path> = urls.iter().map(|u| u.as_path()).collect();
        let caught = std::panic::catch_unwind(|| {
            wholes_each(&paths, &[10; 3], 100, |i, _| {
                assert_ne!(i, 1, "the second object");
                Ok::<_, ()>(())
            })
        });
        assert!(caught.is_err());
    }

    #[test]
    fn urls_split_into_root_and_key() {
        assert_eq!(split("s3://b/a/x.parquet"), Some(("s3://b", "a/x.parquet")));
        assert_eq!(split("s3://b"), Some(("s3://b", "")));
        assert_eq!(split("http://127.0.0.1:9/d/x"), Some(("http://127.0.0.1:9", "d/x")));
        assert!(is_url(Path::new("gs://b/k")) && !is_url(Path::new("data/s3:/x")));
    }

    #[test]
    fn http_urls_are_decoded_and_keep_their_query() {
        let url = "https://h:1/d/a%20b%2B.parquet?sig=x%2Fy&e=1";
        assert_eq!(split(url), Some(("https://h:1", "d/a%20b%2B.parquet")));
        assert_eq!(http_root(url).as_deref(), Some("https://h:1/?sig=x%2Fy&e=1"));
        assert_eq!(http_key("d/a%20b%2B.parquet"), "d/a b+.parquet");
        // Invalid escapes and a `%` typed as is stay what they are.
        assert_eq!(crate::redact::percent_decode("50%.p%zz%4"), "50%.p%zz%4");
        assert_eq!(crate::redact::percent_decode("h%C3%A9"), "hé");
        assert_eq!(percent_encode("refs/convert/parquet"), "refs%2Fconvert%2Fparquet");
        assert_eq!(
            without_query(Path::new(url)),
            Path::new("https://h:1/d/a%20b%2B.parquet")
        );
        assert_eq!(
            split("hf://datasets/o/n@refs/pr/3/d/x"),
            Some(("hf://datasets/o/n@refs/pr/3", "d/x"))
        );
    }

    #[test]
    fn userinfo_becomes_basic_authorization() {
        assert_eq!(
            basic_auth("https://u%40x:p%3Ass@h:1/?sig=1"),
            ("https://h:1/?sig=1".to_string(), Some("Basic dUB4OnA6c3M=".to_string()))
        );
        assert_eq!(basic_auth("http://h/"), ("http://h/".to_string(), None));
        assert_eq!(base64(b"user:pw"), "dXNlcjpwdw==");
        assert_eq!(base64(b"ab"), "YWI=");
    }

    #[test]
    fn query_strings_are_redacted() {
        assert_eq!(redact("GET https://a/b?sig=XYZ failed"), "GET https://a/b failed");
    }
}
