//! Credentials kept out of every output.
//!
//! A presigned URL carries its signature in the query string, and a URL can
//! carry `user:password@`; reports, annotations, violation files, cache
//! entries and errors end up in CI logs. A file's name as outputs show it
//! ([`url`]) is therefore kept apart from the URL requests use: the
//! credential-bearing query parameters ([`PARAMS`], matched without regard
//! to case) read `NAME=REDACTED`, and the userinfo `REDACTED` (the password
//! alone for schemes where the user part names something, `abfs://` among
//! them). [`text`] does the same to URLs quoted inside a message, as the
//! last step before a message reaches an output.

use std::borrow::Cow;

/// What a credential is replaced by.
pub(crate) const REDACTED: &str = "REDACTED";

/// Query parameters that carry credentials (lower case): AWS SigV4 and
/// SigV2, GCS V4 and V2, Azure SAS, and the generic names OAuth and API
/// gateways use.
pub(crate) const PARAMS: [&str; 16] = [
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "sig",
    "signature",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "api_key",
    "apikey",
    "password",
    "secret",
    "client_secret",
];

/// Whether a query parameter's name is one of [`PARAMS`] (any case,
/// percent-escapes decoded).
pub(crate) fn is_secret(name: &str) -> bool {
    let name = percent_decode(name).to_ascii_lowercase();
    PARAMS.contains(&name.as_str())
}

/// A PATH as outputs show it: for a URL, its credentials redacted (see the
/// module's docs); anything else as it is.
pub(crate) fn url(path: &str) -> Cow<'_, str> {
    let Some(at) = path.find("://") else {
        return Cow::Borrowed(path);
    };
    let mut out = String::with_capacity(path.len());
    let authority_end = path[at + 3..].find(['/', '?', '#']).map_or(path.len(), |i| at + 3 + i);
    out.push_str(&path[..at + 3]);
    out.push_str(&userinfo(&path[..at], &path[at + 3..authority_end]));
    let rest = &path[authority_end..];
    let (before, query) = match rest.find('?') {
        Some(q) => (&rest[..q], &rest[q + 1..]),
        None => (rest, ""),
    };
    out.push_str(before);
    if rest.contains('?') {
        let (query, fragment) = match query.find('#') {
            Some(h) => (&query[..h], &query[h..]),
            None => (query, ""),
        };
        out.push('?');
        for (i, part) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match part.split_once('=') {
                Some((name, _)) if is_secret(name) => {
                    out.push_str(name);
                    out.push('=');
                    out.push_str(REDACTED);
                }
                _ => out.push_str(part),
            }
        }
        out.push_str(fragment);
    }
    if out == path {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(out)
    }
}

/// An authority (`[userinfo@]host[:port]`) with its userinfo redacted: all
/// of it over HTTP(S) (a bare user name there is often a token), the
/// password alone elsewhere (`abfs://CONTAINER@ACCOUNT` names a container).
fn userinfo(scheme: &str, authority: &str) -> String {
    let Some(at) = authority.rfind('@') else {
        return authority.to_string();
    };
    let (info, host) = authority.split_at(at);
    let http = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    match info.split_once(':') {
        _ if http => format!("{REDACTED}{host}"),
        Some((user, _)) => format!("{user}:{REDACTED}{host}"),
        None => authority.to_string(),
    }
}

/// Characters that end a URL quoted in a message.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}' | ',')
}

/// A message with every URL in it shown as [`url`] shows it, and any
/// `?NAME=` / `&NAME=` of a [`PARAMS`] name redacted wherever it stands (a
/// file name cut from a presigned URL). Punctuation that ends a sentence
/// after a value (`:`, `.`, `;`) stays.
pub(crate) fn text(message: &str) -> Cow<'_, str> {
    if !message.contains("://") && !message.contains('=') {
        return Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    // URLs: from the scheme's letters before `://` to the first character
    // that ends a URL in prose.
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[at + 3..].find(ends_url).map_or(rest.len(), |i| at + 3 + i);
        let quoted = rest[start..end].trim_end_matches([':', '.', ';']);
        out.push_str(&params(&rest[..start]));
        out.push_str(&url(quoted));
        rest = &rest[start + quoted.len()..];
    }
    out.push_str(&params(rest));
    if out == message {
        Cow::Borrowed(message)
    } else {
        Cow::Owned(out)
    }
}

/// `?NAME=VALUE` and `&NAME=VALUE` of [`PARAMS`] names in prose, redacted.
fn params(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut done = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if matches!(bytes[i], b'?' | b'&')
            && let Some(eq) = text[i + 1..].find('=').map(|e| i + 1 + e)
            && !text[i + 1..eq].contains(|c: char| ends_url(c) || c == '&' || c == '?')
            && is_secret(&text[i + 1..eq])
        {
            let value_end = text[eq + 1..]
                .find(|c: char| ends_url(c) || c == '&' || c == '#')
                .map_or(text.len(), |v| eq + 1 + v);
            let value = text[eq + 1..value_end].trim_end_matches([':', '.', ';']);
            if value != REDACTED && !value.is_empty() {
                out.push_str(&text[done..eq + 1]);
                out.push_str(REDACTED);
                done = eq + 1 + value.len();
            }
            i = value_end;
            continue;
        }
        i += 1;
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// `%XX` escapes decoded (an invalid escape, or bytes that are not UTF-8,
/// left as typed).
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presigned_urls_show_their_parameters_redacted() {
        let aws = "https://b.s3.amazonaws.com/d/x.parquet?X-Amz-Algorithm=AWS4-HMAC-SHA256\
                   &X-Amz-Credential=AKIA%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z\
                   &X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=FQo%2Bx\
                   &X-Amz-Signature=0123abcd";
        assert_eq!(
            url(aws),
            "https://b.s3.amazonaws.com/d/x.parquet?X-Amz-Algorithm=AWS4-HMAC-SHA256\
             &X-Amz-Credential=REDACTED&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600\
             &X-Amz-SignedHeaders=host&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"
        );
        assert_eq!(
            url("https://storage.googleapis.com/b/x.csv?X-Goog-Credential=sa%40p&X-Goog-Signature=ff#frag"),
            "https://storage.googleapis.com/b/x.csv?X-Goog-Credential=REDACTED&X-Goog-Signature=REDACTED#frag"
        );
        assert_eq!(
            url("https://a.blob.core.windows.net/c/x.parquet?sv=2022-11-02&sp=r&se=2026-01-01T00%3A00Z&sig=AbC%2B%3D"),
            "https://a.blob.core.windows.net/c/x.parquet?sv=2022-11-02&sp=r&se=2026-01-01T00%3A00Z&sig=REDACTED"
        );
        // Generic names, any case; other parameters and valueless ones stay.
        assert_eq!(
            url("http://h:8/x?TOKEN=1&Access_Token=2&api_key=3&download=true&sig&SIG=4"),
            "http://h:8/x?TOKEN=REDACTED&Access_Token=REDACTED&api_key=REDACTED&download=true&sig&SIG=REDACTED"
        );
        // Nothing to redact: the same string, borrowed.
        assert!(matches!(url("s3://b/k/x.parquet"), Cow::Borrowed(_)));
        assert!(matches!(url("data/x?sig=1"), Cow::Borrowed(_)));
        assert!(matches!(url("http://h/x?download=true"), Cow::Borrowed(_)));
    }

    #[test]
    fn userinfo_is_redacted() {
        assert_eq!(url("https://u:p%40ss@h:1/x.parquet"), "https://REDACTED@h:1/x.parquet");
        assert_eq!(url("http://ghp_token@h/x"), "http://REDACTED@h/x");
        // An `@` in the path or query is no userinfo.
        assert_eq!(url("https://h/a@b/x?e=a@b"), "https://h/a@b/x?e=a@b");
        // abfs names a container there; a password still goes.
        assert_eq!(
            url("abfs://c@a.dfs.core.windows.net/x"),
            "abfs://c@a.dfs.core.windows.net/x"
        );
        assert_eq!(url("ftp://u:pw@h/x"), "ftp://u:REDACTED@h/x");
    }

    #[test]
    fn urls_and_parameters_in_messages_are_redacted() {
        assert_eq!(
            text("https://u:p@h/x.parquet?sig=abc: not found (HTTP 404)"),
            "https://REDACTED@h/x.parquet?sig=REDACTED: not found (HTTP 404)"
        );
        assert_eq!(
            text("GET (\"http://h/a?X-Amz-Signature=ff&e=1\"), then x.idx?token=zz."),
            "GET (\"http://h/a?X-Amz-Signature=REDACTED&e=1\"), then x.idx?token=REDACTED."
        );
        assert_eq!(text("max_length=5 and eod_token=3"), "max_length=5 and eod_token=3");
        assert!(matches!(text("column `label`: 12 > 10"), Cow::Borrowed(_)));
        // Redacting twice changes nothing.
        let once = text("see https://h/x?sig=1&token=2 and ?api_key=3").into_owned();
        assert_eq!(text(&once), once);
        assert_eq!(
            once,
            "see https://h/x?sig=REDACTED&token=REDACTED and ?api_key=REDACTED"
        );
    }
}
