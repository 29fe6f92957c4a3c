//! What the speaker's presenter view says, computed headless: where the talk is, the beat's
//! notes, what comes next, and the time spent and left. The window (and the web page's notes
//! view) only paints it.

use super::tour::{Place, Stage};
use crate::tour::Tour;

/// The presenter view's text at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Sheet {
    /// "Beat 3 of 8".
    pub position: String,
    /// The beat's title.
    pub title: String,
    /// Where the beat is: ready, playing, held (and why), ended.
    pub stage: String,
    /// The beat's notes, or a line saying it has none.
    pub notes: String,
    /// The beat after this one, "Next beat: 4, The ISR", or the tour's end.
    pub next: String,
    /// Time since the talk began, "12:05".
    pub elapsed: String,
    /// The countdown the speaker set: "17:55 left", or "2:10 over" past it.
    pub countdown: Option<String>,
    /// The countdown has run out.
    pub over: bool,
}

impl Sheet {
    /// The sheet for `place` in `tour`, `elapsed_s` into the talk, with `minutes` for it if the
    /// speaker gave them.
    pub fn of(tour: &Tour, place: Place, elapsed_s: u64, minutes: Option<u32>) -> Sheet {
        let beats = tour.beats.len();
        let beat = &tour.beats[place.beat];
        let stage = match place.stage {
            Stage::Ready => "Ready: Next starts it".to_string(),
            Stage::Playing => "Playing".to_string(),
            Stage::Held(_) => match place.hold(tour) {
                Some(hold) => format!("Held: {}. Next goes on", hold.why),
                None => "Held: Next goes on".to_string(),
            },
            Stage::Ended => "Ended".to_string(),
            Stage::Finished => "The tour's end".to_string(),
        };
        let notes = if beat.notes.trim().is_empty() {
            "No notes for this beat.".to_string()
        } else {
            beat.notes.clone()
        };
        let next = match Sheet::preview_beat(tour, place) {
            Some(n) => format!("Next beat: {}, {}", n + 1, tour.beats[n].title),
            None if tour.lab.is_some() => {
                "After this: the lab's table and the ways out".to_string()
            }
            None => "After this: the ways out".to_string(),
        };
        let clock = |s: u64| format!("{}:{:02}", s / 60, s % 60);
        let (countdown, over) = match minutes {
            None => (None, false),
            Some(m) => {
                let total = u64::from(m) * 60;
                if elapsed_s <= total {
                    (Some(format!("{} left", clock(total - elapsed_s))), false)
                } else {
                    (Some(format!("{} over", clock(elapsed_s - total))), true)
                }
            }
        };
        Sheet {
            position: format!("Beat {} of {beats}", place.beat + 1),
            title: beat.title.clone(),
            stage,
            notes,
            next,
            elapsed: clock(elapsed_s),
            countdown,
            over,
        }
    }

    /// The beat after this one (an index), whose first frame the thumbnail shows.
    pub fn preview_beat(tour: &Tour, place: Place) -> Option<usize> {
        let n = place.beat + 1;
        (place.stage != Stage::Finished && n < tour.beats.len()).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walkthrough() -> Tour {
        Tour::built_in("walkthrough")
            .expect("built in")
            .0
            .with_holds()
            .expect("its holds")
    }

    #[test]
    fn the_sheet_says_the_beat_its_notes_and_what_next_does() {
        let tour = walkthrough();
        let place = Place::open(2, false);
        let s = Sheet::of(&tour, place, 65, Some(30));
        assert_eq!(s.position, "Beat 3 of 8");
        assert_eq!(s.title, tour.beats[2].title);
        assert_eq!(s.notes, tour.beats[2].notes);
        assert!(!s.notes.is_empty());
        assert_eq!(s.stage, "Ready: Next starts it");
        assert_eq!(s.next, format!("Next beat: 4, {}", tour.beats[3].title));
        assert_eq!(s.elapsed, "1:05");
        assert_eq!(s.countdown.as_deref(), Some("28:55 left"));
        assert!(!s.over);
        // Ended: the next beat is still 4, whose first frame the thumbnail shows.
        let ended = Place {
            stage: Stage::Ended,
            ..place
        };
        let s = Sheet::of(&tour, ended, 30 * 60 + 7, Some(30));
        assert_eq!(s.stage, "Ended");
        assert_eq!(s.countdown.as_deref(), Some("0:07 over"));
        assert!(s.over);
        assert_eq!(Sheet::preview_beat(&tour, ended), Some(3));
    }

    #[test]
    fn a_hold_says_why_and_the_last_beat_leads_out() {
        let tour = walkthrough();
        let held = Place {
            beat: 4,
            stage: Stage::Held(0),
            holds_passed: 0,
        };
        let s = Sheet::of(&tour, held, 0, None);
        assert!(
            s.stage.starts_with("Held: controller fenced broker 3"),
            "{}",
            s.stage
        );
        assert_eq!(s.countdown, None);
        let last = Place {
            beat: 7,
            stage: Stage::Ended,
            holds_passed: 0,
        };
        let s = Sheet::of(&tour, last, 0, None);
        assert_eq!(s.next, "After this: the ways out");
        assert_eq!(Sheet::preview_beat(&tour, last), None);
    }
}
