//! What the page's address and messages say, as the app writes and reads them: the link the
//! address bar keeps to what is on screen, the beat a slide deck asks for, and the steps and
//! blanking the pages of one talk tell each other. Plain Rust, tested natively; the page's side
//! (`crate::web`) reads the address into the app's options.

/// The beat (from 1) a slide deck asks for by the page's fragment, `#beat=N`.
pub fn fragment_beat(fragment: &str) -> Option<usize> {
    let n = fragment
        .strip_prefix('#')
        .unwrap_or(fragment)
        .strip_prefix("beat=")?;
    n.parse::<usize>().ok().filter(|n| *n >= 1)
}

/// The beat (from 1) a slide deck asks for in a message, `{kafkascope: {beat: N}}`: `N` as the
/// message carries it, a JavaScript number. Anything but a whole number from 1 is no beat.
pub fn message_beat(n: f64) -> Option<usize> {
    (n.fract() == 0.0 && (1.0..=1e6).contains(&n)).then_some(n as usize)
}

/// What the window shows now, as the page's address can say it: the address bar follows the app,
/// so copying it links to the same scenario, instant and look.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// A built-in tour's name and the beat on screen (an index): the link opens the tour there,
    /// and the scenario's fields below are its own, left out.
    pub tour: Option<(String, usize)>,
    /// The built-in scenario's name (its file name).
    pub scenario: String,
    /// The seed, when it is not the scenario's own.
    pub seed: Option<u64>,
    /// The instant, when paused (a playing link starts from the beginning).
    pub at_ms: Option<u64>,
    pub theme: crate::view::palette::Theme,
    pub speed: f64,
    pub paused: bool,
    pub text_scale: f32,
    pub talk: bool,
    /// The speaker's notes view (a tour's).
    pub presenter: bool,
}

impl Link {
    /// The query (without `?`) that opens this; settings at their defaults are left out.
    pub fn query(&self) -> String {
        let mut q = match &self.tour {
            Some((tour, beat)) => format!("tour={}&beat={}", encode(tour), beat + 1),
            None => {
                let mut q = format!("scenario={}", encode(&self.scenario));
                if let Some(seed) = self.seed {
                    q += &format!("&seed={seed}");
                }
                if let Some(at) = self.at_ms.filter(|at| *at > 0) {
                    q += &format!("&at_ms={at}");
                }
                q
            }
        };
        if self.theme == crate::view::palette::Theme::Light {
            q += "&theme=light";
        }
        if self.tour.is_none() {
            if self.speed != crate::app::Options::DEFAULT_SPEED {
                q += &format!("&speed={}", self.speed);
            }
            if self.paused {
                q += "&paused=1";
            }
        }
        if self.text_scale != 1.0 {
            q += &format!("&text_scale={}", self.text_scale);
        }
        if self.talk {
            q += "&talk=1";
        }
        if self.presenter && self.tour.is_some() {
            q += "&presenter=1";
        }
        q
    }
}

/// A step taken on a page as the other pages of the talk are told it: its name, and the beat
/// (from 1) for a jump.
pub fn step_message(step: crate::view::tour::Step) -> (&'static str, Option<usize>) {
    use crate::view::tour::Step;
    match step {
        Step::Next => ("next", None),
        Step::Previous => ("previous", None),
        Step::First => ("first", None),
        Step::Last => ("last", None),
        Step::Replay => ("replay", None),
        Step::Go(n) => ("go", Some(n + 1)),
    }
}

/// The step another page of the talk took, from its message; anything else is no step.
pub fn message_step(name: &str, beat: Option<f64>) -> Option<crate::view::tour::Step> {
    use crate::view::tour::Step;
    Some(match name {
        "next" => Step::Next,
        "previous" => Step::Previous,
        "first" => Step::First,
        "last" => Step::Last,
        "replay" => Step::Replay,
        "go" => Step::Go(beat.and_then(message_beat)? - 1),
        _ => return None,
    })
}

/// The stage's blanking as the pages of a talk tell it each other.
pub fn blank_message(blank: crate::view::tour::Blank) -> &'static str {
    use crate::view::tour::Blank;
    match blank {
        Blank::Shown => "shown",
        Blank::Black => "black",
        Blank::White => "white",
    }
}

pub fn message_blank(name: &str) -> Option<crate::view::tour::Blank> {
    use crate::view::tour::Blank;
    match name {
        "shown" => Some(Blank::Shown),
        "black" => Some(Blank::Black),
        "white" => Some(Blank::White),
        _ => None,
    }
}

/// Form-encodes a value: letters, digits and `-._~` stay, every other byte is `%XX`.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}
