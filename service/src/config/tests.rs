use super::*;

fn parse(text: &str) -> Result<ServiceConfig, ConfigError> {
    ServiceConfig::parse(Path::new("/etc/tollgate.toml"), text)
}

#[test]
fn a_full_file_is_read_into_typed_values() {
    let config = parse(
        r#"
[service]
max_concurrent_scans = 3
catch_up = false
retention = { reports_per_target = 5, days = 7 }

[[target]]
name = "prod"
regions = ["us-west-2", "us-east-1"]
datasets = ["kms-keys"]
profile = "prod"
timeout = "90s"
"#,
    )
    .unwrap();
    assert_eq!(config.max_concurrent_scans.get(), 3);
    assert!(!config.catch_up);
    assert_eq!(config.retention.reports_per_target.get(), 5);
    assert_eq!(config.retention.max_age, Duration::from_secs(7 * 86_400));
    let prod = &config.targets["prod"];
    assert_eq!(prod.regions, ["us-east-1", "us-west-2"]);
    assert_eq!(prod.datasets, [tollgate_collectors::Dataset::KmsKeys]);
    assert_eq!(prod.profile.as_deref(), Some("prod"));
    assert_eq!(prod.timeout, Duration::from_secs(90));
}

#[test]
fn a_target_may_scan_another_account_through_a_role() {
    let config = parse(
        "[[target]]\nname = \"other\"\nrole_arn = \"arn:aws:iam::111111111111:role/scanner\"\nexternal_id = \"tenant-42\"\n",
    )
    .unwrap();
    let role = config.targets["other"].role.clone().unwrap();
    assert_eq!(role.role_arn, "arn:aws:iam::111111111111:role/scanner");
    assert_eq!(role.external_id.as_deref(), Some("tenant-42"));
    assert_eq!(role.session_name(), "tollgate");
}

#[test]
fn a_target_reads_cloudwatch_activity_only_when_it_says_metrics_true() {
    let config =
        parse("[[target]]\nname = \"idle\"\nmetrics = true\n[[target]]\nname = \"plain\"\n")
            .unwrap();
    assert!(config.targets["idle"].metrics);
    assert!(!config.targets["plain"].metrics);
    assert!(parse("[[target]]\nname = \"x\"\nmetrics = \"yes\"\n").is_err());
}

#[test]
fn a_target_reads_cloud_control_details_only_when_it_says_details_true() {
    use tollgate_collectors::cloudcontrol::Details;
    let config =
        parse("[[target]]\nname = \"full\"\ndetails = true\n[[target]]\nname = \"plain\"\n")
            .unwrap();
    assert_eq!(config.targets["full"].details, Details::Read);
    assert_eq!(config.targets["plain"].details, Details::Listed);
    assert!(parse("[[target]]\nname = \"x\"\ndetails = 1\n").is_err());
}

#[test]
fn a_target_prices_transit_gateways_only_when_it_says_pricing_or_names_a_price_list() {
    let config = parse(
        "[[target]]\nname = \"priced\"\npricing = true\n\
         [[target]]\nname = \"local\"\npricing_url = \"http://127.0.0.1:9\"\n\
         [[target]]\nname = \"plain\"\n",
    )
    .unwrap();
    assert_eq!(
        config.targets["priced"].pricing.as_deref(),
        Some("https://pricing.us-east-1.amazonaws.com")
    );
    assert_eq!(
        config.targets["local"].pricing.as_deref(),
        Some("http://127.0.0.1:9")
    );
    assert_eq!(config.targets["plain"].pricing, None);
    let err = parse("[[target]]\nname = \"x\"\npricing_url = \"pricing\"\n").unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
}

#[test]
fn an_empty_file_gives_the_defaults() {
    assert_eq!(parse("").unwrap(), ServiceConfig::default());
}

#[test]
fn an_unknown_key_names_file_line_and_key() {
    let err = parse("[service]\nmax_concurrent_scans = 2\nmax_scans = 4\n").unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
    assert_eq!(err.key.as_deref(), Some("max_scans"), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("/etc/tollgate.toml:3: `max_scans`: unknown field"),
        "{text}"
    );
}

#[test]
fn bad_values_name_their_line_and_key() {
    let cases = [
        (
            "[service]\n\nmax_concurrent_scans = 0\n",
            3,
            "service.max_concurrent_scans",
        ),
        (
            "[[target]]\nname = \"a\"\nregions = [\"Mars\"]\n",
            3,
            "target[0].regions",
        ),
        (
            "[[target]]\nname = \"a\"\ndatasets = [\"ec2\"]\n",
            3,
            "target[0].datasets",
        ),
        (
            "[[target]]\nname = \"a\"\ntimeout = \"soon\"\n",
            3,
            "target[0].timeout",
        ),
        (
            "[[target]]\nname = \"a\"\nendpoint_url = \"ftp://x\"\n",
            3,
            "target[0].endpoint_url",
        ),
        (
            "[[target]]\nname = \"a\"\n[[target]]\nname = \"a\"\n",
            4,
            "target[1].name",
        ),
        (
            "[service]\nretention = { days = -1 }\n",
            2,
            "service.retention.days",
        ),
        (
            "[[target]]\nname = \"a\"\nregions = []\nrole_arn = \"arn:aws:iam::42:role/x\"\n",
            4,
            "target[0].role_arn",
        ),
        (
            "[[target]]\nname = \"a\"\nrole_arn = \"arn:aws:iam::111111111111:role/x\"\nsession_name = \"a b\"\n",
            4,
            "target[0].session_name",
        ),
        (
            "[[target]]\nname = \"a\"\nexternal_id = \"abc\"\n",
            3,
            "target[0].external_id",
        ),
    ];
    for (text, line, key) in cases {
        let err = parse(text).unwrap_err();
        assert_eq!(
            (err.line, err.key.as_deref()),
            (Some(line), Some(key)),
            "{text:?}: {err}"
        );
    }
}

#[test]
fn a_wrong_type_names_the_key_on_its_line() {
    let err = parse("[service]\ncatch_up = \"yes\"\n").unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
    assert_eq!(err.key.as_deref(), Some("catch_up"), "{err}");
}

#[test]
fn schedules_name_a_target_a_cron_pattern_and_a_zone() {
    let config = parse(
        "[[target]]\nname = \"prod\"\n[[schedule]]\ntarget = \"prod\"\ncron = \"30 2 * * *\"\ntimezone = \"Europe/Berlin\"\n",
    )
    .unwrap();
    assert_eq!(config.schedules.len(), 1);
    assert_eq!(config.schedules[0].target, "prod");
    let cases = [
        ("[[target]]\nname = \"p\"\n[[schedule]]\ntarget = \"q\"\ncron = \"* * * * *\"\ntimezone = \"UTC\"\n", 4, "schedule[0].target"),
        ("[[target]]\nname = \"p\"\n[[schedule]]\ntarget = \"p\"\ncron = \"* * *\"\ntimezone = \"UTC\"\n", 5, "schedule[0].cron"),
        ("[[target]]\nname = \"p\"\n[[schedule]]\ntarget = \"p\"\ncron = \"* * * * *\"\ntimezone = \"Mars/Olympus\"\n", 6, "schedule[0].timezone"),
    ];
    for (text, line, key) in cases {
        let err = parse(text).unwrap_err();
        assert_eq!(
            (err.line, err.key.as_deref()),
            (Some(line), Some(key)),
            "{text:?}: {err}"
        );
    }
}

#[test]
fn a_fleet_section_is_read_into_checked_values() {
    let config = parse(
        "[fleet]\ntable = \"tollgate-fleet\"\nregion = \"eu-west-1\"\nendpoint_url = \"http://127.0.0.1:4567\"\nskew_ms = 250\non_error = \"stop\"\n",
    )
    .unwrap();
    let fleet = config.fleet.unwrap();
    assert_eq!(fleet.table.as_deref(), Some("tollgate-fleet"));
    assert_eq!(fleet.region.as_deref(), Some("eu-west-1"));
    assert_eq!(fleet.endpoint_url.as_deref(), Some("http://127.0.0.1:4567"));
    assert_eq!(fleet.skew, Some(Duration::from_millis(250)));
    assert_eq!(fleet.on_error, Some(tollgate_quota::fleet::OnError::Stop));
    assert_eq!(parse("").unwrap().fleet, None, "no section, no fleet mode");
}

#[test]
fn a_bad_fleet_value_names_file_line_and_key() {
    for (text, line, key, says) in [
        ("[fleet]\ntable = \"t\"\n", 2, "fleet.table", "table name"),
        (
            "[fleet]\ntable = \"ok-table\"\nskew_ms = 90000\n",
            3,
            "fleet.skew_ms",
            "milliseconds",
        ),
        (
            "[fleet]\ntable = \"ok-table\"\non_error = \"full\"\n",
            3,
            "fleet.on_error",
            "local-share",
        ),
        (
            "[fleet]\ntable = \"ok-table\"\nendpoint_url = \"127.0.0.1:4567\"\n",
            3,
            "fleet.endpoint_url",
            "endpoint URL",
        ),
        (
            "[fleet]\ntable = \"ok-table\"\nregion = \"EU West\"\n",
            3,
            "fleet.region",
            "region",
        ),
        (
            "[fleet]\ntable = \"ok-table\"\nskew = 5\n",
            3,
            "skew",
            "unknown field",
        ),
    ] {
        let err = parse(text).unwrap_err();
        assert_eq!(err.line, Some(line), "{text}: {err}");
        assert_eq!(err.key.as_deref(), Some(key), "{text}: {err}");
        assert!(err.to_string().starts_with("/etc/tollgate.toml:"), "{err}");
        assert!(err.message.contains(says), "{text}: {err}");
    }
    let missing = parse("[fleet]\non_error = \"stop\"\n").unwrap_err();
    assert!(missing.message.contains("table"), "{missing}");
}

#[test]
fn an_organization_target_reads_its_filters_and_bad_ones_name_line_and_key() {
    let config = parse(
        "[[target]]\nname = \"org\"\norganization = true\nregions = [\"all\"]\n\
         regions_fallback = [\"eu-west-1\"]\nrole_name = \"Scanner\"\n\
         exclude_accounts = [\"222222222222\"]\nmax_accounts_in_flight = 3\n",
    )
    .unwrap();
    let org = config.targets["org"]
        .organization()
        .expect("an organization");
    assert_eq!(org.role_name, "Scanner");
    assert!(org.accounts.exclude.contains("222222222222"));
    assert_eq!(org.max_accounts_in_flight.get(), 3);
    assert_eq!(
        org.scan.region_source,
        tollgate_scan::request::RegionSource::Enabled {
            fallback: vec!["eu-west-1".into()]
        }
    );
    let head = "[[target]]\nname = \"org\"\n";
    for (rest, line, key) in [
        ("role_name = \"x\"\n", 3, "target[0].role_name"),
        (
            "organization = true\naccounts = [\"12\"]\n",
            4,
            "target[0].accounts",
        ),
        (
            "organization = true\nmax_accounts_in_flight = 0\n",
            4,
            "target[0].max_accounts_in_flight",
        ),
        (
            "organization = true\nrole_arn = \"arn:aws:iam::111111111111:role/x\"\n",
            4,
            "target[0].role_arn",
        ),
        (
            "regions_fallback = [\"us-east-1\"]\n",
            3,
            "target[0].regions_fallback",
        ),
    ] {
        let text = format!("{head}{rest}");
        let err = parse(&text).unwrap_err();
        assert_eq!(
            (err.line, err.key.as_deref()),
            (Some(line), Some(key)),
            "{text}: {err}"
        );
    }
}
