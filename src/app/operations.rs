//! The sandbox's operations panel: Kafka's operations and live settings as controls. Each sends
//! one of the model's timeline actions (`Control::Act`), the same a scenario file holds, so a
//! saved run replays them; what the model cannot apply it refuses, with the reason, in the event
//! log. A reassignment's broker list is checked here first, with Kafka's reason.

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};

use crate::scenario::{Acks, Action, ProducerSettings, Stop, reassignment_refusal};
use crate::view::snapshot::Snapshot;

/// What the panel's fields hold between frames.
#[derive(Resource, Default)]
pub(super) struct OperationsForm {
    /// The partition to reassign, by ordinal.
    reassign: Option<u32>,
    /// Its new replicas, as typed: "1, 2, 4".
    brokers: String,
    /// Why the typed list cannot be sent.
    refused: Option<String>,
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

/// The panel; returns the action a control asked for this frame.
pub(super) fn operations(
    ui: &mut egui::Ui,
    s: &Snapshot,
    form: &mut OperationsForm,
) -> Option<Action> {
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
    let mut topics: Vec<(&str, u32, u32, bool)> = Vec::new();
    for p in s.partitions.iter().filter(|p| !p.internal) {
        match topics.iter_mut().find(|(t, ..)| *t == p.topic) {
            Some(t) => t.1 += 1,
            None => topics.push((
                &p.topic,
                1,
                p.min_insync_replicas,
                p.unclean_leader_election,
            )),
        }
    }
    for (topic, partitions, min_isr, unclean) in topics {
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
        ui.horizontal(|ui| {
            ui.label(format!("min.insync.replicas {min_isr}"));
            if ui
                .add_enabled(min_isr > 1, egui::Button::new("-"))
                .on_disabled_hover_text("Kafka's minimum is 1")
                .clicked()
            {
                act = Some(Action::SetMinIsr(topic.to_string(), min_isr - 1));
            }
            if ui.button("+").clicked() {
                act = Some(Action::SetMinIsr(topic.to_string(), min_isr + 1));
            }
        });
        let mut on = unclean;
        if ui
            .checkbox(&mut on, "unclean.leader.election.enable")
            .changed()
        {
            act = Some(Action::SetUncleanElection(topic.to_string(), on));
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
        let mut rate = p.records_per_sec;
        let mut linger = p.linger_ms;
        let mut batch = p.batch_size;
        ui.horizontal(|ui| {
            ui.label("records/s");
            if ui
                .add(egui::DragValue::new(&mut rate).range(0..=100_000))
                .changed()
            {
                settings.records_per_sec = Some(rate);
            }
        });
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
        ui.horizontal(|ui| {
            ui.label(RichText::new(format!("Group {}", g.name)).strong());
            ui.label(match members {
                1 => "1 member".to_string(),
                n => format!("{n} members"),
            });
            if ui
                .add_enabled(members > 0, egui::Button::new("-"))
                .clicked()
            {
                act = Some(Action::SetGroupMembers(g.name.clone(), members - 1));
            }
            if ui
                .add_enabled(
                    members < crate::scenario::limits::CONSUMERS,
                    egui::Button::new("+"),
                )
                .clicked()
            {
                act = Some(Action::SetGroupMembers(g.name.clone(), members + 1));
            }
        });
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
