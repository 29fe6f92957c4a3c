//! A talk authored by playing: in the sandbox a speaker plays to a moment, frames what matters
//! and marks a beat; the beats become a tour, saved with the run's scenario beside it (its
//! set-up and every action taken live), which `kafkascope tour FILE.ron` opens.

#[cfg(not(target_arch = "wasm32"))]
use std::path::{Path, PathBuf};

use crate::scenario::Scenario;
use crate::sim::{Event, EventKind};
use crate::tour::{Beat, Component, Exit, Focus, RecordRef, Tour};
use crate::view::event_text::{Severity, clock, describe};

/// The beats marked so far.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub beats: Vec<Beat>,
    /// The record followed when the first beat that followed one was marked: the tour's.
    pub follow: Option<RecordRef>,
    /// Where the first beat starts (the playhead when marking began).
    pub start_ms: u64,
}

/// What the speaker has on screen when they mark a beat.
#[derive(Debug, Clone, Default)]
pub struct Moment {
    /// The playhead.
    pub now_ms: u64,
    /// The speed playing.
    pub speed: f64,
    /// What is selected (a broker whose menu is open): the beat frames it.
    pub frame: Vec<Focus>,
    /// The record being followed, if any.
    pub follow: Option<RecordRef>,
    /// The beat's title; "Beat N" when empty.
    pub title: String,
    /// The speaker's line: the beat's narration. When empty, what happened in the span.
    pub line: String,
}

impl Draft {
    /// A talk whose first beat starts at `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Draft {
            start_ms,
            ..Draft::default()
        }
    }

    /// Where the next beat starts: the last one's end.
    pub fn next_from(&self) -> u64 {
        self.beats.last().map_or(self.start_ms, |b| b.to_ms)
    }

    /// Marks a beat from the last mark to the playhead; `events` is the run's event log, for the
    /// narration of a beat marked without a line.
    pub fn mark(&mut self, at: Moment, events: &[Event]) -> Result<&Beat, String> {
        let from_ms = self.next_from();
        if at.now_ms <= from_ms {
            return Err(format!(
                "play on past {} first: a beat runs from the last mark to the playhead",
                clock(from_ms)
            ));
        }
        if self.follow.is_none() {
            self.follow = at.follow.clone();
        }
        // What is selected is lit as well as framed; the tour follows one record, lit while it
        // is the one followed.
        let mut highlight = at.frame.clone();
        if at.follow.is_some() && at.follow == self.follow {
            highlight.push(Focus::Record);
        }
        let n = self.beats.len() + 1;
        let narration = if at.line.trim().is_empty() {
            what_happened(events, from_ms, at.now_ms)
        } else {
            at.line.trim().to_string()
        };
        self.beats.push(Beat {
            title: match at.title.trim() {
                "" => format!("Beat {n}"),
                t => t.to_string(),
            },
            component: component_of(&at.frame, &highlight),
            narration,
            line: None,
            notes: String::new(),
            watch_for: Vec::new(),
            from_ms,
            to_ms: at.now_ms,
            speed: at
                .speed
                .clamp(crate::tour::MIN_SPEED, crate::tour::MAX_SPEED),
            frame: at.frame,
            highlight,
            annotations: Vec::new(),
            shows: Vec::new(),
            not_yet: Vec::new(),
            hold_at: Vec::new(),
        });
        Ok(self.beats.last().expect("pushed"))
    }

    /// Takes the last beat back.
    pub fn unmark(&mut self) {
        self.beats.pop();
        if !self
            .beats
            .iter()
            .any(|b| b.highlight.contains(&Focus::Record))
        {
            self.follow = None;
        }
    }

    /// The tour, named `name`, playing `scenario` (a file beside it, or a built-in's name).
    pub fn tour(&self, name: &str, scenario: &str) -> Tour {
        Tour {
            name: name.to_string(),
            title: name.to_string(),
            scenario: scenario.to_string(),
            follow: self.follow.clone(),
            beats: self.beats.clone(),
            after: vec![Exit {
                label: "Open the sandbox".to_string(),
                about: "The cluster under steady load, to try things live".to_string(),
                scenario: Some("quickstart".to_string()),
                tour: None,
            }],
            lab: None,
            why_notes: false,
            holds: Vec::new(),
        }
    }

    /// The run a saved talk plays: the run's scenario with every action taken, lasting at least
    /// to the last mark.
    pub fn scenario(&self, run: &Scenario) -> Scenario {
        let mut scenario = run.clone();
        scenario.duration_ms = scenario.duration_ms.max(self.next_from());
        scenario
    }

    /// The tour file's text, named `name`, playing the scenario file `scenario`.
    pub fn tour_text(&self, name: &str, scenario: &str) -> Result<String, String> {
        if self.beats.is_empty() {
            return Err("mark a beat first".to_string());
        }
        ron::ser::to_string_pretty(
            &self.tour(name, scenario),
            ron::ser::PrettyConfig::default(),
        )
        .map_err(|e| format!("the tour cannot be written: {e}"))
    }

    /// Saves the talk as `tour` (a `.ron` path) and the run it plays beside it
    /// (`NAME-scenario.ron`). Neither overwrites a file: a taken name gets a number. Returns
    /// the paths written, tour then scenario.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn save(&self, tour: &Path, run: &Scenario) -> Result<(PathBuf, PathBuf), String> {
        use crate::save::save_new;
        let stem = tour
            .file_stem()
            .map_or("talk".into(), |s| s.to_string_lossy().to_string());
        // Checked before anything is written.
        self.tour_text(&stem, "")?;
        let failed = |path: &Path, e: std::io::Error| format!("{}: not saved: {e}", path.display());
        let wanted = tour.with_file_name(format!("{stem}-scenario.ron"));
        let scenario_path =
            save_new(&wanted, &self.scenario(run).to_ron()).map_err(|e| failed(&wanted, e))?;
        let beside = scenario_path
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        let tour_path =
            save_new(tour, &self.tour_text(&stem, &beside)?).map_err(|e| failed(tour, e))?;
        Ok((tour_path, scenario_path))
    }
}

/// The component a beat is about, from what it frames (and lights).
fn component_of(frame: &[Focus], highlight: &[Focus]) -> Component {
    let of = |f: &Focus| match f {
        Focus::Producer(_) | Focus::Record => Component::Producer,
        Focus::Controller => Component::Controller,
        Focus::Broker(_) | Focus::Partition(..) | Focus::Leader(..) => Component::Leader,
        Focus::Followers(..) => Component::Followers,
        Focus::Group(_) => Component::ConsumerGroup,
        Focus::OffsetsPartition(_) => Component::OffsetStore,
        Focus::LagMonitor => Component::LagMonitor,
        Focus::Route(a, _) => match **a {
            Focus::Producer(_) => Component::Producer,
            _ => Component::Leader,
        },
    };
    frame
        .iter()
        .chain(highlight)
        .next()
        .map_or(Component::Leader, of)
}

/// A narration for a beat marked without a line: the span and the events in it that matter, in
/// Kafka's words.
pub fn what_happened(events: &[Event], from_ms: u64, to_ms: u64) -> String {
    const LISTED: usize = 3;
    let said: Vec<String> = events
        .iter()
        .filter(|e| (from_ms..to_ms).contains(&e.at_ms))
        .filter(|e| !matches!(e.kind, EventKind::ActionRefused { .. }))
        .map(|e| describe(&e.kind))
        .filter(|(severity, _)| *severity != Severity::Info)
        .map(|(_, text)| text)
        .take(LISTED)
        .collect();
    let span = format!("From {} to {}", clock(from_ms), clock(to_ms));
    if said.is_empty() {
        format!("{span}: the cluster at work.")
    } else {
        format!("{span}: {}.", said.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(now_ms: u64) -> Moment {
        Moment {
            now_ms,
            speed: 1.0,
            ..Moment::default()
        }
    }

    #[test]
    fn a_beat_runs_from_the_last_mark_and_names_what_it_frames() {
        let mut draft = Draft::new(1_000);
        assert!(draft.mark(at(1_000), &[]).is_err(), "an empty beat");
        let beat = draft
            .mark(
                Moment {
                    frame: vec![Focus::Group("fulfilment".into())],
                    ..at(4_000)
                },
                &[],
            )
            .unwrap();
        assert_eq!((beat.from_ms, beat.to_ms), (1_000, 4_000));
        assert_eq!(beat.component, Component::ConsumerGroup);
        assert_eq!(beat.title, "Beat 1");
        assert_eq!(
            beat.narration,
            "From 1.000 s to 4.000 s: the cluster at work."
        );
        // A record followed becomes the tour's; taking its beat back forgets it.
        let record = RecordRef::Offset("orders".into(), 0, 3);
        let beat = draft
            .mark(
                Moment {
                    follow: Some(record.clone()),
                    speed: 500.0,
                    ..at(9_000)
                },
                &[],
            )
            .unwrap();
        assert_eq!(beat.highlight, vec![Focus::Record]);
        assert_eq!(beat.speed, crate::tour::MAX_SPEED, "kept in range");
        assert_eq!(draft.follow, Some(record));
        draft.unmark();
        assert_eq!(draft.follow, None);
        assert_eq!(draft.next_from(), 4_000);
    }

    #[test]
    fn a_beat_without_a_line_says_what_broke_or_healed_in_its_span() {
        let events = [
            Event {
                at_ms: 500,
                kind: EventKind::BrokerCrashed { broker: 1 },
            },
            Event {
                at_ms: 2_000,
                kind: EventKind::BrokerCrashed { broker: 2 },
            },
            Event {
                at_ms: 5_000,
                kind: EventKind::BrokerCrashed { broker: 3 },
            },
        ];
        let said = what_happened(&events, 1_000, 5_000);
        assert!(said.starts_with("From 1.000 s to 5.000 s: "), "{said}");
        assert_eq!(said, "From 1.000 s to 5.000 s: broker 2 crashed.");
    }
}
