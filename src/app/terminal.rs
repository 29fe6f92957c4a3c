//! The Terminal panel: Kafka's own tools run against the cluster at the playhead, as someone
//! who knows Kafka checks one (`kafka-topics.sh --describe`, `kafka-consumer-groups.sh
//! --describe`), printed by [`crate::view::kafka_tools`] exactly as `kafkascope describe`
//! prints them. It follows the playhead: pause, seek or step, and it answers for that instant.

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};

use crate::view::kafka_tools::{GroupTable, describe_group, describe_topics};
use crate::view::snapshot::Snapshot;

/// Which command the panel runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `kafka-topics.sh --describe [--topic NAME]`.
    Topics(Option<String>),
    /// `kafka-consumer-groups.sh --describe --group NAME [--members | --state]`.
    Group(String, GroupTable),
}

impl Command {
    /// The command line as it would be typed (the bootstrap server left out).
    pub fn line(&self) -> String {
        match self {
            Command::Topics(None) => "kafka-topics.sh --describe".into(),
            Command::Topics(Some(t)) => format!("kafka-topics.sh --describe --topic {t}"),
            Command::Group(g, table) => {
                let flag = match table {
                    GroupTable::Offsets => "",
                    GroupTable::Members => " --members",
                    GroupTable::State => " --state",
                };
                format!("kafka-consumer-groups.sh --describe --group {g}{flag}")
            }
        }
    }

    /// What the tool prints for the cluster in `s`: both streams, as a terminal shows them.
    pub fn output(&self, s: &Snapshot) -> String {
        match self {
            Command::Topics(topic) => {
                describe_topics(s, topic.as_deref()).unwrap_or_else(|why| format!("{why}\n"))
            }
            Command::Group(g, table) => describe_group(s, g, *table).shown(),
        }
    }
}

/// The command the panel runs (whether it shows is the reader's: `Pointer::terminal`).
#[derive(Resource, Debug)]
pub struct Terminal {
    pub command: Command,
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal {
            command: Command::Topics(None),
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Terminal>()
        .add_systems(Update, open_as_asked.in_set(super::AppSet::Scene));
}

/// A shot that asked for the Terminal opens it on its command, once the cluster is read.
fn open_as_asked(
    options: Res<super::Options>,
    shown: Res<super::playback::Shown>,
    mut terminal: ResMut<Terminal>,
    mut pointer: ResMut<super::input::Pointer>,
    mut done: Local<bool>,
) {
    let Some(line) = options.terminal.as_ref().filter(|_| !*done) else {
        return;
    };
    *done = true;
    if let Some(c) = commands(&shown.snapshot)
        .into_iter()
        .find(|c| c.line() == *line)
    {
        terminal.command = c;
        pointer.terminal = true;
    }
}

/// The command lines the panel offers for this cluster.
pub fn command_lines(s: &Snapshot) -> Vec<String> {
    commands(s).iter().map(Command::line).collect()
}

/// The commands the panel offers for this cluster: every topic, each topic, and each group's
/// three tables.
fn commands(s: &Snapshot) -> Vec<Command> {
    let mut list = vec![Command::Topics(None)];
    let mut topics: Vec<&str> = Vec::new();
    for p in &s.partitions {
        if !topics.contains(&p.topic.as_str()) {
            topics.push(&p.topic);
        }
    }
    topics.sort_unstable();
    list.extend(topics.iter().map(|t| Command::Topics(Some(t.to_string()))));
    for g in &s.groups {
        for table in [GroupTable::Offsets, GroupTable::Members, GroupTable::State] {
            list.push(Command::Group(g.name.clone(), table));
        }
    }
    list
}

/// The panel, a window over the scene's lower left; `now` names the instant it answers for.
pub(super) fn show(
    ctx: &egui::Context,
    open: &mut bool,
    terminal: &mut Terminal,
    s: &Snapshot,
    now: &str,
) {
    if !*open {
        return;
    }
    egui::Window::new("Terminal")
        .open(open)
        // The tools' lines are wide (a classic member's id is 58 characters): the window's.
        .default_size([ctx.content_rect().width() - 24.0, 260.0])
        .anchor(egui::Align2::LEFT_BOTTOM, [12.0, -70.0])
        .resizable(true)
        .collapsible(true)
        .show(ctx, |ui| {
            ui.horizontal_wrapped(|ui| {
                egui::ComboBox::from_id_salt("terminal command")
                    .selected_text(RichText::new(terminal.command.line()).monospace())
                    .width(440.0)
                    .show_ui(ui, |ui| {
                        for c in commands(s) {
                            let line = c.line();
                            ui.selectable_value(
                                &mut terminal.command,
                                c,
                                RichText::new(line).monospace(),
                            );
                        }
                    });
                ui.weak(format!("at {now}, as Kafka 4.0's tool prints it"));
            });
            ui.separator();
            let text = format!(
                "$ {}\n{}",
                terminal.command.line(),
                terminal.command.output(s)
            );
            egui::ScrollArea::both()
                .auto_shrink([false, true])
                .show(ui, |ui| {
                    // Tabs are the topic tool's own separators: shown as a terminal shows them.
                    ui.add(
                        egui::Label::new(RichText::new(expand_tabs(&text)).monospace())
                            .wrap_mode(egui::TextWrapMode::Extend),
                    );
                });
        });
}

/// Tabs expanded to the next multiple of 8 columns, as a terminal shows them.
fn expand_tabs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut column = 0;
        for c in line.chars() {
            if c == '\t' {
                let to = (column / 8 + 1) * 8;
                out.extend(std::iter::repeat_n(' ', to - column));
                column = to;
            } else {
                out.push(c);
                column += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabs_stop_every_eight_columns() {
        assert_eq!(expand_tabs("\tTopic: a\tB"), "        Topic: a        B");
        assert_eq!(expand_tabs("ab\tc\n\td"), "ab      c\n        d");
    }

    #[test]
    fn the_panel_offers_every_topic_and_each_groups_three_tables() {
        let mut sim =
            crate::sim::Sim::new(&crate::scenario::Scenario::built_in("quickstart").unwrap());
        sim.run_until(20_000);
        let s = Snapshot::of(sim.world_mut());
        let lines: Vec<String> = commands(&s).iter().map(Command::line).collect();
        assert!(lines.contains(&"kafka-topics.sh --describe --topic orders".to_string()));
        assert!(
            lines.contains(&"kafka-topics.sh --describe --topic __consumer_offsets".to_string())
        );
        assert!(lines.contains(
            &"kafka-consumer-groups.sh --describe --group fulfilment --state".to_string()
        ));
        let out = Command::Group("fulfilment".into(), GroupTable::Offsets).output(&s);
        assert!(out.contains("CURRENT-OFFSET"), "{out}");
    }
}
