//! `hf://datasets/OWNER/NAME[@REVISION]/PATH`: files of a Hugging Face Hub
//! dataset, listed through the Hub's tree API and read by range through its
//! resolve URLs, as Polars and `huggingface_hub`'s file system do.
//!
//! There is no `object_store` backend for the Hub (and `hf-hub` downloads
//! whole files), so the two endpoints are handled here: a listing is
//! `GET {endpoint}/api/datasets/OWNER/NAME/tree/REVISION/PREFIX?recursive=true`,
//! paginated by `Link: <...>; rel="next"`; a file is read with ranged GETs
//! of `{endpoint}/datasets/OWNER/NAME/resolve/REVISION/PATH` through
//! `object_store`'s HTTP store (retries, timeouts, `If-Match`). The endpoint
//! is `HF_ENDPOINT` (default `https://huggingface.co`); a token, sent as
//! `Authorization: Bearer`, is `HF_TOKEN`, else the file `HF_TOKEN_PATH`,
//! else `$HF_HOME/token` (default `~/.cache/huggingface/token`).

use std::path::PathBuf;

/// A parsed `hf://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HubUrl {
    /// `datasets/OWNER/NAME`.
    pub repo: String,
    /// The revision as written (`main` when none).
    pub revision: String,
    /// The path inside the repository (may be empty).
    pub path: String,
}

/// Where the repository part of an `hf://` URL ends:
/// `hf://datasets/OWNER/NAME[@REVISION]`, where a revision is one path
/// segment (`main`, `v1.0`, a commit, `refs%2Fconvert%2Fparquet`) or one of
/// the Hub's special refs written with its slashes, `refs/convert/NAME` or
/// `refs/pr/N` (as `huggingface_hub`'s file system reads them).
pub(super) fn root_len(url: &str) -> Option<usize> {
    let rest = url.strip_prefix("hf://datasets/")?;
    let segments: Vec<&str> = rest.split('/').collect();
    let mut n = 2.min(segments.len());
    if n == 2 && segments[1].ends_with("@refs") && segments.len() >= 4 {
        let special = match segments[2] {
            "convert" => segments[3].chars().all(|c| c.is_alphanumeric() || c == '_'),
            "pr" => segments[3].chars().all(|c| c.is_ascii_digit()),
            _ => false,
        };
        if special && !segments[3].is_empty() {
            n = 4;
        }
    }
    let len: usize = segments[..n].iter().map(|s| s.len()).sum::<usize>() + n.saturating_sub(1);
    Some(url.len() - rest.len() + len)
}

/// Parses `hf://datasets/OWNER/NAME[@REVISION][/PATH]` (see [`root_len`]
/// for the revision; a percent-encoded one is decoded).
pub(super) fn parse(url: &str) -> Result<HubUrl, String> {
    let usage = "an hf:// URL names OWNER/NAME: hf://datasets/OWNER/NAME[@REVISION]/PATH";
    if !url.starts_with("hf://datasets/") {
        return Err("an hf:// URL reads datasets: hf://datasets/OWNER/NAME[@REVISION]/PATH".into());
    }
    let end = root_len(url).ok_or(usage)?;
    let root = &url["hf://datasets/".len()..end];
    let path = url[end..].trim_start_matches('/').to_string();
    let (owner, name) = root.split_once('/').ok_or(usage)?;
    let (name, revision) = match name.split_once('@') {
        Some((n, r)) if !r.is_empty() => (n, crate::redact::percent_decode(r)),
        _ => (name, "main".to_string()),
    };
    if owner.is_empty() || name.is_empty() {
        return Err(usage.into());
    }
    Ok(HubUrl {
        repo: format!("datasets/{owner}/{name}"),
        revision,
        path,
    })
}

/// The Hub's address (`HF_ENDPOINT`), without a trailing `/`.
pub(super) fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into())
        .trim_end_matches('/')
        .to_string()
}

/// The token, and where it came from (for error messages).
pub(super) fn token() -> (Option<String>, &'static str) {
    if let Some(t) = std::env::var("HF_TOKEN").ok().filter(|t| !t.trim().is_empty()) {
        return (Some(t.trim().to_string()), "HF_TOKEN");
    }
    let file = std::env::var_os("HF_TOKEN_PATH").map(PathBuf::from).or_else(|| {
        let home = std::env::var_os("HF_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface")))?;
        Some(home.join("token"))
    });
    match file.and_then(|f| std::fs::read_to_string(f).ok()) {
        Some(t) if !t.trim().is_empty() => (Some(t.trim().to_string()), "the Hugging Face token file"),
        _ => (None, "none (no HF_TOKEN or token file: anonymous)"),
    }
}

/// The resolve URL of the repository at its revision, under which its
/// files lie.
pub(super) fn resolve_root(url: &HubUrl) -> String {
    format!(
        "{}/{}/resolve/{}",
        endpoint(),
        url.repo,
        super::remote::percent_encode(&url.revision)
    )
}

/// The tree-listing URL of `url`'s path.
pub(super) fn tree_url(url: &HubUrl, prefix: &str) -> String {
    // The revision is one segment (`refs%2Fconvert%2Fparquet`), as the
    // Hub expects it; the path's segments are encoded each.
    let mut u = format!(
        "{}/api/{}/tree/{}",
        endpoint(),
        url.repo,
        super::remote::percent_encode(&url.revision)
    );
    for segment in prefix.split('/').filter(|s| !s.is_empty()) {
        u.push('/');
        u.push_str(&super::remote::percent_encode(segment));
    }
    u.push_str("?recursive=true");
    u
}

/// The `rel="next"` target of a `Link` header.
pub(super) fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"")
            .then(|| target.trim().trim_start_matches('<').trim_end_matches('>').to_string())
    })
}

/// The files (path, size) of one page of a tree listing.
pub(super) fn files_of_page(body: &str) -> Result<Vec<(String, u64)>, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(rename = "type")]
        kind: String,
        path: String,
        #[serde(default)]
        size: u64,
    }
    let entries: Vec<Entry> =
        serde_json::from_str(body).map_err(|e| format!("the Hub's tree listing is not what it should be: {e}"))?;
    Ok(entries
        .into_iter()
        .filter(|e| e.kind == "file")
        .map(|e| (e.path, e.size))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_urls_parse() {
        let u = parse("hf://datasets/o/n@v1.0/data/train.parquet").unwrap();
        assert_eq!(
            (u.repo.as_str(), u.revision.as_str(), u.path.as_str()),
            ("datasets/o/n", "v1.0", "data/train.parquet")
        );
        let u = parse("hf://datasets/o/n").unwrap();
        assert_eq!((u.revision.as_str(), u.path.as_str()), ("main", ""));
        assert!(parse("hf://models/o/n/x").is_err());
        // The Hub's special refs, with their slashes or encoded.
        for url in [
            "hf://datasets/o/n@refs/convert/parquet/default/train/0000.parquet",
            "hf://datasets/o/n@refs%2Fconvert%2Fparquet/default/train/0000.parquet",
        ] {
            let u = parse(url).unwrap();
            assert_eq!(
                (u.revision.as_str(), u.path.as_str()),
                ("refs/convert/parquet", "default/train/0000.parquet")
            );
            assert!(resolve_root(&u).ends_with("/datasets/o/n/resolve/refs%2Fconvert%2Fparquet"));
            assert!(tree_url(&u, "default/a b").contains("/tree/refs%2Fconvert%2Fparquet/default/a%20b?"));
        }
        let u = parse("hf://datasets/o/n@refs/pr/7/data").unwrap();
        assert_eq!((u.revision.as_str(), u.path.as_str()), ("refs/pr/7", "data"));
        // `refs` followed by something else is a revision named `refs`.
        let u = parse("hf://datasets/o/n@refs/data/x.parquet").unwrap();
        assert_eq!((u.revision.as_str(), u.path.as_str()), ("refs", "data/x.parquet"));
        assert!(parse("hf://datasets/o").is_err());
    }

    #[test]
    fn link_headers_give_the_next_page() {
        let l = r#"<https://h/api/datasets/o/n/tree/main?cursor=abc>; rel="next", <https://h/x>; rel="prev""#;
        assert_eq!(
            next_link(l).as_deref(),
            Some("https://h/api/datasets/o/n/tree/main?cursor=abc")
        );
        assert_eq!(next_link(r#"<https://h/x>; rel="prev""#), None);
    }

    #[test]
    fn tree_pages_keep_files() {
        let body = r#"[{"type":"directory","path":"d","oid":"x","size":0},{"type":"file","path":"d/a.parquet","size":12,"oid":"y"}]"#;
        assert_eq!(files_of_page(body).unwrap(), vec![("d/a.parquet".to_string(), 12)]);
    }
}
