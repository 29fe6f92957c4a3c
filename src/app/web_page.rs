//! The page around the web build's canvas follows what the app shows: the browser tab's title
//! names the scenario, the address bar holds a link to what is on screen (copy it to share the
//! scenario, the paused instant and the look), and the canvas carries the scenario, the instant
//! drawn and a frame count, which the page (and its tests) read.
//!
//! The pages of one talk (the speaker's notes, `presenter=1`, and the stage on the projector)
//! keep in step through a `BroadcastChannel` named after the tour: each tells the others the
//! steps taken on it and the stage's blanking, and takes theirs.

use bevy::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

use super::link::Link;
use super::playback::{Model, Playback, Shown};
use super::tour::TourPlay;
use crate::scenario::{BuiltIn, Scenario};
use crate::tour::BUILT_IN_TOURS;

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Page>()
        .add_systems(Startup, (add_file_picker, listen_to_deck, join_talk))
        .add_systems(
            Update,
            (follow_deck, hear_talk, tell_talk)
                .chain()
                .in_set(super::InputSet::Read),
        )
        .add_systems(Last, tell_page);
}

/// What another page of the talk said, not yet taken.
enum Heard {
    Step(crate::view::tour::Step),
    Blank(crate::view::tour::Blank),
    /// A page opened: it asks where the talk is.
    Hello,
    /// The speaker's notes are open on another page.
    Presenter,
}

static HEARD: std::sync::Mutex<Vec<Heard>> = std::sync::Mutex::new(Vec::new());

thread_local! {
    /// The channel the pages of this talk share, and whether this page is the speaker's notes.
    static TALK: std::cell::RefCell<Option<(web_sys::BroadcastChannel, bool)>> =
        const { std::cell::RefCell::new(None) };
}

/// Tells the other pages of the talk `fields`, as `{kafkascope: {...}}`; the notes page says it
/// is one.
fn tell_others(fields: &[(&str, JsValue)]) {
    TALK.with(|talk| {
        let Some((channel, presenter)) = &*talk.borrow() else {
            return;
        };
        let inner = js_sys::Object::new();
        for (key, value) in fields {
            let _ = js_sys::Reflect::set(&inner, &(*key).into(), value);
        }
        if *presenter {
            let _ = js_sys::Reflect::set(&inner, &"presenter".into(), &JsValue::TRUE);
        }
        let outer = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&outer, &"kafkascope".into(), &inner);
        let _ = channel.post_message(&outer);
    });
}

/// Joins the talk's channel (a tour's pages only) and asks the others where the talk is.
fn join_talk(options: Res<super::Options>) {
    let Some(open) = &options.tour else { return };
    let Ok(channel) = web_sys::BroadcastChannel::new(&format!("kafkascope-{}", open.tour.name))
    else {
        return;
    };
    let on_message = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
        |event: web_sys::MessageEvent| {
            let Ok(k) = js_sys::Reflect::get(&event.data(), &JsValue::from_str("kafkascope"))
            else {
                return;
            };
            let get = |key: &str| js_sys::Reflect::get(&k, &JsValue::from_str(key)).ok();
            let mut heard = Vec::new();
            if let Some(name) = get("step").and_then(|s| s.as_string()) {
                let beat = get("beat").and_then(|b| b.as_f64());
                heard.extend(super::link::message_step(&name, beat).map(Heard::Step));
            }
            if let Some(name) = get("blank").and_then(|s| s.as_string()) {
                heard.extend(super::link::message_blank(&name).map(Heard::Blank));
            }
            if get("hello").is_some_and(|h| h.is_truthy()) {
                heard.push(Heard::Hello);
            }
            if get("presenter").is_some_and(|p| p.is_truthy()) {
                heard.push(Heard::Presenter);
            }
            if let Ok(mut all) = HEARD.lock() {
                all.extend(heard);
            }
        },
    );
    channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    TALK.with(|talk| *talk.borrow_mut() = Some((channel, options.presenter)));
    tell_others(&[("hello", JsValue::TRUE)]);
}

/// Takes what the other pages said: their steps, their blanking, and where the talk is for a
/// page that just opened.
fn hear_talk(
    tour: Option<Res<TourPlay>>,
    mut steps: MessageWriter<super::tour::TourControl>,
    mut clicker: ResMut<super::clicker::Clicker>,
    mut told_blank: Local<crate::view::tour::Blank>,
    mut elsewhere: ResMut<super::presenter::PresenterElsewhere>,
) {
    let heard = HEARD
        .lock()
        .map(|mut all| std::mem::take(&mut *all))
        .unwrap_or_default();
    for h in heard {
        match h {
            Heard::Step(step) => {
                steps.write(super::tour::TourControl::Mirror(step));
            }
            Heard::Blank(blank) => {
                clicker.blank = blank;
                // Taken, not to be told back.
                *told_blank = blank;
            }
            Heard::Hello => {
                // A page waiting at a beat's start has nothing to tell: going there would play it.
                if let Some(t) = tour
                    .as_ref()
                    .filter(|t| t.place.stage != crate::view::tour::Stage::Ready)
                {
                    let (name, beat) =
                        super::link::step_message(crate::view::tour::Step::Go(t.place.beat));
                    tell_others(&[
                        ("step", name.into()),
                        ("beat", JsValue::from_f64(beat.unwrap_or(1) as f64)),
                    ]);
                }
                let blank = super::link::blank_message(clicker.blank);
                tell_others(&[("blank", blank.into())]);
            }
            Heard::Presenter => elsewhere.0 = true,
        }
    }
    // The stage's blanking changed here (B or W): the others take it.
    if clicker.blank != *told_blank {
        *told_blank = clicker.blank;
        tell_others(&[("blank", super::link::blank_message(clicker.blank).into())]);
    }
}

/// Tells the other pages the steps taken here (keys, buttons, a deck), not those taken from
/// them.
fn tell_talk(mut requests: MessageReader<super::tour::TourControl>) {
    for request in requests.read() {
        if let super::tour::TourControl::Step(step) = request {
            let (name, beat) = super::link::step_message(*step);
            let mut fields = vec![("step", JsValue::from(name))];
            if let Some(beat) = beat {
                fields.push(("beat", JsValue::from_f64(beat as f64)));
            }
            tell_others(&fields);
        }
    }
}

/// The beat (from 1) a slide deck asked for last, by message or fragment, not yet gone to.
static DECK_ASKED: std::sync::Mutex<Option<usize>> = std::sync::Mutex::new(None);

fn deck_asked(beat: Option<usize>) {
    if let (Some(beat), Ok(mut slot)) = (beat, DECK_ASKED.lock()) {
        *slot = Some(beat);
    }
}

/// A deck that embeds the page moves it: `{kafkascope: {beat: N}}` posted to the page, or
/// `#beat=N` as its fragment (the one it opens with too).
fn listen_to_deck() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let on_message = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
        |event: web_sys::MessageEvent| {
            let beat = js_sys::Reflect::get(&event.data(), &JsValue::from_str("kafkascope"))
                .and_then(|k| js_sys::Reflect::get(&k, &JsValue::from_str("beat")))
                .ok()
                .and_then(|b| b.as_f64())
                .and_then(super::link::message_beat);
            deck_asked(beat);
        },
    );
    let _ = window.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref());
    on_message.forget();
    let fragment = || {
        web_sys::window()
            .and_then(|w| w.location().hash().ok())
            .and_then(|h| super::link::fragment_beat(&h))
    };
    deck_asked(fragment());
    let on_hash = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::Event)>::new(
        move |_: web_sys::Event| deck_asked(fragment()),
    );
    let _ = window.add_event_listener_with_callback("hashchange", on_hash.as_ref().unchecked_ref());
    on_hash.forget();
}

/// Goes to the beat a deck asked for. The beat on screen is left as it is, so that a deck that
/// follows the page's own messages back does not start its beat again.
fn follow_deck(tour: Option<Res<TourPlay>>, mut steps: MessageWriter<super::tour::TourControl>) {
    let Some(asked) = DECK_ASKED.lock().ok().and_then(|mut slot| slot.take()) else {
        return;
    };
    let Some(tour) = tour else { return };
    let beat = asked.min(tour.tour.beats.len()) - 1;
    if beat != tour.place.beat {
        steps.write(super::tour::TourControl::Step(crate::view::tour::Step::Go(
            beat,
        )));
    }
}

/// Tells the page's parent (a deck, when the page is embedded) the beat now on screen, from 1.
fn post_beat_to_parent(window: &web_sys::Window, beat: usize) {
    let Ok(Some(parent)) = window.parent() else {
        return;
    };
    if parent == *window {
        return;
    }
    let inner = js_sys::Object::new();
    let outer = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&inner, &"beat".into(), &JsValue::from_f64(beat as f64));
    let _ = js_sys::Reflect::set(&outer, &"kafkascope".into(), &inner);
    let _ = parent.post_message(&outer, "*");
}

/// The id of the page's hidden file input: Open clicks it, and the page's tests give it a file.
const PICKER: &str = "kafkascope-open";

/// A scenario file the reader picked, read and waiting for the app: (file name, its text or why
/// the browser could not read it). The browser reads it between frames.
type Picked = (String, Result<String, String>);
static PICKED: std::sync::Mutex<Option<Picked>> = std::sync::Mutex::new(None);

fn picked(file: Picked) {
    if let Ok(mut slot) = PICKED.lock() {
        *slot = Some(file);
    }
}

/// Puts a hidden file input on the page; a file picked in it is read into [`PICKED`].
fn add_file_picker() {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Some(input) = document
        .create_element("input")
        .ok()
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
    else {
        return;
    };
    input.set_type("file");
    input.set_accept(".ron,text/plain");
    input.set_id(PICKER);
    input.set_hidden(true);
    let on_change = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::Event)>::new(
        |event: web_sys::Event| {
            let Some(input) = event
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            else {
                return;
            };
            let Some(file) = input.files().and_then(|files| files.get(0)) else {
                return;
            };
            let name = file.name();
            // Picking the same file again is a change too.
            input.set_value("");
            let (ok_name, failed_name) = (name.clone(), name);
            let read = wasm_bindgen::closure::Closure::once(move |text: JsValue| {
                let text = text.as_string().ok_or("the file is not text".to_string());
                picked((ok_name, text));
            });
            let failed = wasm_bindgen::closure::Closure::once(move |why: JsValue| {
                let why = why
                    .as_string()
                    .unwrap_or_else(|| "the browser could not read it".into());
                picked((failed_name, Err(why)));
            });
            let _ = file.text().then2(&read, &failed);
            read.forget();
            failed.forget();
        },
    );
    input.set_onchange(Some(on_change.as_ref().unchecked_ref()));
    // The input lives as long as the page.
    on_change.forget();
    if let Some(body) = document.body() {
        let _ = body.append_child(&input);
    }
}

/// Opens the browser's file picker (Open, on the web).
pub(super) fn pick_file() {
    let input = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(PICKER))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
    if let Some(input) = input {
        input.click();
    }
}

/// The file picked since the last call, as (name, text or why it could not be read).
pub(super) fn take_picked() -> Option<Picked> {
    PICKED.lock().ok()?.take()
}

#[derive(Resource, Default)]
struct Page {
    /// Frames drawn so far.
    frames: u64,
    /// The built-in scenario shown and its own seed, read when the scenario changes.
    built_in: Option<(&'static str, u64)>,
    /// The query last put in the address bar.
    query: String,
    /// The tour's beat last told to the page's parent (an index).
    posted_beat: Option<usize>,
}

fn tell_page(
    model: Option<Res<Model>>,
    shown: Option<Res<Shown>>,
    playback: Option<Res<Playback>>,
    tour: Option<Res<TourPlay>>,
    mut page: ResMut<Page>,
    (clicker, presenter): (
        Res<super::clicker::Clicker>,
        Option<Res<super::presenter::Presenter>>,
    ),
) {
    let (Some(model), Some(shown), Some(playback)) = (model, shown, playback) else {
        return;
    };
    let Some(window) = web_sys::window() else {
        return;
    };
    let Some(document) = window.document() else {
        return;
    };
    page.frames += 1;
    let scenario = &model.scenario;
    let key = BuiltIn::named(&scenario.name).map(|b| b.name);
    if page.built_in.map(|(k, _)| k) != key {
        page.built_in = key.and_then(|k| Some((k, Scenario::built_in(k).ok()?.seed)));
    }
    let built_in = page.built_in;

    let title = format!("Kafkascope: {}", scenario.name);
    if document.title() != title {
        document.set_title(&title);
    }
    if let Some(canvas) = document.get_element_by_id("kafkascope") {
        let key = built_in.map_or(scenario.name.as_str(), |(key, _)| key);
        let _ = canvas.set_attribute("data-scenario", key);
        let _ = canvas.set_attribute("data-sim-ms", &(shown.display_ms as u64).to_string());
        let _ = canvas.set_attribute("data-frames", &page.frames.to_string());
        // A tour's place: its name, the beat on screen (from 1) and where the reader is in it.
        let (name, beat, stage) = match &tour {
            Some(t) => (
                t.tour.name.as_str(),
                (t.place.beat + 1).to_string(),
                format!("{:?}", t.place.stage).to_lowercase(),
            ),
            None => ("", String::new(), String::new()),
        };
        let _ = canvas.set_attribute("data-tour", name);
        let _ = canvas.set_attribute("data-beat", &beat);
        let _ = canvas.set_attribute("data-stage", &stage);
        // The speaker's notes in the page's place, and the stage's blanking.
        let notes = presenter.as_ref().is_some_and(|p| p.in_page());
        let _ = canvas.set_attribute("data-presenter", if notes { "1" } else { "" });
        let _ = canvas.set_attribute("data-blank", super::link::blank_message(clicker.blank));
    }
    let beat = tour.as_ref().map(|t| t.place.beat);
    if beat != page.posted_beat {
        page.posted_beat = beat;
        if let Some(beat) = beat {
            post_beat_to_parent(&window, beat + 1);
        }
    }

    // Only a built-in scenario has a name an address can give.
    let Some((key, own_seed)) = built_in else {
        return;
    };
    let link = Link {
        tour: tour
            .as_ref()
            .filter(|t| BUILT_IN_TOURS.iter().any(|b| b.name == t.tour.name))
            .map(|t| (t.tour.name.clone(), t.place.beat)),
        scenario: key.to_string(),
        seed: (scenario.seed != own_seed).then_some(scenario.seed),
        // The instant a reopened link draws is the one drawn now (a view at T draws T - 1).
        at_ms: playback
            .paused
            .then(|| (shown.display_ms as u64 + 1).min(scenario.duration_ms)),
        // The talk preset's light theme is the preset's: the link keeps the reader's own.
        theme: shown.own_theme(),
        speed: playback.speed,
        paused: playback.paused,
        text_scale: shown.text_scale,
        talk: shown.talk,
        presenter: presenter.as_ref().is_some_and(|p| p.in_page()),
    };
    let query = link.query();
    if query != page.query {
        replace_address(&window, &format!("?{query}"));
        page.query = query;
    }
}

/// `history.replaceState(null, "", url)`: the address bar changes, the history does not grow.
fn replace_address(window: &web_sys::Window, url: &str) {
    let Ok(history) = js_sys::Reflect::get(window, &JsValue::from_str("history")) else {
        return;
    };
    let Ok(replace) = js_sys::Reflect::get(&history, &JsValue::from_str("replaceState")) else {
        return;
    };
    if let Ok(replace) = replace.dyn_into::<js_sys::Function>() {
        let _ = replace.call3(
            &history,
            &JsValue::NULL,
            &JsValue::from_str(""),
            &JsValue::from_str(url),
        );
    }
}

/// Offers `text` to the reader as a file named `name` (the web build's Save: a page has no
/// files of its own to write).
pub(super) fn download(name: &str, text: &str) -> Result<(), String> {
    use wasm_bindgen::JsCast;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("the page has no document")?;
    let link = document
        .create_element("a")
        .map_err(|_| "the page cannot make a link")?;
    let href = format!(
        "data:text/plain;charset=utf-8,{}",
        String::from(js_sys::encode_uri_component(text))
    );
    link.set_attribute("href", &href)
        .and_then(|()| link.set_attribute("download", name))
        .map_err(|_| "the page refused the link")?;
    link.dyn_into::<web_sys::HtmlElement>()
        .map_err(|_| "the page's link is not clickable")?
        .click();
    Ok(())
}
