//! The web page's side of the app. The page's address chooses what opens, so that a talk's slide
//! or a blog post can link straight to a scenario, an instant and a look:
//!
//! `?scenario=NAME&at_ms=N&theme=light|dark&speed=X&paused=1&text_scale=X&seed=S` opens a
//! scenario in the sandbox; `?tour=NAME&beat=N` a tour at a beat (the walkthrough at beat 1 when
//! the address has no parameters); `talk=1` the talk preset.
//!
//! `?report=1` (with `scenario`, `seed` and `until_ms`) runs the scenario headless instead and
//! writes its JSON report into the page, the same bytes `kafkascope run` prints natively.
//!
//! A slide deck that embeds the page moves it by `{kafkascope: {beat: N}}` messages or `#beat=N`
//! fragments, and the page posts its own beat changes to its parent in the same form (the
//! messages and the address bar's link are the app's, `app::link`).
//!
//! `presenter=1` (a tour's) opens the speaker's notes view in place of the stage. Pages of the
//! same browser keep in step through a `BroadcastChannel`: each posts the steps taken on it as
//! `{kafkascope: {step: NAME, beat: N}}` and its blanking as `{kafkascope: {blank: NAME}}`, and
//! takes the others'.
//!
//! Reading the address is plain Rust, tested natively; only [`main`] touches the page.

use crate::scenario::Scenario;

/// What the page's address asks for.
#[derive(Debug)]
pub enum Page {
    /// The window app, opened as the parameters say.
    View(Box<crate::app::Options>),
    /// A headless run's JSON report, to `until_ms` (the scenario's duration when `None`).
    Report {
        scenario: Box<Scenario>,
        until_ms: Option<u64>,
    },
}

/// The parameters the page understands, for the message about one it does not.
const KNOWN: &[&str] = &[
    "scenario",
    "at_ms",
    "theme",
    "speed",
    "paused",
    "text_scale",
    "seed",
    "report",
    "until_ms",
    "tour",
    "beat",
    "talk",
    "presenter",
];

/// Reads a URL's query (the part after `?`, without the `#` fragment) into what the page opens.
/// Every parameter is checked as the command line checks its flag; an unknown or repeated one is
/// an error, so a mistyped link says so instead of quietly opening something else.
pub fn parse_query(query: &str) -> Result<Page, String> {
    let mut params: Vec<(String, String)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (decode(key)?, decode(value)?);
        if !KNOWN.contains(&key.as_str()) {
            return Err(format!(
                "unknown parameter {key:?}; the page understands {}",
                KNOWN.join(", ")
            ));
        }
        if params.iter().any(|(k, _)| *k == key) {
            return Err(format!("parameter {key:?} is given twice"));
        }
        params.push((key, value));
    }
    let get = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let bad = |key: &str, message: String| format!("{key}={:?}: {message}", get(key).unwrap_or(""));
    let number = |key: &str| -> Result<Option<u64>, String> {
        get(key)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| bad(key, "expected a whole number".into()))
            })
            .transpose()
    };
    let flag = |key: &str| -> Result<bool, String> {
        match get(key) {
            None | Some("0" | "false") => Ok(false),
            Some("" | "1" | "true") => Ok(true),
            Some(_) => Err(bad(key, "expected 1 or 0".into())),
        }
    };

    // A scenario's parameters open the sandbox; without any, the page opens a tour: the one
    // named, or the walkthrough.
    const SCENARIO: [&str; 7] = [
        "scenario", "at_ms", "speed", "paused", "seed", "report", "until_ms",
    ];
    let sandbox = SCENARIO.iter().any(|k| get(k).is_some());
    if let Some(name) = get("tour").or((!sandbox).then_some("walkthrough")) {
        for key in SCENARIO {
            if get(key).is_some() {
                return Err(format!(
                    "{key} is for a scenario; a tour takes beat, theme, text_scale, talk and presenter"
                ));
            }
        }
        let (tour, scenario) =
            crate::tour::Tour::built_in(name).map_err(|e| format!("tour={name:?}: {e}"))?;
        let beat = match get("beat") {
            Some(n) => crate::app::options::parse_beat(&tour, n).map_err(|e| bad("beat", e))?,
            None => 0,
        };
        let mut options = crate::app::Options::tour(tour, scenario, beat, false);
        look(&mut options, &get, &bad, &flag)?;
        options.presenter = flag("presenter")?;
        return Ok(Page::View(Box::new(options)));
    }
    for key in ["beat", "presenter"] {
        if get(key).is_some() {
            return Err(format!("{key} is a tour's: give tour=NAME too"));
        }
    }
    let name = get("scenario").unwrap_or("quickstart");
    let mut scenario = Scenario::built_in(name).map_err(|e| format!("scenario={name:?}: {e}"))?;
    if let Some(seed) = number("seed")? {
        scenario.seed = seed;
    }

    if flag("report")? {
        for key in ["at_ms", "theme", "speed", "paused", "text_scale", "talk"] {
            if get(key).is_some() {
                return Err(format!(
                    "{key} sets how the window opens; a report takes scenario, seed and until_ms"
                ));
            }
        }
        return Ok(Page::Report {
            scenario: Box::new(scenario),
            until_ms: number("until_ms")?,
        });
    }
    if get("until_ms").is_some() {
        return Err("until_ms is for report=1; the window opens at at_ms".into());
    }

    let at_ms = number("at_ms")?.unwrap_or(0);
    let mut options = crate::app::Options::at(scenario, at_ms).map_err(|e| format!("at_ms {e}"))?;
    if let Some(speed) = get("speed") {
        options.speed = crate::app::options::parse_speed(speed).map_err(|e| bad("speed", e))?;
    }
    options.paused = flag("paused")?;
    look(&mut options, &get, &bad, &flag)?;
    Ok(Page::View(Box::new(options)))
}

/// The parameters of how the window looks, for a scenario and a tour alike.
fn look<'a>(
    options: &mut crate::app::Options,
    get: &dyn Fn(&str) -> Option<&'a str>,
    bad: &dyn Fn(&str, String) -> String,
    flag: &dyn Fn(&str) -> Result<bool, String>,
) -> Result<(), String> {
    if let Some(theme) = get("theme") {
        options.theme = crate::app::options::parse_theme(theme).map_err(|e| bad("theme", e))?;
    }
    if let Some(scale) = get("text_scale") {
        options.text_scale =
            crate::app::options::parse_text_scale(scale).map_err(|e| bad("text_scale", e))?;
    }
    options.talk = flag("talk")?;
    Ok(())
}

/// The query part of a whole URL: after the first `?`, before any `#`.
pub fn query_of(url: &str) -> &str {
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    url.split_once('?').map_or("", |(_, q)| q)
}

/// Undoes a query's form encoding: `+` is a space and `%XX` a byte of UTF-8.
fn decode(s: &str) -> Result<String, String> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = rest
                    .get(..2)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("{s:?}: a % must be followed by two hex digits"))?;
                bytes.push(hex);
                rest = &rest[2..];
            }
            _ => bytes.push(b),
        }
    }
    String::from_utf8(bytes).map_err(|_| format!("{s:?} is not UTF-8 once decoded"))
}

/// The web build's entry point: reads the page's address and opens the window, writes a report,
/// or shows what is wrong with the address.
#[cfg(target_arch = "wasm32")]
pub fn main() {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let url = document.url().unwrap_or_default();
    match parse_query(query_of(&url)) {
        Ok(Page::View(options)) => {
            crate::app::run(*options);
        }
        Ok(Page::Report { scenario, until_ms }) => {
            match crate::report::run(&scenario, until_ms, "until_ms") {
                Ok(report) => {
                    document.set_title(&format!("Kafkascope report: {}", scenario.name));
                    show(&document, "report", &report.to_json());
                }
                Err(message) => fail(&document, &message),
            }
        }
        Err(message) => fail(&document, &message),
    }
}

/// Shows `text` in the page's element `id`, which the page keeps hidden until then.
#[cfg(target_arch = "wasm32")]
fn show(document: &web_sys::Document, id: &str, text: &str) {
    if let Some(element) = document.get_element_by_id(id) {
        element.set_text_content(Some(text));
        let _ = element.remove_attribute("hidden");
    }
}

/// Says on the page, and on the console, why nothing opened.
#[cfg(target_arch = "wasm32")]
fn fail(document: &web_sys::Document, message: &str) {
    let message = format!("kafkascope: {message}");
    web_sys::console::error_1(&wasm_bindgen::JsValue::from_str(&message));
    show(document, "message", &message);
}
