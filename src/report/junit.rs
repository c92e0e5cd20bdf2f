//! JUnit XML for CI dashboards: one test case per check (a failure when it
//! has violations, with its examples and hint) and one per error (an error
//! case named by its file). No timings, so two runs compare byte for byte.

use std::fmt::Write;

use super::Report;

/// Renders the report as one JUnit XML document.
pub fn render(report: &Report) -> String {
    let failures = report.checks.iter().filter(|c| c.violations > 0).count();
    let tests = report.checks.len() + report.errors.len();
    let errors = report.errors.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\"");
    let _ = writeln!(out, "<testsuites name=\"preflight\" {counts}>");
    let _ = writeln!(out, "  <testsuite name=\"preflight\" {counts} skipped=\"0\">");
    let _ = writeln!(out, "    <properties>");
    let _ = writeln!(out, "      <property name=\"files\" value=\"{}\"/>", report.files);
    let _ = writeln!(out, "      <property name=\"rows\" value=\"{}\"/>", report.rows);
    let _ = writeln!(
        out,
        "      <property name=\"violations\" value=\"{}\"/>",
        report.violations()
    );
    let _ = writeln!(out, "    </properties>");
    for c in &report.checks {
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml(&c.column),
            xml(&format!("{} {}", c.column, c.rule.name()))
        );
        if c.violations == 0 {
            let _ = writeln!(out, "{open}/>");
            continue;
        }
        let mut body = String::new();
        for e in &c.examples {
            let (file, row, value) = (&e.file, e.row, &e.value);
            let _ = writeln!(body, "{file}:{row}{}{}: {value}", e.at_index(), super::at_pixel(&e.xy));
        }
        let more = c.violations.saturating_sub(c.examples.len() as u64);
        if more > 0 {
            let _ = writeln!(body, "... and {more} more");
        }
        if let Some(h) = &c.hint {
            let _ = writeln!(body, "hint: {h}");
        }
        let _ = writeln!(out, "{open}>");
        let _ = writeln!(
            out,
            "      <failure type=\"{}\" message=\"{}\">{}</failure>",
            c.rule.name(),
            xml(&c.headline()),
            xml(&body)
        );
        let _ = writeln!(out, "    </testcase>");
    }
    for e in &report.errors {
        let name = e.file.as_deref().unwrap_or("preflight");
        let _ = writeln!(out, "    <testcase classname=\"errors\" name=\"{}\">", xml(name));
        let _ = writeln!(
            out,
            "      <error type=\"incomplete\" message=\"{}\"/>",
            xml(&e.message)
        );
        let _ = writeln!(out, "    </testcase>");
    }
    let _ = writeln!(out, "  </testsuite>");
    let _ = writeln!(out, "</testsuites>");
    out
}

/// Escapes text for an XML attribute or element; characters XML 1.0 cannot
/// hold at all (most control characters) become U+FFFD.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push_str(&format!("&#{};", ch as u32)),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(xml("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;\u{fffd}");
    }
}
