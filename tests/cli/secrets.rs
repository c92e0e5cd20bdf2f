//! No output shows a credential: presigned URLs' signatures and tokens and
//! `user:password@` are redacted wherever a file is named (every report
//! format, `--violations-out`, `--partial`, the cache, `plan`, `merge`,
//! `filter`, stderr) while the requests still carry them; and credentials
//! from the environment (HF_TOKEN, the clouds' keys) appear in no output of
//! a failing read. The servers are the remote tests' (tests/remote).

use std::path::Path;

use serde_json::Value;

use crate::remote::Servers;
use crate::util::{Env, Run};

/// Every file below `dir`, as text (names included), for grepping.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        out.push_str(&e.path().to_string_lossy());
        out.push('\n');
        if e.file_type().is_file() {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default()));
            out.push('\n');
        }
    }
    out
}

/// Panics when `text` (what `what` produced) holds any of `secrets`.
fn assert_clean(what: &str, text: &str, secrets: &[&str]) {
    let lower = text.to_ascii_lowercase();
    for s in secrets {
        assert!(
            !lower.contains(&s.to_ascii_lowercase()),
            "{what} shows the secret {s:?}:\n{text}"
        );
    }
}

fn both(r: &Run) -> String {
    format!("{}\n{}", r.stdout, r.stderr)
}

/// The values planted in the URLs of the test below.
const URL_SECRETS: [&str; 10] = [
    "akiacred0Leak",
    "stoken1Leak",
    "ssig1Leak",
    "upass2Leak",
    "azsig2Leak",
    "tok2Leak",
    "gcred3Leak",
    "gsig3Leak",
    "atok3Leak",
    "apikey3Leak",
];

#[test]
fn presigned_urls_and_passwords_are_redacted_in_every_output() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.python(
        r#"
os.makedirs('d', exist_ok=True)
l = (np.arange(1000) % 10).astype(np.int64); l[7] = 12; l[900] = -1
pq.write_table(pa.table({'label': l}), 'd/bad.parquet', row_group_size=250)
pd.DataFrame({'label': [1, 2, 11]}).to_csv('d/t.csv', index=False)
open('d/broken.parquet', 'wb').write(b'PAR1 this is not parquet PAR1')
"#,
    );
    let servers = Servers::start(env.dir.path());
    let host = format!("127.0.0.1:{}", servers.http);
    // AWS SigV4 (with a session token), Azure SAS and a password, GCS V4
    // with generic tokens (a missing object), a generic `Sig` (a broken one).
    let aws = format!(
        "http://{host}/d/bad.parquet?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIACRED0LEAK%2F20260101\
         &X-Amz-Security-Token=stoken1Leak&X-Amz-Expires=3600&X-Amz-Signature=ssig1Leak"
    );
    let aws_shown = format!(
        "http://{host}/d/bad.parquet?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED\
         &X-Amz-Security-Token=REDACTED&X-Amz-Expires=3600&X-Amz-Signature=REDACTED"
    );
    let azure = format!("http://user:upass2Leak@{host}/d/t.csv?sv=2022-11-02&sp=r&sig=azsig2Leak&token=tok2Leak");
    let azure_shown = format!("http://REDACTED@{host}/d/t.csv?sv=2022-11-02&sp=r&sig=REDACTED&token=REDACTED");
    let gcs = format!(
        "http://{host}/d/missing.parquet?X-Goog-Credential=gcred3Leak&X-Goog-Signature=gsig3Leak\
         &access_token=atok3Leak&API_KEY=apikey3Leak"
    );
    let gcs_shown = format!(
        "http://{host}/d/missing.parquet?X-Goog-Credential=REDACTED&X-Goog-Signature=REDACTED\
         &access_token=REDACTED&API_KEY=REDACTED"
    );
    let broken = format!("http://{host}/d/broken.parquet?Sig=ssig1Leak");
    let broken_shown = format!("http://{host}/d/broken.parquet?Sig=REDACTED");
    let urls = [aws.as_str(), azure.as_str(), gcs.as_str(), broken.as_str()];
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "-s", "s.yaml"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&urls);
        servers.run(&env, &args)
    };

    // The JSON report names each file as shown, with the local counts.
    servers.reset(servers.http);
    let r = check(&["--format", "json"]);
    assert_eq!(r.code, 2, "{}", both(&r));
    assert_clean("the JSON report", &both(&r), &URL_SECRETS);
    let doc = r.json();
    assert_eq!(doc["files"], 4);
    assert_eq!(doc["violations"], 3, "{doc}");
    let examples: Vec<(String, u64)> = doc["checks"][0]["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["file"].as_str().unwrap().to_string(), e["row"].as_u64().unwrap()))
        .collect();
    let mut want = vec![
        (aws_shown.clone(), 7),
        (aws_shown.clone(), 900),
        (azure_shown.clone(), 2),
    ];
    want.sort();
    assert_eq!(examples, want, "{doc}");
    let errors: Vec<(&str, &str)> = doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["file"].as_str().unwrap(), e["message"].as_str().unwrap()))
        .collect();
    assert_eq!(errors.len(), 2, "{doc}");
    assert_eq!(errors[0].0, broken_shown);
    assert_eq!(errors[1], (gcs_shown.as_str(), "not found (HTTP 404)"));
    // The requests carried the credentials: the query as typed, the
    // password as Basic authorization.
    let log = servers.log(servers.http);
    let queries: Vec<&str> = log.iter().filter_map(|q| q["query"].as_str()).collect();
    assert!(
        queries.iter().any(|q| q.contains("X-Amz-Signature=ssig1Leak")),
        "{log:?}"
    );
    assert!(
        queries.iter().any(|q| q.contains("sig=azsig2Leak&token=tok2Leak")),
        "{log:?}"
    );
    let basic = format!("Basic {}", base64("user:upass2Leak"));
    assert!(log.iter().any(|q| q["auth"] == basic.as_str()), "{log:?}");

    // Every other format, the violations files, the partial state, the cache.
    for format in ["human", "github", "junit"] {
        let r = check(&["--format", format]);
        assert_eq!(r.code, 2, "{}", both(&r));
        assert_clean(format, &both(&r), &URL_SECRETS);
        // (As each format escapes it: GitHub's `%3A`, XML's `&amp;`.)
        for shown in [
            "X-Amz-Signature=REDACTED",
            "X-Goog-Signature=REDACTED",
            "REDACTED@127.0.0.1",
        ] {
            assert!(r.stdout.contains(shown), "{format}:\n{}", r.stdout);
        }
    }
    for out in ["v.jsonl", "v.csv", "v.parquet"] {
        let r = check(&["--format", "json", "--violations-out", out]);
        assert_eq!(r.code, 2, "{}", both(&r));
        assert_clean(out, &both(&r), &URL_SECRETS);
    }
    env.python(
        "t = pq.read_table('v.parquet').to_pylist()\n\
         open('v.parquet.txt', 'w').write(json.dumps(t))",
    );
    for out in ["v.jsonl", "v.csv", "v.parquet.txt"] {
        let text = std::fs::read_to_string(env.path(out)).unwrap();
        assert_clean(out, &text, &URL_SECRETS);
        assert_eq!(text.matches(aws_shown.as_str()).count(), 2, "{out}: {text}");
    }
    let r = check(&["--format", "json", "--partial", "--cache", "cache"]);
    assert_clean("--partial", &both(&r), &URL_SECRETS);
    assert!(
        r.json()["partial"]["files"].to_string().contains(&azure_shown),
        "{}",
        r.stdout
    );
    assert_clean("the cache", &all_text(&env.path("cache")), &URL_SECRETS);

    // plan: units name files as shown; `path` is what a worker opens, so it
    // keeps the URL as typed (a plan is the workers' input, as a command
    // line is).
    let r = servers.run(&env, &[&["plan", "-s", "s.yaml"], &urls[..]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan: Value = serde_json::from_str(&r.stdout).unwrap();
    let units = plan["units"].as_array().unwrap();
    let named: Vec<(&str, &str)> = units
        .iter()
        .map(|u| (u["file"].as_str().unwrap(), u["path"].as_str().unwrap()))
        .collect();
    assert!(named.contains(&(aws_shown.as_str(), aws.as_str())), "{named:?}");
    assert!(named.contains(&(azure_shown.as_str(), azure.as_str())), "{named:?}");
    let files: String = units.iter().map(|u| u["file"].to_string()).collect();
    assert_clean("plan's files", &files, &URL_SECRETS);
    assert_clean("plan's stderr", &r.stderr, &URL_SECRETS);

    // Workers that each saw one URL; their merge is the one check's report.
    let whole = check(&["--format", "json"]).json();
    for (i, url) in urls.iter().enumerate() {
        let r = servers.run(&env, &["check", "-s", "s.yaml", "--format", "json", "--partial", url]);
        assert_clean("a worker's partial", &both(&r), &URL_SECRETS);
        env.write(&format!("p{i}.json"), &r.stdout);
    }
    // A partial written elsewhere with the names unredacted (by hand, or
    // by a version before redaction) is redacted when merged.
    let p0 = std::fs::read_to_string(env.path("p0.json")).unwrap();
    env.write("p0.json", &p0.replace(&aws_shown, &aws));
    assert!(!p0.contains(&aws) && std::fs::read_to_string(env.path("p0.json")).unwrap().contains(&aws));
    let parts = ["p0.json", "p1.json", "p2.json", "p3.json"];
    let merged = servers.run(&env, &[&["merge", "--format", "json"], &parts[..]].concat());
    assert_clean("merge", &both(&merged), &URL_SECRETS);
    assert_eq!(merged.json(), whole);
    for format in ["human", "github", "junit"] {
        let r = servers.run(&env, &[&["merge", "--format", format], &parts[..]].concat());
        assert_clean("merge", &both(&r), &URL_SECRETS);
        assert!(r.stdout.contains("X-Amz-Signature=REDACTED"), "{}", r.stdout);
    }
    let r = servers.run(
        &env,
        &[&["merge", "--format", "json", "--partial"], &parts[..]].concat(),
    );
    assert_clean("merge --partial", &both(&r), &URL_SECRETS);

    // filter: its copies are named by the name shown, as is its manifest.
    let r = servers.run(&env, &["filter", "-s", "s.yaml", "--out", "out", &aws, &gcs]);
    assert_clean("filter", &both(&r), &URL_SECRETS);
    assert_clean("filter's output", &all_text(&env.path("out")), &URL_SECRETS);
    assert!(all_text(&env.path("out")).contains("X-Amz-Signature=REDACTED"));
}

/// Standard base64 (for the expected Basic authorization).
fn base64(text: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = text.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Credentials in the environment, each a distinctive value.
const ENV_SECRETS: [(&str, &str); 8] = [
    ("HF_TOKEN", "hf_envLeakToken1"),
    ("AWS_ACCESS_KEY_ID", "AKIAENVLEAK2"),
    ("AWS_SECRET_ACCESS_KEY", "awsEnvLeakSecret3"),
    ("AWS_SESSION_TOKEN", "awsEnvLeakSession4"),
    ("AZURE_STORAGE_ACCOUNT_KEY", "YXp1cmVFbnZMZWFrS2V5NQ=="),
    ("AZURE_STORAGE_SAS_TOKEN", "sv=2022&sig=azEnvLeakSas6"),
    ("GOOGLE_SERVICE_ACCOUNT_KEY", "{\"private_key\": \"gEnvLeakKey7\""),
    ("AZURE_CLIENT_SECRET", "azEnvLeakClient8"),
];

#[test]
fn credentials_from_the_environment_appear_in_no_output() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.python(
        "os.makedirs('hub/o/n/d', exist_ok=True)\n\
         pq.write_table(pa.table({'label': [1, 12]}), 'hub/o/n/d/a.parquet')",
    );
    let servers = Servers::start(env.dir.path());
    let http = format!("http://127.0.0.1:{}", servers.http);
    let secrets: Vec<&str> = ENV_SECRETS.iter().map(|(_, v)| *v).collect();
    let mut secrets = secrets;
    // (The Azure key as decoded, too.)
    secrets.push("azureEnvLeakKey5");
    let run = |args: &[&str], extra: &[(&str, &str)]| {
        let mut c = servers.command(&env, args);
        c.envs(ENV_SECRETS.iter().copied())
            .env("HF_ENDPOINT", &http)
            .env("AZURE_STORAGE_ACCOUNT_NAME", "devstoreaccount1")
            .env("PREFLIGHT_REMOTE_RETRIES", "1")
            .envs(extra.iter().copied());
        let out = c.output().expect("run");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let azure = [
        ("AZURE_STORAGE_USE_EMULATOR", "true"),
        ("AZURITE_BLOB_STORAGE_URL", http.as_str()),
    ];
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 7] = [
        // The Hub: a dataset that is there (the token is sent), a missing
        // file, a missing dataset.
        (&["hf://datasets/o/n/d/"], &[]),
        (&["hf://datasets/o/n/d/missing.parquet"], &[]),
        (&["hf://datasets/o/nothing/"], &[]),
        // S3 refusing the keys (403), listing and reading.
        (&["s3://bkt/x/"], &[]),
        (&["s3://bkt/x.parquet"], &[]),
        // Azure (its emulator settings point at the HTTP server) and GCS
        // with a key that is no JSON.
        (&["az://ctr/missing.parquet"], &azure),
        (&["gs://bkt/x.parquet"], &[]),
    ];
    let mut hub_ok = false;
    for (paths, extra) in cases {
        for format in ["json", "human", "github", "junit"] {
            if paths[0].starts_with("s3://") {
                servers.fault(r#"{"status": 403, "count": 100}"#);
            }
            let r = run(&[&["check", "-s", "s.yaml", "--format", format], paths].concat(), extra);
            servers.reset(servers.proxy);
            assert_clean(&format!("{paths:?} --format {format}"), &both(&r), &secrets);
            if format == "json" {
                let doc = r.json();
                if paths[0] == "hf://datasets/o/n/d/" {
                    assert_eq!((r.code, doc["violations"].as_u64()), (1, Some(1)), "{doc}");
                    hub_ok = true;
                } else {
                    assert_eq!(r.code, 2, "{paths:?}: {doc}");
                    assert!(!doc["errors"][0]["message"].as_str().unwrap().is_empty());
                }
            }
        }
        if paths[0].starts_with("s3://") {
            servers.fault(r#"{"status": 403, "count": 100}"#);
        }
        let r = run(&[&["plan", "-s", "s.yaml"], paths].concat(), extra);
        servers.reset(servers.proxy);
        assert_clean(&format!("plan {paths:?}"), &both(&r), &secrets);
    }
    assert!(hub_ok);
    // The Hub's requests carried the token.
    let log = servers.log(servers.http);
    assert!(log.iter().any(|q| q["auth"] == "Bearer hf_envLeakToken1"), "{log:?}");
}
