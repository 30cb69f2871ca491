//! The shared config files as the default chain reads them: which profile is selected,
//! which files hold it, and what kind of source it uses (SSO, `credential_process`),
//! parsed with aws-config's own parser so the answer matches the chain's.

use std::borrow::Cow;
use std::path::PathBuf;

use aws_config::profile::ProfileSet;
use aws_types::os_shim_internal::{Env, Fs};

/// What the shared files say about the selected profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProfileFacts {
    /// The selected profile (`--profile`, else `AWS_PROFILE`, else `default`).
    pub name: String,
    /// Whether it was named (`--profile` or `AWS_PROFILE`) rather than the default.
    pub named: bool,
    /// The config and credentials files read.
    pub files: Vec<PathBuf>,
    /// Whether either file defines it.
    pub exists: bool,
    /// The profiles the files define, sorted.
    pub defined: Vec<String>,
    /// It (or a `source_profile` it leads to) uses SSO.
    pub uses_sso: bool,
    /// It (or a `source_profile` it leads to) runs a `credential_process`.
    pub uses_process: bool,
    /// The files could not be parsed: why.
    pub unreadable: Option<String>,
}

/// The selected profile's facts, for `profile` (`--profile`) or the environment's choice.
pub(crate) async fn profile_facts(profile: Option<&str>) -> ProfileFacts {
    let env = Env::real();
    let from_env = env.get("AWS_PROFILE").ok().filter(|p| !p.is_empty());
    let named = profile.is_some() || from_env.is_some();
    let name = profile
        .map(str::to_owned)
        .or(from_env)
        .unwrap_or_else(|| "default".to_owned());
    let mut facts = ProfileFacts {
        files: shared_files(&env),
        name: name.clone(),
        named,
        ..ProfileFacts::default()
    };
    // The deprecated alias is aws-config's own spelling of the default file set
    // (its replacement lives in aws-runtime, which tollgate does not depend on).
    #[allow(deprecated)]
    let files = aws_config::profile::profile_file::ProfileFiles::default();
    match aws_config::profile::load(&Fs::real(), &env, &files, Some(Cow::Owned(name))).await {
        Ok(set) => read_profile(&set, &mut facts),
        Err(e) => facts.unreadable = Some(e.to_string()),
    }
    facts
}

fn read_profile(set: &ProfileSet, facts: &mut ProfileFacts) {
    let mut defined: Vec<String> = set.profiles().map(str::to_owned).collect();
    defined.sort();
    facts.defined = defined;
    facts.exists = set.get_profile(&facts.name).is_some();
    // Follow source_profile links (bounded: a loop is the chain's error to report).
    let mut next = Some(facts.name.clone());
    let mut seen = Vec::new();
    while let Some(name) = next.take() {
        if seen.contains(&name) {
            break;
        }
        let Some(profile) = set.get_profile(&name) else {
            break;
        };
        facts.uses_sso |=
            profile.get("sso_session").is_some() || profile.get("sso_start_url").is_some();
        facts.uses_process |= profile.get("credential_process").is_some();
        next = profile.get("source_profile").map(str::to_owned);
        seen.push(name);
    }
}

/// The config and credentials files the chain reads: `AWS_CONFIG_FILE` and
/// `AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/config` and `~/.aws/credentials`.
fn shared_files(env: &Env) -> Vec<PathBuf> {
    let home = env
        .get("HOME")
        .or_else(|_| env.get("USERPROFILE"))
        .ok()
        .map(PathBuf::from);
    let file = |var: &str, default: &str| -> Option<PathBuf> {
        match env.get(var) {
            Ok(path) => Some(match (path.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(path),
            }),
            Err(_) => home.as_ref().map(|h| h.join(".aws").join(default)),
        }
    };
    [
        file("AWS_CONFIG_FILE", "config"),
        file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
    ]
    .into_iter()
    .flatten()
    .collect()
}
