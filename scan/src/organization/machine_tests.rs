//! The organization loop's rules, one table row each: a row feeds events and asks for
//! the next action at given instants, and lists the actions it must get.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use tollgate_engine::aws::{CallError, CallErrorKind};

use super::*;
use crate::organization::progress::AccountPhase;

/// One input of a row.
enum In {
    /// Feed this event.
    E(Event),
    /// Ask for the next action at this instant.
    Next(Now),
}

const NOW: Now = Now {
    deadline_passed: false,
    cancelled: false,
};
const CANCELLED: Now = Now {
    deadline_passed: false,
    cancelled: true,
};
const LATE: Now = Now {
    deadline_passed: true,
    cancelled: false,
};

fn page(ids: &[&str], more: bool) -> In {
    In::E(Event::Page {
        listed: Ok(ids
            .iter()
            .map(|id| ListedAccount::new(*id, "ACTIVE"))
            .collect()),
        more,
    })
}

fn failed_page() -> In {
    In::E(Event::Page {
        listed: Err(CallError::in_answer(
            CallErrorKind::Fatal,
            "ListAccounts",
            Some("AccessDeniedException".into()),
            "not allowed",
        )),
        more: true,
    })
}

fn ended(account: &str) -> In {
    In::E(Event::AccountEnded(Outcome::Skipped(SkippedAccount {
        account: account.into(),
        reason: SkipReason::RoleNotAssumable,
        code: None,
        message: "refused".into(),
    })))
}

fn start(account: &str) -> Action {
    Action::Start(account.into())
}

fn wait(account: bool, page: bool, cancel: bool, deadline: bool) -> Action {
    Action::Wait(WaitFor {
        account,
        page,
        cancel,
        deadline,
    })
}

fn run(max: usize, filter: AccountFilter, inputs: Vec<In>) -> (Vec<Action>, Machine) {
    let board = ProgressBoard::default();
    let mut machine = Machine::new(filter, NonZeroUsize::new(max).unwrap(), board);
    let mut actions = Vec::new();
    for input in inputs {
        match input {
            In::E(event) => machine.on(event),
            In::Next(now) => actions.push(machine.next(now)),
        }
    }
    (actions, machine)
}

#[test]
fn each_rule_of_the_loop_gives_its_actions() {
    use In::Next;
    let rows: Vec<(&str, usize, Vec<In>, Vec<Action>)> = vec![
        (
            "before the first page the machine waits for it (and the cancellation) only",
            2,
            vec![Next(NOW)],
            vec![wait(false, true, true, false)],
        ),
        (
            "a first page's accounts start while the listing goes on, one per free slot",
            2,
            vec![
                page(&["3", "1", "2"], true),
                Next(NOW),
                Next(NOW),
                Next(NOW),
            ],
            vec![start("1"), start("2"), wait(true, true, true, true)],
        ),
        (
            "an account's end frees its slot for the next queued account",
            1,
            vec![page(&["1", "2"], false), Next(NOW), ended("1"), Next(NOW)],
            vec![start("1"), start("2")],
        ),
        (
            "the last page ends the listing: done once the running accounts end",
            1,
            vec![
                page(&["1"], false),
                Next(NOW),
                Next(NOW),
                ended("1"),
                Next(NOW),
            ],
            vec![start("1"), wait(true, false, true, false), Action::Done],
        ),
        (
            "a page that fails ends the listing; the accounts before it still run",
            4,
            vec![
                page(&["1"], true),
                Next(NOW),
                failed_page(),
                Next(NOW),
                ended("1"),
                Next(NOW),
            ],
            vec![start("1"), wait(true, false, true, false), Action::Done],
        ),
        (
            "cancellation skips the queued accounts and waits for the running ones",
            1,
            vec![page(&["1", "2", "3"], false), Next(NOW), Next(CANCELLED)],
            vec![start("1"), wait(true, false, true, false)],
        ),
        (
            "the cancellation is waited for once: seen, it is not asked for again",
            1,
            vec![
                page(&["1"], true),
                Next(NOW),
                In::E(Event::Cancelled),
                Next(CANCELLED),
            ],
            vec![start("1"), wait(true, true, false, false)],
        ),
        (
            "a passed deadline skips the queued accounts, and is no longer waited for",
            1,
            vec![page(&["1", "2"], true), Next(NOW), Next(NOW), Next(LATE)],
            vec![
                start("1"),
                wait(true, true, true, true),
                wait(true, true, true, false),
            ],
        ),
        (
            "nothing listed and nothing to list: done at once",
            3,
            vec![page(&[], false), Next(NOW)],
            vec![Action::Done],
        ),
        (
            "a wake-up changes nothing but what the instant says",
            1,
            vec![
                page(&["1", "2"], false),
                Next(NOW),
                In::E(Event::Woke),
                Next(NOW),
            ],
            vec![start("1"), wait(true, false, true, true)],
        ),
    ];
    for (name, max, inputs, expected) in rows {
        let (actions, _) = run(max, AccountFilter::default(), inputs);
        assert_eq!(actions, expected, "{name}");
    }
}

#[test]
fn queued_accounts_skipped_by_cancellation_or_deadline_carry_that_reason() {
    for (now, reason, text) in [
        (CANCELLED, SkipReason::Cancelled, "cancelled"),
        (LATE, SkipReason::Deadline, "deadline"),
    ] {
        let (_, machine) = run(
            1,
            AccountFilter::default(),
            vec![page(&["1", "2", "3"], false), In::Next(NOW), In::Next(now)],
        );
        let board = machine.progress.clone();
        let accounts = machine.into_accounts();
        let skipped: Vec<_> = accounts
            .skipped
            .iter()
            .map(|s| (s.account.as_str(), s.reason))
            .collect();
        assert_eq!(skipped, [("2", reason), ("3", reason)]);
        assert!(
            accounts.skipped.iter().all(|s| s.message.contains(text)),
            "{:?}",
            accounts.skipped
        );
        let phases: Vec<_> = board
            .snapshot()
            .accounts
            .iter()
            .map(|a| (a.account.clone(), a.phase))
            .collect();
        assert_eq!(phases[1], ("2".to_owned(), AccountPhase::Skipped(reason)));
    }
}

#[test]
fn a_failed_page_is_the_organizations_error_naming_the_accounts_listed_before_it() {
    let (_, machine) = run(
        4,
        AccountFilter::default(),
        vec![page(&["1", "2"], true), failed_page()],
    );
    assert_eq!(machine.listed(), Some(2));
    let accounts = machine.into_accounts();
    let error = accounts.error.expect("the listing's error");
    assert_eq!(error.operation, "organizations:ListAccounts");
    assert_eq!(error.code.as_deref(), Some("AccessDeniedException"));
    assert!(
        error.message.contains("stopped after 2 accounts"),
        "{}",
        error.message
    );
    assert_eq!(accounts.listed, 2);
}

#[test]
fn filters_skip_as_pages_arrive_and_unlisted_named_accounts_once_the_listing_ends() {
    let filter = AccountFilter {
        only: BTreeSet::from(["1".to_owned(), "2".to_owned(), "9".to_owned()]),
        exclude: BTreeSet::from(["2".to_owned()]),
    };
    let (actions, machine) = run(
        4,
        filter,
        vec![
            page(&["1", "2", "3"], true),
            In::Next(NOW),
            page(&[], false),
            In::Next(NOW),
        ],
    );
    assert_eq!(actions, [start("1"), wait(true, false, true, false)]);
    let accounts = machine.into_accounts();
    let mut skipped: Vec<_> = accounts
        .skipped
        .iter()
        .map(|s| (s.account.as_str(), s.reason))
        .collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            ("2", SkipReason::Excluded),
            ("3", SkipReason::Excluded),
            ("9", SkipReason::NotInOrganization)
        ]
    );
    assert_eq!(accounts.listed, 3);
}

#[test]
fn the_listed_count_is_known_only_once_the_last_page_arrived() {
    let (_, machine) = run(4, AccountFilter::default(), vec![page(&["1", "2"], true)]);
    assert_eq!(machine.listed(), None);
    let pages = vec![page(&["1", "2"], true), page(&["3"], false)];
    let (_, machine) = run(4, AccountFilter::default(), pages);
    assert_eq!(machine.listed(), Some(3));
}
