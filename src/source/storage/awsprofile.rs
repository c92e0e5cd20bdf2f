//! The AWS CLI's shared files (`~/.aws/credentials`, `~/.aws/config`),
//! which `object_store` does not read (arrow-rs#4238): the static keys and
//! region of the profile `AWS_PROFILE` names (`default` without it), so
//! that a machine set up with `aws configure` works as it does for the
//! AWS CLI and boto3. Profiles that get their keys some other way (SSO,
//! `credential_process`, an assumed role) are named in the error with the
//! workaround: `aws configure export-credentials`.
//!
//! Hand-written: the format is a small INI subset (sections, `key = value`,
//! `#`/`;` comments) and the crates for it would add more than they save.

use std::path::PathBuf;

/// What a profile gives.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Profile {
    /// The profile's name.
    pub name: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    /// How the profile gets keys when it holds none (`sso_start_url`,
    /// `credential_process`, `role_arn`, ...), if it names a way.
    pub other_source: Option<String>,
}

/// The `key = value` pairs of section `section` of an INI text.
fn section(text: &str, section: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
            continue;
        }
        if inside && let Some((k, v)) = line.split_once('=') {
            out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    out
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// A file named by `var`, or `~/.aws/NAME`.
fn file(var: &str, name: &str) -> Option<String> {
    let path = match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => home()?.join(".aws").join(name),
    };
    std::fs::read_to_string(path).ok()
}

/// The profile to use, from the shared files; `None` when neither file
/// has it.
pub(super) fn profile() -> Option<Profile> {
    let name = std::env::var("AWS_PROFILE")
        .ok()
        .or_else(|| std::env::var("AWS_DEFAULT_PROFILE").ok())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    let credentials = file("AWS_SHARED_CREDENTIALS_FILE", "credentials").unwrap_or_default();
    let config = file("AWS_CONFIG_FILE", "config").unwrap_or_default();
    let from_credentials = section(&credentials, &name);
    // In the config file a profile's section is `[profile NAME]`
    // (`[default]` for the default one).
    let mut from_config = section(&config, &format!("profile {name}"));
    if name == "default" && from_config.is_empty() {
        from_config = section(&config, "default");
    }
    if from_credentials.is_empty() && from_config.is_empty() {
        return None;
    }
    // The credentials file wins over the config file, as in the AWS CLI.
    let get = |key: &str| {
        from_credentials
            .iter()
            .chain(&from_config)
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let other_source = [
        "sso_session",
        "sso_start_url",
        "credential_process",
        "role_arn",
        "web_identity_token_file",
    ]
    .into_iter()
    .find(|k| get(k).is_some())
    .map(str::to_string);
    Some(Profile {
        access_key_id: get("aws_access_key_id"),
        secret_access_key: get("aws_secret_access_key"),
        session_token: get("aws_session_token"),
        region: get("region"),
        other_source,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_and_comments() {
        let text = "# c\n[default]\naws_access_key_id = A\n; x\n[profile p]\nregion=eu-west-1\n[p]\nAWS_SECRET_ACCESS_KEY = S \n";
        assert_eq!(section(text, "default"), vec![("aws_access_key_id".into(), "A".into())]);
        assert_eq!(section(text, "profile p"), vec![("region".into(), "eu-west-1".into())]);
        assert_eq!(section(text, "p"), vec![("aws_secret_access_key".into(), "S".into())]);
        assert!(section(text, "none").is_empty());
    }
}
