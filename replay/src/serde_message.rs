//! serde's message without its position, shared by the script's parts (`script`,
//! `metric_data`): positions inside one request would mislead, since the error's
//! location already says which request.

/// `e`'s text without serde's trailing ` at line L column C`.
pub(crate) fn message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) if e.line() > 0 => text[..i].to_owned(),
        _ => text,
    }
}
