//! How the app opens, and the checks of each setting: shared by the command line's flags and the
//! web page's address, which are only front doors to it.

use bevy::prelude::*;

use crate::scenario::Scenario;
use crate::tour::Tour;
use crate::view::palette::Theme;

/// How the app starts.
#[derive(Resource, Debug, Clone)]
pub struct Options {
    pub scenario: Scenario,
    /// Where in sim time to open.
    pub at_ms: u64,
    pub theme: Theme,
    /// The window's size in logical pixels.
    pub size: (u32, u32),
    /// Take a screenshot of the first settled frame into this file, then exit.
    pub shot: Option<std::path::PathBuf>,
    /// With a shot: where the scene drew what, in the picture's pixels, into this JSON file.
    pub places: Option<std::path::PathBuf>,
    /// Sim time per wall time.
    pub speed: f64,
    pub paused: bool,
    /// Multiplies every text size, for projectors.
    pub text_scale: f32,
    /// The tour to tell, and where in it to open.
    pub tour: Option<TourOpen>,
    /// The talk preset: the light theme, text 1.5 times larger, and no panels but the
    /// narration and the lag monitor.
    pub talk: bool,
    /// With a shot: a click at this point (logical pixels) before the picture.
    pub click: Option<(f32, f32)>,
    /// With a shot: the Terminal panel open on this command line.
    pub terminal: Option<String>,
    /// With a shot: keys pressed one after another, each once the playback has come to rest
    /// (a beat ended or held), as a speaker's clicker does; the shot is of where they lead.
    pub keys: Vec<KeyCode>,
    /// A tour opens with the presenter view beside the stage.
    pub presenter: bool,
    /// The talk's length, for the presenter view's countdown.
    pub minutes: Option<u32>,
}

/// A tour and where it opens.
#[derive(Debug, Clone)]
pub struct TourOpen {
    pub tour: Tour,
    /// The beat it opens at (an index into `tour.beats`).
    pub beat: usize,
    /// At the beat's end, as a shot of the beat shows it, instead of paused at its start.
    pub at_end: bool,
    /// Past the last beat: a lab's table and the ways out.
    pub finished: bool,
}

impl Options {
    /// Real time: Kafka's timeouts (a session, `replica.lag.time.max.ms`) pass as they would;
    /// the presets slow it to follow a request by eye.
    pub const DEFAULT_SPEED: f64 = 1.0;

    pub fn new(scenario: Scenario) -> Self {
        Options {
            scenario,
            at_ms: 0,
            theme: Theme::Dark,
            size: (1600, 900),
            shot: None,
            places: None,
            speed: Self::DEFAULT_SPEED,
            paused: false,
            text_scale: 1.0,
            tour: None,
            talk: false,
            click: None,
            terminal: None,
            keys: Vec::new(),
            presenter: false,
            minutes: None,
        }
    }

    /// Opens a tour on its scenario at beat `beat` (an index), paused at its start, or at its
    /// end when `at_end`.
    pub fn tour(tour: Tour, scenario: Scenario, beat: usize, at_end: bool) -> Self {
        let b = &tour.beats[beat];
        let mut options = Options::new(scenario);
        options.at_ms = if at_end { b.to_ms } else { b.from_ms };
        options.speed = b.speed;
        options.paused = true;
        options.tour = Some(TourOpen {
            tour,
            beat,
            at_end,
            finished: false,
        });
        options
    }

    /// The front door: the walkthrough at beat 1, paused on its Start button.
    pub fn front_door() -> Result<Self, String> {
        let (tour, scenario) = Tour::built_in("walkthrough").map_err(|e| e.to_string())?;
        Ok(Options::tour(tour, scenario, 0, false))
    }

    /// Opens `scenario` at `at_ms`, which must not be past its end.
    pub fn at(scenario: Scenario, at_ms: u64) -> Result<Self, String> {
        check_at_ms(&scenario, at_ms)?;
        let mut options = Options::new(scenario);
        options.at_ms = at_ms;
        Ok(options)
    }
}

pub fn parse_theme(s: &str) -> Result<Theme, String> {
    match s {
        "dark" => Ok(Theme::Dark),
        "light" => Ok(Theme::Light),
        _ => Err("expected dark or light".to_string()),
    }
}

pub fn parse_text_scale(s: &str) -> Result<f32, String> {
    s.parse::<f32>()
        .ok()
        .filter(|v| (0.75..=2.0).contains(v))
        .ok_or_else(|| "expected a number from 0.75 to 2".to_string())
}

/// A tour's beat by its number from 1, as an index.
pub fn parse_beat(tour: &Tour, s: &str) -> Result<usize, String> {
    let n = s
        .parse::<usize>()
        .map_err(|_| format!("{s:?}: expected a beat number from 1"))?;
    tour.beat_index(n)
}

/// Keys by the names the clicker's are known by: `Right,Right,Left`, `3,Enter`, `B`.
pub fn parse_keys(s: &str) -> Result<Vec<KeyCode>, String> {
    s.split(',')
        .map(|name| {
            let name = name.trim();
            let key = match name {
                "Right" => KeyCode::ArrowRight,
                "Left" => KeyCode::ArrowLeft,
                "PageDown" => KeyCode::PageDown,
                "PageUp" => KeyCode::PageUp,
                "Space" => KeyCode::Space,
                "Enter" => KeyCode::Enter,
                "Home" => KeyCode::Home,
                "End" => KeyCode::End,
                "Escape" => KeyCode::Escape,
                "Backspace" => KeyCode::Backspace,
                "Period" => KeyCode::Period,
                _ => match name.as_bytes() {
                    [d @ b'0'..=b'9'] => DIGIT_KEYS[usize::from(d - b'0')],
                    [c @ b'A'..=b'Z'] => LETTER_KEYS[usize::from(c - b'A')],
                    _ => {
                        return Err(format!(
                            "{name:?}: expected Right, Left, PageDown, PageUp, Space, Enter, \
                             Home, End, Escape, Backspace, Period, a digit or a capital letter"
                        ));
                    }
                },
            };
            Ok(key)
        })
        .collect()
}

/// The digit row's keys, 0 to 9.
pub(super) const DIGIT_KEYS: [KeyCode; 10] = [
    KeyCode::Digit0,
    KeyCode::Digit1,
    KeyCode::Digit2,
    KeyCode::Digit3,
    KeyCode::Digit4,
    KeyCode::Digit5,
    KeyCode::Digit6,
    KeyCode::Digit7,
    KeyCode::Digit8,
    KeyCode::Digit9,
];

const LETTER_KEYS: [KeyCode; 26] = [
    KeyCode::KeyA,
    KeyCode::KeyB,
    KeyCode::KeyC,
    KeyCode::KeyD,
    KeyCode::KeyE,
    KeyCode::KeyF,
    KeyCode::KeyG,
    KeyCode::KeyH,
    KeyCode::KeyI,
    KeyCode::KeyJ,
    KeyCode::KeyK,
    KeyCode::KeyL,
    KeyCode::KeyM,
    KeyCode::KeyN,
    KeyCode::KeyO,
    KeyCode::KeyP,
    KeyCode::KeyQ,
    KeyCode::KeyR,
    KeyCode::KeyS,
    KeyCode::KeyT,
    KeyCode::KeyU,
    KeyCode::KeyV,
    KeyCode::KeyW,
    KeyCode::KeyX,
    KeyCode::KeyY,
    KeyCode::KeyZ,
];

/// The playback's speeds, which a tour's beats keep to too.
pub use crate::tour::{MAX_SPEED, MIN_SPEED};

pub fn parse_speed(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (MIN_SPEED..=MAX_SPEED).contains(v))
        .ok_or_else(|| format!("expected a number from {MIN_SPEED} to {MAX_SPEED}"))
}

/// Whether a window can open at `at_ms`: not past the scenario's end.
pub fn check_at_ms(scenario: &Scenario, at_ms: u64) -> Result<(), String> {
    if at_ms > scenario.duration_ms {
        return Err(format!(
            "{at_ms} is past the end of scenario {:?} ({} ms)",
            scenario.name, scenario.duration_ms
        ));
    }
    Ok(())
}
