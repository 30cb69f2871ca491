//! The real moto server of `bench outage`, on a free loopback port of its own, and the
//! tables created in it through its DynamoDB API (the AWS SDK, straight to moto, not
//! through the fault proxy: the setup is not part of the count).
//!
//! It runs under a watchdog shell that stops it when this process exits however it exits
//! (the shell waits for end-of-file on a pipe whose only writer is held here), as the
//! tests' moto does (testkit/src/moto.rs).

#![allow(clippy::disallowed_methods)] // waiting for the server reads real time

use std::path::{Path, PathBuf};

use std::time::Duration;

use anyhow::Context;

use crate::harness::watched::Watched;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};

/// The static credentials moto accepts (it checks no signature).
pub const ACCESS_KEY: &str = "testing";
pub const SECRET_KEY: &str = "testing";

/// `$0` is moto_server, `$1` the port. `read` returns at end-of-file.
const WATCHDOG: &str = "\"$0\" -H 127.0.0.1 -p \"$1\" >/dev/null 2>&1 & moto=$!; \
     read -r _; kill \"$moto\" 2>/dev/null; wait \"$moto\"";

/// Tables created at once.
const CREATE_BATCH: usize = 16;

/// A running moto server; stopped on drop.
pub struct Moto {
    /// Kept for its drop, which stops the server.
    _server: Watched,
    pub url: String,
}

impl Moto {
    /// Start one on a free loopback port and wait (up to 30 s) until it answers.
    pub fn start() -> anyhow::Result<Moto> {
        let server = Watched::start("moto_server", WATCHDOG, &find()?, answers)?;
        let url = server.url.clone();
        Ok(Moto {
            _server: server,
            url,
        })
    }

    /// Create `n` on-demand tables `{prefix}{i:05}` in `region`.
    pub fn create_tables(&self, region: &str, prefix: &str, n: usize) -> anyhow::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async {
            let credentials = aws_sdk_dynamodb::config::Credentials::new(
                ACCESS_KEY, SECRET_KEY, None, None, "moto",
            );
            let sdk = aws_config::defaults(BehaviorVersion::latest())
                .http_client(tollgate_engine::aws::default_http_client())
                .credentials_provider(credentials)
                .endpoint_url(&self.url)
                .region(Region::new(region.to_owned()))
                .load()
                .await;
            let client = aws_sdk_dynamodb::Client::new(&sdk);
            let names: Vec<String> = (0..n).map(|i| format!("{prefix}{i:05}")).collect();
            for batch in names.chunks(CREATE_BATCH) {
                let created = futures_util::future::join_all(batch.iter().map(|name| {
                    client
                        .create_table()
                        .table_name(name)
                        .attribute_definitions(
                            AttributeDefinition::builder()
                                .attribute_name("pk")
                                .attribute_type(ScalarAttributeType::S)
                                .build()
                                .expect("complete"),
                        )
                        .key_schema(
                            KeySchemaElement::builder()
                                .attribute_name("pk")
                                .key_type(KeyType::Hash)
                                .build()
                                .expect("complete"),
                        )
                        .billing_mode(BillingMode::PayPerRequest)
                        .send()
                }))
                .await;
                for (name, result) in batch.iter().zip(created) {
                    result.with_context(|| format!("creating table {name} in moto"))?;
                }
            }
            anyhow::Ok(())
        })
    }
}

/// `$TOLLGATE_MOTO_SERVER`, else `.venv/bin/moto_server` in the working directory or
/// above this executable, else `moto_server` on PATH.
fn find() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("TOLLGATE_MOTO_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let mut roots: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    if let Some(found) = roots
        .iter()
        .map(|r| r.join(".venv/bin/moto_server"))
        .find(|p| p.is_file())
    {
        return Ok(found);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("moto_server"))
                .find(|p| p.is_file())
        })
        .context(
            "bench outage needs moto's server and found none in .venv/ or on PATH: run \
             scripts/test once (it installs moto), or `python3 -m pip install \
             \"moto[server]\"`, or set TOLLGATE_MOTO_SERVER to its executable",
        )
}

/// Whether moto answers its own API's index with 200.
fn answers(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /moto-api/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && &head == b"HTTP/1.1 200"
}
