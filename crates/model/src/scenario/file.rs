//! Reading scenario and tour files: RON syntax errors with line and column, and the refusals
//! of a scenario that cannot exist.

use std::fmt;

use super::BUILT_IN;

/// Why a scenario was refused. Printed as `origin:line:column: message` for syntax errors and
/// `origin: field: message` for a scenario that cannot exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScenarioError {
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    Invalid {
        origin: String,
        field: String,
        message: String,
    },
    NotFound {
        name: String,
    },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Syntax {
                origin,
                line,
                column,
                message,
            } => write!(f, "{origin}:{line}:{column}: {message}"),
            ScenarioError::Invalid {
                origin,
                field,
                message,
            } => write!(f, "{origin}: {field}: {message}"),
            ScenarioError::NotFound { name } => {
                let names: Vec<&str> = BUILT_IN.iter().map(|b| b.name).collect();
                write!(
                    f,
                    "{name}: no such file, and no built-in scenario of that name (built-in: {})",
                    names.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ScenarioError {}

/// What the text holds where a syntax error was found (ron's span, lines and columns from 1), to
/// add to ron's message, with a hint for the usual slips: a fraction where a whole number goes,
/// parentheses after an action that takes no values.
fn found_at(
    source: &str,
    (line, column): (usize, usize),
    (end_line, end_column): (usize, usize),
) -> String {
    let ends_the_file = end_line >= source.lines().count().max(1)
        && source
            .lines()
            .last()
            .is_none_or(|l| end_column > l.chars().count());
    if ends_the_file {
        return ", found the end of the file".into();
    }
    let Some(text) = source.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let before: String = text.chars().take(column.saturating_sub(1)).collect();
    let mut rest = text
        .chars()
        .skip(column.saturating_sub(1))
        .skip_while(|c| c.is_whitespace());
    let Some(first) = rest.next() else {
        return String::new();
    };
    let mut token: String = std::iter::once(first)
        .chain(rest.take_while(|c| !c.is_whitespace() && !",()[]".contains(*c)))
        .take(24)
        .collect();
    // ron points past a minus sign.
    if before.ends_with('-') {
        token.insert(0, '-');
    }
    let hint = if token.starts_with('.') && before.ends_with(|c: char| c.is_ascii_digit()) {
        " (a whole number goes here)".to_string()
    } else if token.starts_with('(') && before.ends_with(|c: char| c.is_alphanumeric()) {
        let name: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!(" (`{name}` is written without parentheses)")
    } else {
        String::new()
    };
    format!(", found `{token}`{hint}")
}

/// Reads RON text into `T`; a syntax error gives `origin:line:column` and what was found there.
pub fn parse_ron<T: serde::de::DeserializeOwned>(
    source: &str,
    origin: &str,
) -> Result<T, ScenarioError> {
    // A byte order mark (some editors write one) becomes a space: columns stay the same.
    let source = match source.strip_prefix('\u{feff}') {
        Some(rest) => std::borrow::Cow::Owned(format!(" {rest}")),
        None => std::borrow::Cow::Borrowed(source),
    };
    ron::from_str(&source).map_err(|e| {
        let (line, column) = (e.span.start.line, e.span.start.col);
        let mut message = e.code.to_string();
        // Messages that quote nothing get what was found there.
        if !message.contains('`') {
            message.push_str(&found_at(
                &source,
                (line, column),
                (e.span.end.line, e.span.end.col),
            ));
        }
        ScenarioError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message,
        }
    })
}

/// The largest scenario or tour file read (the built-in ones are a few kilobytes).
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The text of the file `name` when it is a path to one, `None` when no such path exists (it is
/// a built-in's name, then). `built_in` says whether a built-in of that name exists: it wins over
/// a folder or device of that name. `kind` ("scenario", "tour") names the file in messages.
pub fn read_named_file(
    name: &str,
    built_in: bool,
    kind: &str,
) -> Result<Option<String>, ScenarioError> {
    let path = std::path::Path::new(name);
    let unreadable = |message: String| ScenarioError::Invalid {
        origin: name.to_string(),
        field: "file".into(),
        message,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            if meta.len() > MAX_FILE_BYTES {
                return Err(unreadable(format!(
                    "{} bytes: a {kind} file is at most {MAX_FILE_BYTES}",
                    meta.len()
                )));
            }
            std::fs::read_to_string(path)
                .map(Some)
                .map_err(|e| unreadable(format!("cannot be read: {e}")))
        }
        Ok(meta) if !built_in => {
            let what = if meta.is_dir() {
                "a folder"
            } else {
                "not a regular file"
            };
            Err(unreadable(format!(
                "is {what}: give a {kind}'s .ron file or a built-in's name"
            )))
        }
        _ => Ok(None),
    }
}
