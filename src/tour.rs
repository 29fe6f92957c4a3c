//! Tours: a scenario told in beats. A tour names its scenario and lists its beats; each beat
//! plays a span of sim time at its own speed, frames part of the scene, and says what to watch.
//! The walkthrough is one; talks and labs are others. Tours are RON files in
//! `scenarios/tours/`, compiled into the binary like the scenarios.

use serde::{Deserialize, Serialize};

use crate::scenario::{Scenario, ScenarioError, parse_ron, read_named_file};

/// A built-in tour: its name and the RON text compiled in.
pub struct BuiltInTour {
    pub name: &'static str,
    pub source: &'static str,
}

/// The tours in `scenarios/tours/`, embedded. The walkthrough comes first: it is the front door;
/// the labs follow, in the order the walkthrough's end offers them.
pub const BUILT_IN_TOURS: &[BuiltInTour] = &[
    BuiltInTour {
        name: "walkthrough",
        source: include_str!("../scenarios/tours/walkthrough.ron"),
    },
    BuiltInTour {
        name: "lab-acks-all",
        source: include_str!("../scenarios/tours/lab-acks-all.ron"),
    },
    BuiltInTour {
        name: "lab-leader-reads",
        source: include_str!("../scenarios/tours/lab-leader-reads.ron"),
    },
    BuiltInTour {
        name: "lab-unclean-election",
        source: include_str!("../scenarios/tours/lab-unclean-election.ron"),
    },
    BuiltInTour {
        name: "lab-rebalance-storm",
        source: include_str!("../scenarios/tours/lab-rebalance-storm.ron"),
    },
    BuiltInTour {
        name: "lab-add-partitions",
        source: include_str!("../scenarios/tours/lab-add-partitions.ron"),
    },
    BuiltInTour {
        name: "lab-rolling-restart",
        source: include_str!("../scenarios/tours/lab-rolling-restart.ron"),
    },
    BuiltInTour {
        name: "lab-retention",
        source: include_str!("../scenarios/tours/lab-retention.ron"),
    },
];

/// The slowest the playback goes: a millisecond's messages take a second to cross a link.
pub const MIN_SPEED: f64 = 0.001;
/// The fastest: a minute of a busy cluster in under a second.
pub const MAX_SPEED: f64 = 100.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tour {
    /// The name the command line and the page's address give (`walkthrough`).
    pub name: String,
    /// What the narration panel calls it.
    pub title: String,
    /// The scenario it plays: a built-in's name or a scenario file.
    pub scenario: String,
    /// The record the tour follows through the cluster.
    #[serde(default)]
    pub follow: Option<RecordRef>,
    pub beats: Vec<Beat>,
    /// Where the reader can go after the last beat.
    #[serde(default)]
    pub after: Vec<Exit>,
    /// A lab: the runs it compares and the table it ends with.
    #[serde(default)]
    pub lab: Option<Lab>,
    /// The scene's "why" notes show in this tour (the sandbox shows them; a tour's beats have
    /// their own callouts, so a tour asks).
    #[serde(default)]
    pub why_notes: bool,
    /// Where each beat's playback pauses ([`Beat::hold_at`], found in the run by
    /// [`Tour::with_holds`]).
    #[serde(skip)]
    pub holds: Vec<Vec<Hold>>,
}

/// A pause in a beat's playback, at the instant the scene first shows a moment that matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub at_ms: u64,
    /// What happened, as the event log says it.
    pub why: String,
}

/// What makes a tour a lab: the same scenario run as variants (the beats narrate the first; the
/// first two play side by side), a "was → now" table of Kafka's metrics at the decisive moment,
/// and the settings that prevent what it shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lab {
    pub runs: Vec<LabRun>,
    /// Just before the decisive moment, and after it.
    pub was_ms: u64,
    pub now_ms: u64,
    pub metrics: Vec<LabMetric>,
    /// How to prevent it in a real cluster, a setting a line.
    pub prevent: Vec<String>,
}

/// One variant of a lab's scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabRun {
    /// The column's heading (`min.insync.replicas=2`).
    pub label: String,
    /// The built-in scenario it plays, when not the tour's own.
    #[serde(default)]
    pub scenario: Option<String>,
    /// Changes to that scenario's set-up.
    #[serde(default)]
    pub edits: Vec<crate::scenario::Edit>,
}

/// A number a lab's table reads from the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LabMetric {
    UnderReplicatedPartitions,
    UnderMinIsrPartitionCount,
    OfflinePartitionsCount,
    /// Summed over partitions, the current stretch included.
    OfflineTime,
    DeadLeaderTime,
    AckedLost,
    AckedUnavailable,
    /// A producer's acknowledged records.
    Acked(String),
    /// A producer's records given up on.
    Failed(String),
    /// A producer's errors of one of Kafka's names.
    Errors(String, String),
    LeaderElections,
    UncleanLeaderElections,
    RecordsTruncated,
    ReadFromFollowers,
    Rebalances(String),
    PausedTime(String),
    Pauses(String),
    MaxLag(String),
    /// The group's committed lag now, summed over its partitions.
    Lag(String),
    /// Times the group's members were out of range and reset by `auto.offset.reset`.
    OffsetResets(String),
    /// The offsets those resets jumped over: records the group will never read.
    RecordsSkipped(String),
    /// Keys whose records are in more than one partition of a topic.
    KeysSplit(String),
}

impl LabRun {
    /// The scenario the run plays: its own or the lab's (`base`), with its edits in order.
    pub fn scenario(&self, base: &Scenario) -> Result<Scenario, String> {
        let start = match &self.scenario {
            Some(name) => Scenario::built_in(name).map_err(|e| e.to_string())?,
            None => base.clone(),
        };
        self.edits.iter().try_fold(start, |s, edit| {
            s.edited(edit)
                .map_err(|why| format!("{}: {why}", edit.describe()))
        })
    }
}

impl Lab {
    /// Each of the lab's runs, labelled, with the scenario it plays.
    pub fn run_scenarios(&self, base: &Scenario) -> Result<Vec<(String, Scenario)>, String> {
        self.runs
            .iter()
            .map(|r| r.scenario(base).map(|s| (r.label.clone(), s)))
            .collect()
    }
}

impl LabMetric {
    /// Why it cannot be read in `scenario`: it names a producer, group or topic it lacks.
    pub fn unknown_in(&self, scenario: &Scenario) -> Option<String> {
        let producer = |p: &String| {
            (scenario.producer_index(p).is_none()).then(|| format!("no producer named {p:?}"))
        };
        let group = |g: &String| {
            (!scenario.consumer_groups.iter().any(|c| &c.name == g))
                .then(|| format!("no consumer group named {g:?}"))
        };
        match self {
            LabMetric::Acked(p) | LabMetric::Failed(p) | LabMetric::Errors(p, _) => producer(p),
            LabMetric::Rebalances(g)
            | LabMetric::PausedTime(g)
            | LabMetric::Pauses(g)
            | LabMetric::MaxLag(g)
            | LabMetric::Lag(g)
            | LabMetric::OffsetResets(g)
            | LabMetric::RecordsSkipped(g) => group(g),
            LabMetric::KeysSplit(t) => {
                (scenario.topic_index(t).is_none()).then(|| format!("no topic named {t:?}"))
            }
            _ => None,
        }
    }
}

/// The most runs a lab compares: the table stays readable.
pub const MAX_LAB_RUNS: usize = 3;

/// A record, named before it exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordRef {
    /// The first record any producer sends with this key.
    Key(String),
    /// The record at this offset of a topic's partition (in its leader's log).
    Offset(String, u32, u64),
}

/// The component of Kafka a beat is about: the seed's eight, in the walkthrough's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    Producer,
    Leader,
    Followers,
    Isr,
    Controller,
    ConsumerGroup,
    OffsetStore,
    LagMonitor,
}

impl Component {
    /// The id the tour file and `tour --json` use.
    pub fn id(self) -> &'static str {
        match self {
            Component::Producer => "producer",
            Component::Leader => "leader",
            Component::Followers => "followers",
            Component::Isr => "isr",
            Component::Controller => "controller",
            Component::ConsumerGroup => "consumer_group",
            Component::OffsetStore => "offset_store",
            Component::LagMonitor => "lag_monitor",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Beat {
    pub title: String,
    pub component: Component,
    /// Two to four short sentences.
    pub narration: String,
    /// The one line the talk preset shows under the title (the speaker says the rest): the
    /// narration's first sentence unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// The speaker's notes, any length: the presenter view shows them, the stage never does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// What to look at while it plays, a line each.
    #[serde(default)]
    pub watch_for: Vec<String>,
    /// The span of sim time it plays: it opens at `from_ms` and stops at `to_ms`.
    pub from_ms: u64,
    pub to_ms: u64,
    /// Sim time per wall time while it plays.
    pub speed: f64,
    /// What the camera frames; nothing frames the whole scene.
    #[serde(default)]
    pub frame: Vec<Focus>,
    /// What stays lit while the rest of the scene dims (with what is framed).
    #[serde(default)]
    pub highlight: Vec<Focus>,
    #[serde(default)]
    pub annotations: Vec<Annotation>,
    /// What happens within the beat's span of the run: its contract with the scenario, checked
    /// when the tour is checked and by the tests, never shown.
    #[serde(default)]
    pub shows: Vec<Expect>,
    /// What must not have happened yet when the beat ends: what the next beat tells.
    #[serde(default)]
    pub not_yet: Vec<Expect>,
    /// Moments the playback pauses at, for the reader to take in; the next step goes on. Each
    /// must happen within the beat, as what it `shows` does.
    #[serde(default)]
    pub hold_at: Vec<Expect>,
}

impl Beat {
    /// The talk preset's line: the beat's own, or its narration's first sentence.
    pub fn stage_line(&self) -> &str {
        if let Some(line) = &self.line {
            return line;
        }
        let n = &self.narration;
        // A sentence ends at a full stop followed by a space: "4.0's" and "e.g." in a sentence
        // are not ends.
        match n.find(". ") {
            Some(i) => &n[..=i],
            None => n,
        }
    }
}

/// Something the run does, in the model's terms, for a beat's contract. `Record` is the tour's
/// record; a place is a `Focus`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expect {
    /// The record is in the log of every replica the focus names (`Leader`, `Followers` or
    /// `Partition`).
    Fetched(Focus, Focus),
    /// The partition's leader's high watermark passed the record.
    HighWatermark(Focus),
    /// The producer was told the record is written.
    Acknowledged(Focus),
    /// A member of the group fetched the record (its position passed the record's offset).
    Consumed(Focus, Focus),
    /// The group's committed offset passed the record.
    Committed(Focus, Focus),
    IsrShrink(String, u32),
    IsrExpand(String, u32),
    LinkCut(u32, u32),
    Crashed(u32),
    Wiped(u32),
    Fenced(u32),
    /// The broker stopped after a controlled shutdown.
    Stopped(u32),
    /// A leader elected, cleanly or not.
    Elected(String, u32),
    UncleanElection(String, u32),
    /// A rebalance of the group completed (classic), or its epoch was bumped (consumer protocol).
    Rebalanced(String),
    /// A consumer read records from a follower (KIP-392).
    ReadFromFollowers,
    PartitionsAdded(String),
    /// Retention deleted segments of the topic.
    SegmentsDeleted(String),
    /// A member of the group was out of range and reset by `auto.offset.reset`.
    OffsetReset(String),
    /// In a lab's run other than the first (from 1): what that run does.
    Run(usize, Box<Expect>),
}

/// A part of the scene, by what it is rather than where it is drawn: a leader is found wherever
/// leadership has moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Focus {
    Producer(String),
    Controller,
    Broker(u32),
    /// Every replica of a topic's partition.
    Partition(String, u32),
    /// The replica that leads the partition now.
    Leader(String, u32),
    /// The replicas that follow it now.
    Followers(String, u32),
    Group(String),
    /// The `__consumer_offsets` partition a group commits to.
    OffsetsPartition(String),
    /// The lag monitor's box.
    LagMonitor,
    /// The tour's record, wherever it is.
    Record,
    /// The way between two parts.
    Route(Box<Focus>, Box<Focus>),
}

/// Something a beat draws on top of the scene.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Annotation {
    /// The producer opened up: its partitioner (with the numbers for the tour's record), its
    /// accumulator's batches as record cards, and the requests its sender has in flight.
    ProducerInternals(String),
    /// The leader's log end offset, large, beside its log.
    LogEndOffset(String, u32),
    /// Each follower's fetch offset (its own log end offset) on its row.
    FetchOffsets(String, u32),
    /// Each replica's high watermark, written out beside the bar.
    HighWatermark(String, u32),
    /// Each follower's time since it was last caught up, filling towards
    /// `replica.lag.time.max.ms`, and the ISR as a set of chips.
    IsrTimers(String, u32),
    /// Each broker's time since its last heartbeat reached the controller, draining towards
    /// `broker.session.timeout.ms`.
    HeartbeatTimers,
    /// The partition's leader epoch, large.
    LeaderEpoch(String, u32),
    /// The line consumers read below: the leader's high watermark.
    ReadLimit(String, u32),
    /// Which `__consumer_offsets` partition a group commits to, and why.
    OffsetsPartition(String),
    /// `kafka-consumer-groups`' arithmetic for one of a group's partitions.
    Lag(String, String, u32),
    /// A line of text beside a part of the scene.
    Note(Focus, String),
}

/// A way out of the tour when it ends: a lab, or a scenario to open in the sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exit {
    pub label: String,
    /// One line on what it shows.
    pub about: String,
    /// The scenario it opens in the sandbox (a built-in's name), when it opens no tour.
    #[serde(default)]
    pub scenario: Option<String>,
    /// The built-in tour it opens (a lab).
    #[serde(default)]
    pub tour: Option<String>,
}

/// The beats as `kafkascope tour NAME --json` prints them.
#[derive(Serialize)]
struct BeatJson<'a> {
    n: usize,
    title: &'a str,
    component: &'static str,
    /// The speaker's notes ("" when it has none).
    notes: &'a str,
    from_ms: u64,
    to_ms: u64,
    speed: f64,
    /// Where its playback pauses.
    holds_ms: Vec<u64>,
}

#[derive(Serialize)]
struct TourJson<'a> {
    name: &'a str,
    scenario: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    follow: Option<crate::view::contract::Followed>,
    beats: Vec<BeatJson<'a>>,
}

impl Tour {
    /// Reads and checks a tour: its scenario must load, and every beat must fit it.
    /// A lab's scenario is its first run's.
    pub fn parse(source: &str, origin: &str) -> Result<(Tour, Scenario), ScenarioError> {
        let mut tour: Tour = parse_ron(source, origin)?;
        // A scenario file named beside the tour's own file is that one, wherever the tour is
        // opened from (a talk saved from the sandbox sits beside its run).
        if let Some(beside) = std::path::Path::new(origin)
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(|dir| dir.join(&tour.scenario))
            .filter(|path| path.is_file())
        {
            tour.scenario = beside.display().to_string();
        }
        let bad = |field: String, message: String| ScenarioError::Invalid {
            origin: origin.to_string(),
            field,
            message,
        };
        let base =
            Scenario::load(&tour.scenario).map_err(|e| bad("scenario".into(), e.to_string()))?;
        let scenario = match &tour.lab {
            Some(lab) => {
                tour.validate_lab(lab, &base).map_err(|(f, m)| bad(f, m))?;
                lab.runs[0]
                    .scenario(&base)
                    .map_err(|m| bad("lab.runs[0].edits".into(), m))?
            }
            None => base,
        };
        tour.validate(origin, &scenario)?;
        Ok((tour, scenario))
    }

    /// The tour with its holds found in its run: the instant each beat's `hold_at` first
    /// happens within the beat. Runs the scenario headless when any beat holds.
    pub fn with_holds(mut self) -> Result<Tour, String> {
        self.holds = if self.beats.iter().any(|b| !b.hold_at.is_empty()) {
            crate::view::contract::holds(&self)?
        } else {
            vec![Vec::new(); self.beats.len()]
        };
        Ok(self)
    }

    /// The holds of beat `beat` (none until [`Tour::with_holds`]).
    pub fn holds_of(&self, beat: usize) -> &[Hold] {
        self.holds.get(beat).map_or(&[], Vec::as_slice)
    }

    /// The base scenario a lab's runs edit (the tour's `scenario`).
    pub fn base_scenario(&self) -> Result<Scenario, ScenarioError> {
        Scenario::load(&self.scenario)
    }

    /// The scenarios of a lab's runs, or the tour's one scenario.
    pub fn run_scenarios(&self) -> Result<Vec<(String, Scenario)>, String> {
        let base = self.base_scenario().map_err(|e| e.to_string())?;
        match &self.lab {
            Some(lab) => lab.run_scenarios(&base),
            None => Ok(vec![(self.title.clone(), base)]),
        }
    }

    fn validate_lab(&self, lab: &Lab, base: &Scenario) -> Result<(), (String, String)> {
        if lab.runs.is_empty() || lab.runs.len() > MAX_LAB_RUNS {
            return Err((
                "lab.runs".into(),
                format!("a lab compares 1 to {MAX_LAB_RUNS} runs"),
            ));
        }
        // The runs play side by side through every beat, and the table reads each.
        let last_beat = self.beats.last().map_or(0, |b| b.to_ms);
        for (i, run) in lab.runs.iter().enumerate() {
            if run.label.trim().is_empty() {
                return Err((format!("lab.runs[{i}].label"), "a run needs a label".into()));
            }
            let scenario = run
                .scenario(base)
                .map_err(|m| (format!("lab.runs[{i}].edits"), m))?;
            let end = lab.now_ms.max(last_beat);
            if end > scenario.duration_ms {
                return Err((
                    format!("lab.runs[{i}]"),
                    format!(
                        "run {:?} ends at {} ms, before the lab's last instant ({end} ms)",
                        run.label, scenario.duration_ms
                    ),
                ));
            }
            for (j, metric) in lab.metrics.iter().enumerate() {
                if let Some(why) = metric.unknown_in(&scenario) {
                    return Err((
                        format!("lab.metrics[{j}]"),
                        format!("run {:?}: {why}", run.label),
                    ));
                }
            }
        }
        if lab.was_ms >= lab.now_ms {
            return Err((
                "lab.was_ms".into(),
                format!(
                    "{} ms: \"was\" comes before \"now\" ({} ms)",
                    lab.was_ms, lab.now_ms
                ),
            ));
        }
        if lab.metrics.is_empty() {
            return Err((
                "lab.metrics".into(),
                "a lab's table has at least one metric".into(),
            ));
        }
        if lab.prevent.iter().all(|p| p.trim().is_empty()) {
            return Err((
                "lab.prevent".into(),
                "a lab says how to prevent what it shows".into(),
            ));
        }
        Ok(())
    }

    /// A built-in tour by name, with its scenario.
    pub fn built_in(name: &str) -> Result<(Tour, Scenario), ScenarioError> {
        let built_in = BUILT_IN_TOURS
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| ScenarioError::Invalid {
                origin: name.to_string(),
                field: "tour".into(),
                message: format!(
                    "no such file, and no built-in tour of that name (built-in: {})",
                    names()
                ),
            })?;
        Tour::parse(
            built_in.source,
            &format!("scenarios/tours/{}.ron", built_in.name),
        )
    }

    /// A tour from a file path, or a built-in one by name.
    pub fn load(name: &str) -> Result<(Tour, Scenario), ScenarioError> {
        let built_in = BUILT_IN_TOURS.iter().any(|b| b.name == name);
        match read_named_file(name, built_in, "tour")? {
            Some(source) => Tour::parse(&source, name),
            None => Tour::built_in(name),
        }
    }

    /// The beat numbered `n` (from 1), or why there is none.
    pub fn beat_index(&self, n: usize) -> Result<usize, String> {
        if n == 0 || n > self.beats.len() {
            return Err(format!(
                "{n}: tour {:?} has beats 1 to {}",
                self.name,
                self.beats.len()
            ));
        }
        Ok(n - 1)
    }

    /// `kafkascope tour NAME --json`: with the holds found and where the followed record went,
    /// when [`Tour::with_holds`] and `followed` were given them.
    pub fn to_json(&self, followed: Option<crate::view::contract::Followed>) -> String {
        let json = TourJson {
            name: &self.name,
            scenario: &self.scenario,
            follow: followed,
            beats: self
                .beats
                .iter()
                .enumerate()
                .map(|(i, b)| BeatJson {
                    n: i + 1,
                    title: &b.title,
                    component: b.component.id(),
                    notes: &b.notes,
                    from_ms: b.from_ms,
                    to_ms: b.to_ms,
                    speed: b.speed,
                    holds_ms: self.holds_of(i).iter().map(|h| h.at_ms).collect(),
                })
                .collect(),
        };
        serde_json::to_string_pretty(&json).expect("a tour serializes")
    }

    /// Refuses a tour its scenario cannot play, naming the field.
    pub fn validate(&self, origin: &str, scenario: &Scenario) -> Result<(), ScenarioError> {
        let bad = |field: String, message: String| ScenarioError::Invalid {
            origin: origin.to_string(),
            field,
            message,
        };
        if self.name.is_empty() {
            return Err(bad("name".into(), "a tour needs a name".into()));
        }
        if self.beats.is_empty() {
            return Err(bad("beats".into(), "a tour has at least one beat".into()));
        }
        let names = Names { scenario };
        if let Some(follow) = &self.follow {
            names.record(follow).map_err(|m| bad("follow".into(), m))?;
        }
        let mut previous_end = 0;
        for (i, beat) in self.beats.iter().enumerate() {
            let at = |f: &str| format!("beats[{i}].{f}");
            if beat.title.trim().is_empty() {
                return Err(bad(at("title"), "a beat needs a title".into()));
            }
            if beat.narration.trim().is_empty() {
                return Err(bad(at("narration"), "a beat needs its narration".into()));
            }
            if beat.from_ms < previous_end {
                return Err(bad(
                    at("from_ms"),
                    format!(
                        "{} ms is before the previous beat ends ({previous_end} ms): beats follow one another",
                        beat.from_ms
                    ),
                ));
            }
            if beat.to_ms <= beat.from_ms {
                return Err(bad(
                    at("to_ms"),
                    format!(
                        "{} ms: a beat ends after it starts ({} ms)",
                        beat.to_ms, beat.from_ms
                    ),
                ));
            }
            if beat.to_ms > scenario.duration_ms {
                return Err(bad(
                    at("to_ms"),
                    format!(
                        "{} ms is past the end of scenario {:?} ({} ms)",
                        beat.to_ms, scenario.name, scenario.duration_ms
                    ),
                ));
            }
            previous_end = beat.to_ms;
            if !(MIN_SPEED..=MAX_SPEED).contains(&beat.speed) {
                return Err(bad(
                    at("speed"),
                    format!(
                        "{}: a beat plays at {MIN_SPEED} to {MAX_SPEED} times real time",
                        beat.speed
                    ),
                ));
            }
            for (j, focus) in beat.frame.iter().enumerate() {
                names
                    .focus(focus, self.follow.is_some())
                    .map_err(|m| bad(format!("beats[{i}].frame[{j}]"), m))?;
            }
            for (j, focus) in beat.highlight.iter().enumerate() {
                names
                    .focus(focus, self.follow.is_some())
                    .map_err(|m| bad(format!("beats[{i}].highlight[{j}]"), m))?;
            }
            for (j, annotation) in beat.annotations.iter().enumerate() {
                names
                    .annotation(annotation, self.follow.is_some())
                    .map_err(|m| bad(format!("beats[{i}].annotations[{j}]"), m))?;
            }
            let runs = self.lab.as_ref().map_or(1, |l| l.runs.len());
            for (field, list) in [
                ("shows", &beat.shows),
                ("not_yet", &beat.not_yet),
                ("hold_at", &beat.hold_at),
            ] {
                for (j, expect) in list.iter().enumerate() {
                    names
                        .expect(expect, self.follow.is_some(), runs)
                        .map_err(|m| bad(format!("beats[{i}].{field}[{j}]"), m))?;
                }
            }
        }
        for (i, exit) in self.after.iter().enumerate() {
            match (&exit.scenario, &exit.tour) {
                (Some(scenario), None) => {
                    Scenario::built_in(scenario)
                        .map_err(|e| bad(format!("after[{i}].scenario"), e.to_string()))?;
                }
                // Only the name: the tour checks itself when it loads.
                (None, Some(tour)) => {
                    if !BUILT_IN_TOURS.iter().any(|b| b.name == tour) {
                        return Err(bad(
                            format!("after[{i}].tour"),
                            format!("no built-in tour {tour:?} (built-in: {})", self::names()),
                        ));
                    }
                }
                _ => {
                    return Err(bad(
                        format!("after[{i}]"),
                        "an exit opens a scenario or a tour: give one of the two".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The names of the built-in tours, for messages.
pub fn names() -> String {
    BUILT_IN_TOURS
        .iter()
        .map(|b| b.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks that what a tour names exists in its scenario.
struct Names<'a> {
    scenario: &'a Scenario,
}

impl Names<'_> {
    fn partition(&self, topic: &str, partition: u32) -> Result<(), String> {
        let t = self
            .scenario
            .topics
            .iter()
            .find(|t| t.name == topic)
            .ok_or_else(|| format!("scenario {:?} has no topic {topic:?}", self.scenario.name))?;
        if partition >= t.partitions {
            return Err(format!(
                "topic {topic:?} has partitions 0 to {}",
                t.partitions - 1
            ));
        }
        Ok(())
    }

    fn producer(&self, name: &str) -> Result<(), String> {
        self.scenario
            .producer_index(name)
            .map(|_| ())
            .ok_or_else(|| format!("scenario {:?} has no producer {name:?}", self.scenario.name))
    }

    fn group(&self, name: &str) -> Result<(), String> {
        if self.scenario.consumer_groups.iter().any(|g| g.name == name) {
            Ok(())
        } else {
            Err(format!(
                "scenario {:?} has no consumer group {name:?}",
                self.scenario.name
            ))
        }
    }

    fn record(&self, record: &RecordRef) -> Result<(), String> {
        match record {
            RecordRef::Key(key) if key.is_empty() => Err("an empty key names no record".into()),
            RecordRef::Key(_) => Ok(()),
            RecordRef::Offset(topic, partition, _) => self.partition(topic, *partition),
        }
    }

    fn focus(&self, focus: &Focus, follows: bool) -> Result<(), String> {
        match focus {
            Focus::Producer(name) => self.producer(name),
            Focus::Controller | Focus::LagMonitor => Ok(()),
            Focus::Broker(b) => {
                if (1..=self.scenario.cluster.brokers).contains(b) {
                    Ok(())
                } else {
                    Err(format!(
                        "broker {b}: the cluster has brokers 1 to {}",
                        self.scenario.cluster.brokers
                    ))
                }
            }
            Focus::Partition(t, p) | Focus::Leader(t, p) | Focus::Followers(t, p) => {
                self.partition(t, *p)
            }
            Focus::Group(g) | Focus::OffsetsPartition(g) => self.group(g),
            Focus::Record if follows => Ok(()),
            Focus::Record => Err("the tour follows no record (set `follow`)".into()),
            Focus::Route(a, b) => {
                self.focus(a, follows)?;
                self.focus(b, follows)
            }
        }
    }

    fn expect(&self, expect: &Expect, follows: bool, runs: usize) -> Result<(), String> {
        let record = |what: &Focus| match what {
            Focus::Record if follows => Ok(()),
            Focus::Record => Err("the tour follows no record (set `follow`)".to_string()),
            other => Err(format!(
                "{other:?}: an expectation is about the tour's `Record`"
            )),
        };
        let group = |g: &Focus| match g {
            Focus::Group(name) => self.group(name),
            other => Err(format!("{other:?}: a group is named `Group(\"...\")`")),
        };
        let broker = |b: u32| self.focus(&Focus::Broker(b), follows);
        match expect {
            Expect::Fetched(place, what) => {
                match place {
                    Focus::Leader(t, p) | Focus::Followers(t, p) | Focus::Partition(t, p) => {
                        self.partition(t, *p)?
                    }
                    other => {
                        return Err(format!(
                            "{other:?}: a record is fetched by a `Leader`, `Followers` or `Partition`"
                        ));
                    }
                }
                record(what)
            }
            Expect::HighWatermark(what) | Expect::Acknowledged(what) => record(what),
            Expect::Consumed(g, what) | Expect::Committed(g, what) => {
                group(g)?;
                record(what)
            }
            Expect::IsrShrink(t, p)
            | Expect::IsrExpand(t, p)
            | Expect::Elected(t, p)
            | Expect::UncleanElection(t, p) => self.partition(t, *p),
            Expect::LinkCut(a, b) => {
                broker(*a)?;
                broker(*b)
            }
            Expect::Crashed(b) | Expect::Wiped(b) | Expect::Fenced(b) | Expect::Stopped(b) => {
                broker(*b)
            }
            Expect::Rebalanced(g) | Expect::OffsetReset(g) => self.group(g),
            Expect::SegmentsDeleted(t) => self.partition(t, 0),
            Expect::ReadFromFollowers => Ok(()),
            Expect::PartitionsAdded(t) => self.partition(t, 0),
            Expect::Run(n, inner) => {
                if !(1..=runs).contains(n) || matches!(**inner, Expect::Run(..)) {
                    return Err(format!("run {n}: the tour has runs 1 to {runs}"));
                }
                // The run's own scenario is checked when the contract is.
                Ok(())
            }
        }
    }

    fn annotation(&self, annotation: &Annotation, follows: bool) -> Result<(), String> {
        match annotation {
            Annotation::ProducerInternals(p) => self.producer(p),
            Annotation::LogEndOffset(t, p)
            | Annotation::FetchOffsets(t, p)
            | Annotation::HighWatermark(t, p)
            | Annotation::IsrTimers(t, p)
            | Annotation::LeaderEpoch(t, p)
            | Annotation::ReadLimit(t, p) => self.partition(t, *p),
            Annotation::HeartbeatTimers => Ok(()),
            Annotation::OffsetsPartition(g) => self.group(g),
            Annotation::Lag(g, t, p) => {
                self.group(g)?;
                self.partition(t, *p)
            }
            Annotation::Note(focus, text) => {
                if text.trim().is_empty() {
                    return Err("a note needs its text".into());
                }
                self.focus(focus, follows)
            }
        }
    }
}
