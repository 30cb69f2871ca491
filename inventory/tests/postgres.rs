//! The inventory on a real PostgreSQL server: `TOLLGATE_TEST_POSTGRES_URL`
//! (scripts/postgres.sh starts one). Unset, each test prints `SKIPPED` and passes; set,
//! a server that cannot be reached fails the test. Each test has a schema of its own
//! (`search_path` in the URL's `options`), so the tests run in parallel.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::{scenarios, Engine};
use tollgate_inventory::{InventoryErrorKind, Store};

const VARIABLE: &str = "TOLLGATE_TEST_POSTGRES_URL";

struct PostgresSchema {
    base: String,
    schema: String,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl PostgresSchema {
    /// A fresh schema, or `None` (and a SKIPPED line) when no server is configured.
    fn new(test: &str) -> Option<PostgresSchema> {
        let Ok(base) = std::env::var(VARIABLE) else {
            println!("SKIPPED: {VARIABLE} unset");
            return None;
        };
        let schema = format!(
            "t_{}_{}_{}",
            test.chars().take(30).collect::<String>(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut client = postgres::Client::connect(&base, postgres::NoTls).unwrap_or_else(|err| {
            panic!("{VARIABLE} is set but the server cannot be reached: {err}")
        });
        client
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .unwrap();
        Some(PostgresSchema { base, schema })
    }

    fn client(&self) -> postgres::Client {
        let mut client = postgres::Client::connect(&self.base, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("SET search_path TO {}", self.schema))
            .unwrap();
        client
    }
}

impl Drop for PostgresSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.base, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
        }
    }
}

impl Engine for PostgresSchema {
    fn url(&self) -> String {
        let separator = if self.base.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}options=-csearch_path%3D{}",
            self.base, self.schema
        )
    }

    fn scalar(&self, sql: &str) -> i64 {
        let rows = self.client().query(sql, &[]).unwrap();
        let Some(row) = rows.first() else { return 0 };
        row.try_get::<_, Option<i64>>(0)
            .or_else(|_| {
                row.try_get::<_, Option<i32>>(0)
                    .map(|value| value.map(i64::from))
            })
            .unwrap()
            .unwrap_or(0)
    }

    fn execute(&self, sql: &str) {
        self.client().batch_execute(sql).unwrap();
    }
}

macro_rules! on_postgres {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            if let Some(engine) = PostgresSchema::new(stringify!($name)) {
                scenarios::$name(&engine);
            }
        }
    )*};
}

on_postgres!(
    round_trip_stores_every_item_as_a_resource_row,
    a_second_scan_records_additions_modifications_and_proven_removals,
    an_incomplete_listing_leaves_absent_resources_and_says_not_verified,
    a_resource_seen_only_tags_only_is_never_removed,
    a_newer_schema_is_refused_and_left_unchanged,
    an_older_schema_is_migrated,
    two_writers_at_once_lose_no_row,
    two_writers_of_one_account_at_once_both_commit,
    a_crash_mid_account_leaves_nothing_of_it,
    filters_and_pages_cover_every_row_once,
    an_organization_report_commits_account_by_account,
);

/// Every way an error of the crate can be printed.
fn printed(err: &tollgate_inventory::InventoryError) -> String {
    let mut text = format!("{err}\n{err:?}\n");
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(&format!("{cause}\n{cause:?}\n"));
        source = cause.source();
    }
    text
}

#[test]
fn an_unreachable_server_is_named_without_its_password() {
    // Needs no server: port 1 refuses.
    let err = Store::open("postgres://u:secret@127.0.0.1:1/db").unwrap_err();
    assert_eq!(err.kind(), InventoryErrorKind::Unreachable);
    let text = printed(&err);
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("postgres://u:***@127.0.0.1:1/db"), "{text}");
    // A URL the driver cannot parse does not echo its password either.
    for malformed in [
        "postgres://u:secret@127.0.0.1:notaport/db",
        "postgres://u:secret@127.0.0.1/db?sslmode=bogus",
    ] {
        let err = Store::open(malformed).unwrap_err();
        let text = printed(&err);
        assert!(!text.contains("secret"), "{text}");
    }
}

#[test]
fn a_wrong_password_is_refused_without_printing_it() {
    let Ok(base) = std::env::var(VARIABLE) else {
        println!("SKIPPED: {VARIABLE} unset");
        return;
    };
    let url = tollgate_inventory::StoreUrl::parse(&base).unwrap();
    // Put a wrong password in the server's URL: postgres://user:WRONG@host...
    let (scheme, rest) = base.split_once("://").unwrap();
    let (userinfo, host) = rest.rsplit_once('@').unwrap();
    let user = userinfo.split(':').next().unwrap();
    let wrong = format!("{scheme}://{user}:wrong-secret-7@{host}");
    match Store::open(&wrong) {
        Ok(_) => {
            println!("SKIPPED: the server at {url} accepts any password (trust authentication)")
        }
        Err(err) => {
            assert_eq!(err.kind(), InventoryErrorKind::Unreachable);
            let text = printed(&err);
            assert!(!text.contains("wrong-secret-7"), "{text}");
            assert!(text.contains(":***@"), "{text}");
        }
    }
    // The right password works, and the store never prints it.
    let store = Store::open(&base).unwrap();
    if let Some(password) = userinfo.split_once(':').map(|(_, p)| p) {
        assert!(!store.redacted_url().contains(password));
        assert!(!format!("{store:?}").contains(password));
    }
}
