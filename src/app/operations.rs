//! The sandbox's operations panel: Kafka's operations and live settings as controls. Each sends
//! one of the model's timeline actions (`Control::Act`), the same a scenario file holds, so a
//! saved run replays them; what the model cannot apply it refuses, with the reason, in the event
//! log. A reassignment's broker list is checked here first, with Kafka's reason.
//!
//! What a running cluster cannot change (the broker count, a topic's replication factor, a
//! group's protocol) is an edit of the set-up: confirmed, it starts the run again with the
//! actions taken so far, or runs beside it. Every control's change goes through [`control_for`].

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};

use super::playback::Control;
use crate::scenario::{
    Acks, Action, Assignor, CleanupPolicy, Edit, GroupProtocol, Keys, LogSetting, MAX_BROKERS,
    MAX_MEMBERS, MAX_PARTITIONS, MIN_SEGMENT_BYTES, ProducerSettings, Scenario, Stop,
    reassignment_refusal,
};
use crate::sim::segments::LogConfig;
use crate::view::snapshot::Snapshot;

/// What a sandbox control asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A live action, as a timeline holds it.
    Act(Action),
    /// The set-up edited: the run starts again from 0 s.
    Restart(Edit),
    /// The set-up edited, run beside the one shown.
    Compare(Edit),
    /// Back to one run.
    EndCompare,
}

/// The playback control for a change to the run of `scenario` that took `actions`, or why it
/// cannot be made. An edited set-up keeps the actions, so the new run replays them.
pub fn control_for(
    change: &Change,
    scenario: &Scenario,
    actions: &[(u64, Action)],
) -> Result<Control, String> {
    Ok(match change {
        Change::Act(action) => Control::Act(action.clone()),
        Change::Restart(edit) => Control::Load(Box::new(set_up_with(scenario, actions, edit)?.0)),
        // The second run is given the first one's actions as they were given (`app::apply`).
        Change::Compare(edit) => Control::Compare(
            Box::new(scenario.edited(edit)?),
            ["as set up".to_string(), edit.describe()],
        ),
        Change::EndCompare => Control::EndCompare,
    })
}

/// `scenario` edited, with the `actions` taken so far that the new set-up can hold (not those
/// that name a broker, topic or group it lacks), and those left out.
pub fn set_up_with(
    scenario: &Scenario,
    actions: &[(u64, Action)],
    edit: &Edit,
) -> Result<(Scenario, Vec<(u64, Action)>), String> {
    let set_up = scenario.edited(edit)?;
    let fits = |a: &(u64, Action)| {
        set_up
            .with_actions(std::slice::from_ref(a))
            .validate(&set_up.name, set_up.duration_ms)
            .is_ok()
    };
    let (kept, left_out): (Vec<_>, Vec<_>) = actions.iter().cloned().partition(|a| fits(a));
    let run = set_up.with_actions(&kept);
    run.validate(&run.name, run.duration_ms)
        .map_err(|e| e.to_string())?;
    Ok((run, left_out))
}

/// What the panel's fields hold between frames.
#[derive(Resource, Default)]
pub(super) struct OperationsForm {
    /// The partition to reassign, by ordinal.
    reassign: Option<u32>,
    /// Its new replicas, as typed: "1, 2, 4".
    brokers: String,
    /// Why the typed list cannot be sent.
    refused: Option<String>,
    /// An edit of the set-up waiting for the reader to confirm the restart (with how many of
    /// the actions taken it leaves out), or why it cannot be made.
    pending: Option<Result<(Edit, usize), (Edit, String)>>,
}

impl OperationsForm {
    /// A change that could not be made: an edit's reason shows under the set-up.
    pub(super) fn refuse(&mut self, change: Change, why: String) {
        if let Change::Restart(edit) | Change::Compare(edit) = change {
            self.pending = Some(Err((edit, why)));
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<OperationsForm>();
}

/// The brokers typed in the reassignment field, or why they cannot be read.
fn parse_brokers(text: &str) -> Result<Vec<u32>, String> {
    text.split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u32>()
                .map_err(|_| format!("{t:?} is not a broker id: give ids like 1, 2, 4"))
        })
        .collect()
}

/// The panel; returns the change a control asked for this frame. `scenario` and `actions` are
/// the run's set-up and what was done to it; `side_by_side`: a second run is shown.
pub(super) fn operations(
    ui: &mut egui::Ui,
    s: &Snapshot,
    scenario: &Scenario,
    actions: &[(u64, Action)],
    side_by_side: bool,
    form: &mut OperationsForm,
) -> Option<Change> {
    let mut change = None;
    if side_by_side
        && ui
            .button("End the side-by-side run")
            .on_hover_text("Back to the run on the left alone")
            .clicked()
    {
        change = Some(Change::EndCompare);
    }
    ui.label(RichText::new("Set-up").strong());
    ui.weak("A running cluster cannot take these: a change restarts the run, once confirmed.");
    if let Some(edit) = set_up(ui, scenario) {
        form.pending = Some(match set_up_with(scenario, actions, &edit) {
            Ok((_, left_out)) => Ok((edit, left_out.len())),
            Err(why) => Err((edit, why)),
        });
    }
    match form.pending.clone() {
        Some(Ok((edit, left_out))) => {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.label(format!(
                    "{}: the run starts again from 0 s, and replays what was done to it.",
                    edit.describe()
                ));
                if left_out > 0 {
                    ui.colored_label(
                        ui.visuals().warn_fg_color,
                        format!(
                            "{left_out} of those actions name what the new set-up lacks, and are left out."
                        ),
                    );
                }
                ui.horizontal_wrapped(|ui| {
                    if ui.button("Restart with it").clicked() {
                        change = Some(Change::Restart(edit.clone()));
                        form.pending = None;
                    }
                    if ui
                        .button("Run it side by side")
                        .on_hover_text("This run on the left, the edited one on the right, in lock-step")
                        .clicked()
                    {
                        change = Some(Change::Compare(edit.clone()));
                        form.pending = None;
                    }
                    if ui.button("Cancel").clicked() {
                        form.pending = None;
                    }
                });
            });
        }
        Some(Err((edit, why))) => {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                format!("{}: refused. {why}", edit.describe()),
            );
        }
        None => {}
    }
    ui.separator();
    let act = live(ui, s, form);
    change.or(act.map(Change::Act))
}

/// `Ok` where a step can be taken, else why not.
fn check(ok: bool, why: String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why) }
}

/// A count with - and + buttons, each disabled, with its reason on hover, where its step cannot
/// be taken; returns the new count when one is clicked.
fn stepper(
    ui: &mut egui::Ui,
    label: String,
    n: u32,
    down: Result<(), String>,
    up: Result<(), String>,
) -> Option<u32> {
    let mut to = None;
    ui.horizontal(|ui| {
        ui.label(label);
        for (text, step, allowed) in [("-", n.wrapping_sub(1), down), ("+", n + 1, up)] {
            let button = ui.add_enabled(allowed.is_ok(), egui::Button::new(text));
            if button
                .on_disabled_hover_text(allowed.err().unwrap_or_default())
                .clicked()
            {
                to = Some(step);
            }
        }
    });
    to
}

/// A setting with buttons that halve it (not below `least`) and double it; -1 (no limit) only
/// doubles into a week's worth, Kafka's default. The new value when one was pressed.
fn halve_or_double(ui: &mut egui::Ui, label: String, v: i64, least: i64) -> Option<i64> {
    let mut to = None;
    ui.horizontal(|ui| {
        ui.label(label);
        let half = ui.add_enabled(v / 2 >= least, egui::Button::new("/2"));
        if half
            .on_disabled_hover_text(format!("Kafka's minimum is {least}"))
            .clicked()
        {
            to = Some(v / 2);
        }
        if ui.button("x2").clicked() {
            to = Some(if v < 0 {
                604_800_000
            } else {
                v.saturating_mul(2)
            });
        }
    });
    to
}

/// A records-a-second field; the new rate when it was changed.
fn rate_field(ui: &mut egui::Ui, label: &str, rate: u32) -> Option<u32> {
    let mut rate = rate;
    ui.horizontal(|ui| {
        ui.label(label);
        ui.add(egui::DragValue::new(&mut rate).range(0..=100_000))
            .changed()
            .then_some(rate)
    })
    .inner
}

/// The set-up's controls; returns the edit one asked for. A setting that cannot be is
/// refused in the control itself, with the reason.
fn set_up(ui: &mut egui::Ui, scenario: &Scenario) -> Option<Edit> {
    let mut edit = None;
    let brokers = scenario.cluster.brokers;
    let widest = scenario.topics.iter().max_by_key(|t| t.replication_factor);
    let fewer = match widest {
        Some(t) if t.replication_factor >= brokers => Err(format!(
            "Topic {} has {} replicas: lower its replication factor first",
            t.name, t.replication_factor
        )),
        _ if brokers <= 1 => Err("A cluster has at least one broker".into()),
        _ => Ok(()),
    };
    let more = check(
        brokers < MAX_BROKERS,
        format!("The sandbox has at most {MAX_BROKERS} brokers"),
    );
    if let Some(n) = stepper(ui, format!("{brokers} brokers"), brokers, fewer, more) {
        edit = Some(Edit::Brokers(n));
    }
    let mut racks = scenario.cluster.broker_racks.is_some();
    if ui
        .checkbox(&mut racks, "A rack per broker (broker.rack)")
        .changed()
    {
        edit = Some(Edit::Racks(racks));
    }
    let mut selector = scenario.cluster.rack_aware_replica_selector;
    if ui
        .checkbox(
            &mut selector,
            "Followers serve reads (RackAwareReplicaSelector)",
        )
        .on_hover_text(
            "KIP-392: a consumer with client.rack reads from an in-sync replica in its rack",
        )
        .changed()
    {
        edit = Some(Edit::RackAwareSelector(selector));
    }
    for t in &scenario.topics {
        let n = t.partitions;
        if let Some(n) = stepper(
            ui,
            format!("{}: {n} partitions", t.name),
            n,
            check(n > 1, "A topic has at least one partition".into()),
            check(
                n < MAX_PARTITIONS,
                format!("The sandbox gives a topic at most {MAX_PARTITIONS} partitions"),
            ),
        ) {
            edit = Some(Edit::Partitions(t.name.clone(), n));
        }
        let rf = t.replication_factor;
        // `StripedReplicaPlacer`'s refusal, in the control itself.
        let too_many = format!(
            "The target replication factor of {} cannot be reached because only {brokers} broker(s) are registered.",
            rf + 1
        );
        if let Some(n) = stepper(
            ui,
            format!("replication factor {rf}"),
            rf,
            check(rf > 1, "A topic has at least one replica".into()),
            check(rf < brokers, too_many),
        ) {
            edit = Some(Edit::ReplicationFactor(t.name.clone(), n));
        }
    }
    let racks: Vec<String> = scenario.cluster.broker_racks.clone().unwrap_or_default();
    for g in &scenario.consumer_groups {
        ui.label(RichText::new(format!("Group {}", g.name)).italics());
        ui.horizontal_wrapped(|ui| {
            for protocol in [GroupProtocol::Classic, GroupProtocol::Consumer] {
                if ui
                    .selectable_label(
                        g.protocol == protocol,
                        format!("group.protocol={}", protocol.name()),
                    )
                    .clicked()
                    && g.protocol != protocol
                {
                    edit = Some(Edit::Protocol(g.name.clone(), protocol));
                }
            }
        });
        let assignors: &[Assignor] = match g.protocol {
            GroupProtocol::Classic => &[
                Assignor::Range,
                Assignor::RoundRobin,
                Assignor::Sticky,
                Assignor::CooperativeSticky,
            ],
            GroupProtocol::Consumer => &[Assignor::Uniform, Assignor::Range],
        };
        ui.horizontal_wrapped(|ui| {
            ui.label("assignor");
            for a in assignors {
                if ui.selectable_label(g.assignor() == *a, a.name()).clicked() && g.assignor() != *a
                {
                    edit = Some(Edit::Assignor(g.name.clone(), Some(*a)));
                }
            }
        });
        ui.horizontal_wrapped(|ui| {
            let mut each = g.commit_after_each_batch;
            if ui
                .checkbox(&mut each, "commit after each batch")
                .on_hover_text("Off: auto-commit every auto.commit.interval.ms")
                .changed()
            {
                edit = Some(Edit::CommitAfterEachBatch(g.name.clone(), each));
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("client.rack");
            if ui.selectable_label(g.rack.is_none(), "none").clicked() && g.rack.is_some() {
                edit = Some(Edit::GroupRack(g.name.clone(), None));
            }
            if racks.is_empty() {
                ui.add_enabled(false, egui::Label::new("(the brokers have no racks)"));
            }
            for r in &racks {
                let on = g.rack.as_ref() == Some(r);
                if ui.selectable_label(on, r).clicked() && !on {
                    edit = Some(Edit::GroupRack(g.name.clone(), Some(r.clone())));
                }
            }
        });
    }
    edit
}

/// The live controls; returns the action one asked for.
fn live(ui: &mut egui::Ui, s: &Snapshot, form: &mut OperationsForm) -> Option<Action> {
    let mut act = None;
    let brokers = s.brokers.len() as u32;
    ui.label(RichText::new("Cluster").strong());
    ui.horizontal_wrapped(|ui| {
        if ui
            .button("Rolling restart")
            .on_hover_text("Controlled shutdowns, one broker at a time")
            .clicked()
        {
            act = Some(Action::RollingRestart(Stop::Controlled));
        }
        if ui
            .button("Rolling restart by kill -9")
            .on_hover_text("Each broker crashes and restarts: its partitions wait for fencing")
            .clicked()
        {
            act = Some(Action::RollingRestart(Stop::Crash));
        }
        if ui.button("Add a broker").clicked() {
            act = Some(Action::AddBroker);
        }
        if ui.button("Preferred leader election").clicked() {
            act = Some(Action::PreferredElection);
        }
    });
    let mut elr = s.eligible_leader_replicas;
    if ui
        .checkbox(&mut elr, "Eligible leader replicas (KIP-966)")
        .changed()
    {
        act = Some(Action::SetEligibleLeaderReplicas(elr));
    }

    // Topics: each shown by its first partition's settings, which all its partitions share.
    let mut topics: Vec<(&str, u32, u32, bool, LogConfig)> = Vec::new();
    for p in s.partitions.iter().filter(|p| !p.internal) {
        match topics.iter_mut().find(|(t, ..)| *t == p.topic) {
            Some(t) => t.1 += 1,
            None => topics.push((
                &p.topic,
                1,
                p.min_insync_replicas,
                p.unclean_leader_election,
                p.log,
            )),
        }
    }
    for (topic, partitions, min_isr, unclean, log) in topics {
        ui.separator();
        ui.label(RichText::new(format!("Topic {topic}")).strong());
        ui.horizontal(|ui| {
            ui.label(format!("{partitions} partitions"));
            if ui
                .button("+1 partition")
                .on_hover_text("Keyed records map by the new count once producers learn of it")
                .clicked()
            {
                act = Some(Action::AddPartitions(topic.to_string(), partitions + 1));
            }
        });
        if let Some(n) = stepper(
            ui,
            format!("min.insync.replicas {min_isr}"),
            min_isr,
            check(min_isr > 1, "Kafka's minimum is 1".into()),
            Ok(()),
        ) {
            act = Some(Action::SetMinIsr(topic.to_string(), n));
        }
        let mut on = unclean;
        if ui
            .checkbox(&mut on, "unclean.leader.election.enable")
            .changed()
        {
            act = Some(Action::SetUncleanElection(topic.to_string(), on));
        }
        // kafka-configs --alter: halved or doubled, as a speaker would try them live.
        let ms = |v: i64| {
            if v < 0 {
                "-1 (forever)".to_string()
            } else {
                format!("{v}")
            }
        };
        if let Some(v) = halve_or_double(
            ui,
            format!("retention.ms {}", ms(log.retention_ms)),
            log.retention_ms,
            1,
        ) {
            act = Some(Action::SetTopicConfig(
                topic.to_string(),
                LogSetting::RetentionMs(v),
            ));
        }
        let bytes = log.segment_bytes as i64;
        if let Some(v) = halve_or_double(
            ui,
            format!("segment.bytes {bytes}"),
            bytes,
            MIN_SEGMENT_BYTES as i64,
        ) {
            act = Some(Action::SetTopicConfig(
                topic.to_string(),
                LogSetting::SegmentBytes(v as u64),
            ));
        }
        ui.horizontal(|ui| {
            ui.label("cleanup.policy");
            for policy in [
                CleanupPolicy::Delete,
                CleanupPolicy::Compact,
                CleanupPolicy::CompactDelete,
            ] {
                if ui
                    .selectable_label(log.cleanup_policy == policy, policy.as_kafka())
                    .clicked()
                    && log.cleanup_policy != policy
                {
                    act = Some(Action::SetTopicConfig(
                        topic.to_string(),
                        LogSetting::CleanupPolicy(policy),
                    ));
                }
            }
        });
        if log.cleanup_policy.compacts()
            && let Some(v) = halve_or_double(
                ui,
                format!("delete.retention.ms {}", log.delete_retention_ms),
                log.delete_retention_ms as i64,
                1,
            )
        {
            act = Some(Action::SetTopicConfig(
                topic.to_string(),
                LogSetting::DeleteRetentionMs(v as u64),
            ));
        }
    }

    ui.separator();
    ui.label(RichText::new("Reassign a partition").strong());
    let user: Vec<_> = s.partitions.iter().filter(|p| !p.internal).collect();
    let chosen = form
        .reassign
        .and_then(|o| user.iter().find(|p| p.ordinal == o))
        .or(user.first())
        .copied();
    if let Some(partition) = chosen {
        egui::ComboBox::from_id_salt("reassign")
            .selected_text(format!("{} {:?}", partition.name(), partition.assignment))
            .show_ui(ui, |ui| {
                for p in &user {
                    let label = format!("{} {:?}", p.name(), p.assignment);
                    if ui
                        .selectable_label(p.ordinal == partition.ordinal, label)
                        .clicked()
                    {
                        form.reassign = Some(p.ordinal);
                    }
                }
            });
        ui.horizontal(|ui| {
            ui.label("to brokers");
            ui.add(
                egui::TextEdit::singleline(&mut form.brokers)
                    .hint_text("1, 2, 4")
                    .desired_width(90.0),
            );
            if ui.button("Reassign").clicked() {
                let checked = parse_brokers(&form.brokers).and_then(|list| {
                    match reassignment_refusal(&partition.topic, partition.index, &list, brokers) {
                        Some(why) => Err(why),
                        None => Ok(list),
                    }
                });
                match checked {
                    Ok(list) => {
                        form.refused = None;
                        act = Some(Action::Reassign(
                            partition.topic.clone(),
                            partition.index,
                            list,
                        ));
                    }
                    Err(why) => form.refused = Some(why),
                }
            }
        });
        if let Some(why) = &form.refused {
            ui.colored_label(ui.visuals().warn_fg_color, why);
        }
    }

    for p in &s.producers {
        ui.separator();
        ui.label(RichText::new(format!("Producer {}", p.name)).strong());
        let mut settings = ProducerSettings::default();
        ui.horizontal(|ui| {
            ui.label("acks");
            for (acks, name) in [(Acks::Zero, "0"), (Acks::One, "1"), (Acks::All, "all")] {
                if ui.selectable_label(p.acks == name, name).clicked() && p.acks != name {
                    settings.acks = Some(acks);
                    // Idempotence follows Kafka's default: on with acks=all only.
                    settings.enable_idempotence = Some(None);
                }
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.label("keys");
            let modes = [
                (Keys::None, "none (sticky)"),
                (Keys::Sequence("key-".into()), "a new key each record"),
                (Keys::Random(1000), "1000 random"),
                (Keys::Fixed("hot".into()), "one hot key"),
            ];
            for (keys, name) in modes {
                let on = std::mem::discriminant(&p.keys) == std::mem::discriminant(&keys);
                if ui.selectable_label(on, name).clicked() && !on {
                    settings.keys = Some(keys);
                }
            }
        });
        settings.records_per_sec = rate_field(ui, "records/s", p.records_per_sec);
        let mut linger = p.linger_ms;
        let mut batch = p.batch_size;
        ui.horizontal(|ui| {
            ui.label("linger.ms");
            if ui
                .add(egui::DragValue::new(&mut linger).range(0..=10_000))
                .changed()
            {
                settings.linger_ms = Some(linger);
            }
            ui.label("batch.size");
            if ui
                .add(egui::DragValue::new(&mut batch).range(1..=1_048_576))
                .changed()
            {
                settings.batch_size = Some(batch);
            }
        });
        let mut idempotent = p.idempotent;
        // Refused in the control itself, as Kafka's client refuses the config.
        if ui
            .add_enabled(
                p.acks == "all",
                egui::Checkbox::new(&mut idempotent, "enable.idempotence"),
            )
            .on_disabled_hover_text("The idempotent producer needs acks=all")
            .changed()
        {
            settings.enable_idempotence = Some(Some(idempotent));
        }
        if settings != ProducerSettings::default() {
            act = Some(Action::SetProducer(p.name.clone(), settings));
        }
    }

    for g in &s.groups {
        ui.separator();
        let members = g.members.iter().filter(|m| m.alive).count() as u32;
        ui.label(RichText::new(format!("Group {}", g.name)).strong());
        if let Some(n) = stepper(
            ui,
            match members {
                1 => "1 member".to_string(),
                n => format!("{n} members"),
            },
            members,
            check(members > 0, "No member is left".into()),
            check(
                members < MAX_MEMBERS,
                format!("The sandbox gives a group at most {MAX_MEMBERS} members"),
            ),
        ) {
            act = Some(Action::SetGroupMembers(g.name.clone(), n));
        }
        if let Some(rate) = rate_field(ui, "records/s per member", g.records_per_sec) {
            act = Some(Action::SetConsumerRate(g.name.clone(), rate));
        }
    }
    act
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_broker_list_is_read_or_refused_with_the_reason() {
        assert_eq!(parse_brokers("1, 2,4"), Ok(vec![1, 2, 4]));
        assert_eq!(parse_brokers(""), Ok(vec![]));
        let e = parse_brokers("1, x").unwrap_err();
        assert!(e.contains("\"x\" is not a broker id"), "{e}");
    }
}
