//! Reads a number out of a pickled dict without unpickling it.
//!
//! nanoGPT's char-level datasets keep their vocabulary size only in
//! `meta.pkl` (`pickle.dump({'vocab_size': ..., 'itos': ..., 'stoi': ...})`).
//! Unpickling runs code, so this walks the opcode stream instead: a stack
//! machine that knows the opcodes of plain data (dicts, lists, tuples,
//! strings, bytes, ints, floats, booleans, None, memo and framing) and
//! refuses every opcode that imports or calls anything. Memo lookups become
//! opaque values (so a memo bomb costs nothing), and nothing larger than
//! the file is ever built.

/// Largest `meta.pkl` read.
const MAX_BYTES: usize = 64 << 20;

#[derive(Debug, Clone)]
enum Val {
    Int(i128),
    Str(String),
    Dict(Vec<(Val, Val)>),
    List(Vec<Val>),
    Other,
}

enum Item {
    Mark,
    Val(Val),
}

/// `key`'s integer value in the top-level dict of pickle `bytes`.
pub(crate) fn dict_int(bytes: &[u8], key: &str) -> Result<i128, String> {
    if bytes.len() > MAX_BYTES {
        return Err(format!("{} bytes is too large for a meta.pkl", bytes.len()));
    }
    let top = run(bytes)?;
    let Val::Dict(items) = top else {
        return Err("the pickle does not hold a dict".into());
    };
    match items.iter().rev().find(|(k, _)| matches!(k, Val::Str(s) if s == key)) {
        Some((_, Val::Int(v))) => Ok(*v),
        Some(_) => Err(format!("`{key}` is not an integer")),
        None => Err(format!("the dict has no `{key}`")),
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| format!("truncated pickle at byte {}", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64, String> {
        let s = self.take(n)?;
        Ok(s.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
    }

    fn len(&mut self, n: usize) -> Result<usize, String> {
        usize::try_from(self.uint(n)?).map_err(|_| "absurd length".to_string())
    }

    fn line(&mut self) -> Result<&'a str, String> {
        let rest = &self.b[self.at..];
        let end = rest.iter().position(|&c| c == b'\n').ok_or("truncated pickle")?;
        let s = std::str::from_utf8(&rest[..end]).map_err(|_| "bad text in pickle")?;
        self.at += end + 1;
        Ok(s)
    }
}

/// A little-endian two's complement integer (LONG1/LONG4).
fn long(bytes: &[u8]) -> Val {
    if bytes.len() > 16 {
        return Val::Other;
    }
    let mut buf = [0u8; 16];
    buf[..bytes.len()].copy_from_slice(bytes);
    if bytes.last().is_some_and(|&b| b & 0x80 != 0) {
        buf[bytes.len()..].fill(0xff);
    }
    Val::Int(i128::from_le_bytes(buf))
}

fn run(bytes: &[u8]) -> Result<Val, String> {
    let mut r = Reader { b: bytes, at: 0 };
    let mut stack: Vec<Item> = Vec::new();
    let pop = |stack: &mut Vec<Item>| match stack.pop() {
        Some(Item::Val(v)) => Ok(v),
        _ => Err("malformed pickle: stack underflow".to_string()),
    };
    let pop_mark = |stack: &mut Vec<Item>| -> Result<Vec<Val>, String> {
        let mut out = Vec::new();
        loop {
            match stack.pop() {
                Some(Item::Val(v)) => out.push(v),
                Some(Item::Mark) => break,
                None => return Err("malformed pickle: no mark".into()),
            }
        }
        out.reverse();
        Ok(out)
    };
    let text = |s: &[u8]| Val::Str(String::from_utf8_lossy(s).into_owned());
    loop {
        let op = r.take(1)?[0];
        let val = match op {
            0x80 => {
                r.take(1)?;
                continue;
            }
            0x95 => {
                r.take(8)?;
                continue;
            }
            b'.' => return pop(&mut stack),
            b'(' => {
                stack.push(Item::Mark);
                continue;
            }
            0x94 => continue,
            b'q' => {
                r.take(1)?;
                continue;
            }
            b'r' => {
                r.take(4)?;
                continue;
            }
            b'p' => {
                r.line()?;
                continue;
            }
            b'h' => {
                r.take(1)?;
                Val::Other
            }
            b'j' => {
                r.take(4)?;
                Val::Other
            }
            b'g' => {
                r.line()?;
                Val::Other
            }
            b'}' => Val::Dict(Vec::new()),
            b']' => Val::List(Vec::new()),
            b')' | 0x8f => Val::Other,
            b'd' => {
                let items = pop_mark(&mut stack)?;
                let mut it = items.into_iter();
                let mut pairs = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                Val::Dict(pairs)
            }
            b'l' => Val::List(pop_mark(&mut stack)?),
            b't' | 0x91 => {
                pop_mark(&mut stack)?;
                Val::Other
            }
            0x85..=0x87 => {
                for _ in 0..(op - 0x84) {
                    pop(&mut stack)?;
                }
                Val::Other
            }
            0x8c => {
                let n = r.len(1)?;
                text(r.take(n)?)
            }
            b'X' => {
                let n = r.len(4)?;
                text(r.take(n)?)
            }
            0x8d => {
                let n = r.len(8)?;
                text(r.take(n)?)
            }
            b'U' | b'C' => {
                let n = r.len(1)?;
                r.take(n)?;
                Val::Other
            }
            b'T' | b'B' => {
                let n = r.len(4)?;
                r.take(n)?;
                Val::Other
            }
            0x8e => {
                let n = r.len(8)?;
                r.take(n)?;
                Val::Other
            }
            b'J' => Val::Int(i128::from(r.uint(4)? as u32 as i32)),
            b'K' => Val::Int(i128::from(r.uint(1)?)),
            b'M' => Val::Int(i128::from(r.uint(2)?)),
            0x8a => {
                let n = r.len(1)?;
                long(r.take(n)?)
            }
            0x8b => {
                let n = r.len(4)?;
                long(r.take(n)?)
            }
            b'I' | b'L' => {
                let s = r.line()?.trim_end_matches('L');
                match s {
                    "01" | "00" => Val::Other,
                    _ => s.parse().map(Val::Int).unwrap_or(Val::Other),
                }
            }
            // Protocol 0 text: UNICODE (raw-unicode-escape) and STRING (a
            // quoted literal); keys such as `vocab_size` are plain ASCII.
            b'V' => Val::Str(r.line()?.to_string()),
            b'S' => Val::Str(r.line()?.trim_matches(|c| c == '\'' || c == '"').to_string()),
            b'N' | 0x88 | 0x89 => Val::Other,
            b'G' => {
                r.take(8)?;
                Val::Other
            }
            b'F' => {
                r.line()?;
                Val::Other
            }
            b's' => {
                let v = pop(&mut stack)?;
                let k = pop(&mut stack)?;
                if let Some(Item::Val(Val::Dict(d))) = stack.last_mut() {
                    d.push((k, v));
                }
                continue;
            }
            b'u' => {
                let items = pop_mark(&mut stack)?;
                if let Some(Item::Val(Val::Dict(d))) = stack.last_mut() {
                    let mut it = items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        d.push((k, v));
                    }
                }
                continue;
            }
            b'a' => {
                let v = pop(&mut stack)?;
                if let Some(Item::Val(Val::List(l))) = stack.last_mut() {
                    l.push(v);
                }
                continue;
            }
            b'e' | 0x90 => {
                let items = pop_mark(&mut stack)?;
                if let Some(Item::Val(Val::List(l))) = stack.last_mut() {
                    l.extend(items);
                }
                continue;
            }
            b'0' => {
                stack.pop();
                continue;
            }
            b'1' => {
                pop_mark(&mut stack)?;
                continue;
            }
            b'2' => match stack.last() {
                Some(Item::Val(_)) => Val::Other,
                _ => return Err("malformed pickle: nothing to duplicate".into()),
            },
            other => {
                return Err(format!(
                    "the pickle uses opcode 0x{other:02x} at byte {}, which imports or calls code: preflight never unpickles, and reads only plain dicts",
                    r.at - 1
                ));
            }
        };
        stack.push(Item::Val(val));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nanogpt_meta_without_unpickling() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tokens/nanogpt/shakespeare_char/meta.pkl");
        let bytes = std::fs::read(path).expect("meta.pkl");
        assert_eq!(dict_int(&bytes, "vocab_size"), Ok(33));
        assert!(dict_int(&bytes, "block_size").unwrap_err().contains("no `block_size`"));
        // Every prefix fails cleanly.
        for cut in 0..bytes.len() {
            let _ = dict_int(&bytes[..cut], "vocab_size");
        }
        // A pickle that would call os.system is refused, not run.
        let evil = b"\x80\x04\x95\x1d\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c\x04true\x94\x85\x94R\x94.";
        assert!(dict_int(evil, "vocab_size").unwrap_err().contains("opcode 0x93"));
    }

    #[test]
    fn every_int_encoding_and_protocol() {
        let venv = crate::source::test_python();
        if !venv.exists() {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let script = r#"
import pickle, sys
for proto in range(0, 6):
    for v in (0, 33, 255, 256, 65535, 65536, 50257, 2**31 - 1, 2**31, 2**40, -5):
        d = {'itos': {i: chr(65 + i % 26) for i in range(40)}, 'vocab_size': v, 'stoi': {'a': 1}}
        open(f'{sys.argv[1]}/m_{proto}_{v}.pkl', 'wb').write(pickle.dumps(d, protocol=proto))
"#;
        let out = std::process::Command::new(venv)
            .args(["-c", script])
            .arg(dir.path())
            .output()
            .expect("python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut n = 0;
        for e in std::fs::read_dir(dir.path()).expect("dir") {
            let p = e.expect("entry").path();
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            let want: i128 = name.rsplit('_').next().expect("v").parse().expect("int");
            let bytes = std::fs::read(&p).expect("read");
            assert_eq!(dict_int(&bytes, "vocab_size"), Ok(want), "{name}");
            n += 1;
        }
        assert_eq!(n, 66);
    }
}
