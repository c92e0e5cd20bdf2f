//! How `webdataset` 1.0 turns member names into samples and columns, and
//! reads integer members: the rules of `tariterators.py` (`tar_file_iterator`,
//! `base_plus_ext`, `group_by_keys`) and `autodecode.py` (`int(data)`),
//! written out by hand because they are a few regular expressions whose
//! exact Python behaviour (backtracking, `$` before a final newline) matters.

/// Whether `tar_file_iterator` skips a member as metadata: a name without
/// `/` that starts and ends with `__`, or one whose first path component
/// matches `__[^/]*__` (`re.match(r"__[^/]*__($|/)", name)`).
pub(super) fn is_meta(name: &[u8]) -> bool {
    if !name.contains(&b'/') && name.starts_with(b"__") && name.ends_with(b"__") {
        return true;
    }
    let first = match name.iter().position(|&b| b == b'/') {
        Some(i) => &name[..i],
        // `$` also matches before a final newline.
        None => name.strip_suffix(b"\n").unwrap_or(name),
    };
    first.len() >= 4 && first.starts_with(b"__") && first.ends_with(b"__")
}

/// `base_plus_ext`: `re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", name)` as
/// (key, suffix), or `None` (the member is dropped). The key runs to the
/// first dot of the base name; when the base name starts with a dot the
/// regex backtracks to an earlier `/` (or the start), so `a/.x` has key
/// `a/` and suffix `x`.
pub(super) fn base_plus_ext(name: &[u8]) -> Option<(&[u8], &[u8])> {
    // `.` does not match a newline: `.*/` reaches only slashes before the
    // first newline. Candidates are tried from the last slash back, then
    // the start.
    let reach = name.iter().position(|&b| b == b'\n').unwrap_or(name.len());
    let slashes = name[..reach]
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'/')
        .map(|(i, _)| i + 1);
    let starts: Vec<usize> = slashes.rev().chain(std::iter::once(0)).collect();
    for p in starts {
        // `[^.]+` runs to the first dot after p and must not be empty.
        let Some(d) = name[p..].iter().position(|&b| b == b'.').map(|d| p + d) else {
            continue;
        };
        if d == p {
            continue;
        }
        let rest = &name[d + 1..];
        if !rest.contains(&b'/') {
            return Some((&name[..d], rest));
        }
    }
    None
}

/// The suffix lower-cased as `str.lower()` does (names that are not UTF-8
/// decode with `surrogateescape` in `tarfile`; their ASCII letters still
/// lower).
pub(super) fn lower(suffix: &[u8]) -> String {
    match std::str::from_utf8(suffix) {
        Ok(s) => s.to_lowercase(),
        Err(_) => String::from_utf8_lossy(&suffix.to_ascii_lowercase()).into_owned(),
    }
}

/// Whether `webdataset`'s decoders read a column as `int(data)`: its last
/// dot-separated part is `cls`, `cls2`, `index`, `inx` or `id`.
pub(super) fn is_int_column(suffix: &str) -> bool {
    let last = suffix.rsplit('.').next().unwrap_or(suffix);
    matches!(last, "cls" | "cls2" | "index" | "inx" | "id")
}

/// An integer member's value as Python's `int(bytes)` reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PyInt {
    /// Fits an int64.
    Int(i64),
    /// A whole number beyond int64, as the nearest float.
    Big(f64),
}

/// Most digits `int()` converts (`sys.get_int_max_str_digits()`, Python
/// 3.11 and later): more raise `ValueError`.
const MAX_DIGITS: usize = 4300;

/// Parses like `int(data)` in base 10: ASCII whitespace around, one sign,
/// digits with single underscores between them. `Err` holds why `int()`
/// raises.
pub(super) fn parse_int(data: &[u8]) -> Result<PyInt, &'static str> {
    const WS: &[u8] = b" \t\n\r\x0b\x0c";
    let start = data.iter().position(|b| !WS.contains(b)).unwrap_or(data.len());
    let end = data.iter().rposition(|b| !WS.contains(b)).map_or(start, |e| e + 1);
    let text = &data[start..end];
    let (neg, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || digits[0] == b'_' || digits[digits.len() - 1] == b'_' {
        return Err("not an integer");
    }
    let mut v: i128 = 0;
    let mut count = 0usize;
    let mut prev_underscore = false;
    let mut big = false;
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                count += 1;
                prev_underscore = false;
                if !big {
                    v = v * 10 + i128::from(b - b'0');
                    big = v > i128::from(i64::MAX) + 1;
                }
            }
            b'_' if !prev_underscore => prev_underscore = true,
            _ => return Err("not an integer"),
        }
    }
    if count > MAX_DIGITS {
        return Err("more digits than int() converts (4300)");
    }
    let v = if neg { -v } else { v };
    match i64::try_from(v) {
        Ok(v) if !big => Ok(PyInt::Int(v)),
        _ => {
            let plain: String = digits.iter().filter(|&&b| b != b'_').map(|&b| b as char).collect();
            let f: f64 = plain.parse().unwrap_or(f64::INFINITY);
            Ok(PyInt::Big(if neg { -f } else { f }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bpe(s: &str) -> Option<(String, String)> {
        base_plus_ext(s.as_bytes()).map(|(k, e)| {
            (
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(e.to_vec()).unwrap(),
            )
        })
    }

    #[test]
    fn keys_split_as_the_regex_does() {
        let p = |k: &str, e: &str| Some((k.to_string(), e.to_string()));
        assert_eq!(bpe("a.cls"), p("a", "cls"));
        assert_eq!(bpe("dir/a.b.png"), p("dir/a", "b.png"));
        assert_eq!(bpe("d.x/a.png"), p("d.x/a", "png"));
        assert_eq!(bpe("a/.hidden"), p("a/", "hidden"));
        assert_eq!(bpe("a/b/.x"), p("a/b/", "x"));
        assert_eq!(bpe("noext"), None);
        assert_eq!(bpe("a.b/c"), None);
        assert_eq!(bpe(".x"), None);
        assert_eq!(bpe("a."), p("a", ""));
        assert_eq!(bpe("a\nb/c.d"), p("a\nb/c", "d"));
    }

    #[test]
    fn meta_members_as_tar_file_iterator_skips_them() {
        assert!(is_meta(b"__meta__"));
        assert!(is_meta(b"__"));
        assert!(is_meta(b"___"));
        assert!(is_meta(b"__a__/x.json"));
        assert!(is_meta(b"__a__\n"));
        assert!(!is_meta(b"__a_/x.json"));
        assert!(!is_meta(b"___/x"));
        assert!(!is_meta(b"a__"));
        assert!(!is_meta(b"__key__.cls"));
    }

    #[test]
    fn ints_parse_as_python_int_of_bytes() {
        assert_eq!(parse_int(b" +1_0\n"), Ok(PyInt::Int(10)));
        assert_eq!(parse_int(b"\x0b3\x0c"), Ok(PyInt::Int(3)));
        assert_eq!(parse_int(b"-0"), Ok(PyInt::Int(0)));
        assert_eq!(parse_int(b"007"), Ok(PyInt::Int(7)));
        assert_eq!(parse_int(b"-9223372036854775808"), Ok(PyInt::Int(i64::MIN)));
        assert_eq!(parse_int(b"9223372036854775808"), Ok(PyInt::Big(9223372036854775808.0)));
        assert_eq!(parse_int(b"99999999999999999999999"), Ok(PyInt::Big(1e23)));
        for bad in [
            &b"0x10"[..],
            b"\xa03",
            b"\x1c3",
            b"",
            b"1__0",
            b"_1",
            b"1_",
            b"3.0",
            b"+",
            b" ",
        ] {
            assert!(parse_int(bad).is_err(), "{bad:?}");
        }
        assert!(parse_int(&vec![b'1'; 4301]).is_err());
        assert!(parse_int(&vec![b'1'; 4300]).is_ok());
    }

    #[test]
    fn int_columns_by_last_part() {
        assert!(is_int_column("cls"));
        assert!(is_int_column("1.cls"));
        assert!(!is_int_column("class"));
        assert!(!is_int_column("cls.txt"));
    }
}
