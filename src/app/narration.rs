//! The tour's narration panel, in large type: which beat this is, what it shows, what to watch
//! for, the buttons that move through the tour, and the card of the record it follows. After the
//! last beat it offers the ways out: the edge cases' scenarios and the sandbox.

use bevy::prelude::*;
use bevy_egui::egui::{self, Color32, RichText};

use super::tour::{TourControl, TourPlay};
use crate::scenario::Scenario;
use crate::view::follow::Trace;
use crate::view::palette::Palette;
use crate::view::tour::{Stage, Step};

/// Text sizes of the panel (egui points, before the reader's text size and the talk preset).
const TITLE: f32 = 26.0;
const NARRATION: f32 = 22.0;
const WATCH: f32 = 17.0;

fn color(c: Srgba) -> Color32 {
    let [r, g, b, a] = c.to_u8_array();
    Color32::from_rgba_unmultiplied(r, g, b, a)
}

/// How much of the narration the panel shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// The narration beside the buttons and the record's card.
    Whole,
    /// A narrow window: the narration across it, then the buttons.
    Narrow,
    /// The talk preset: the beat's title and one line, since the speaker says the rest, with the
    /// buttons beside the title; N shows the whole text.
    Stage,
}

/// The panel's contents, in the `shape` the window and the preset give it.
pub(super) fn narration(
    ui: &mut egui::Ui,
    tour: &TourPlay,
    trace: Option<&Trace>,
    palette: &Palette,
    shape: Shape,
    steps: &mut MessageWriter<TourControl>,
) {
    let place = tour.place;
    ui.add_space(6.0);
    if place.stage == Stage::Finished {
        finished(ui, tour, palette, steps);
        return;
    }
    match shape {
        Shape::Stage => stage(ui, tour, palette, steps),
        Shape::Narrow => {
            text(ui, tour, palette);
            buttons(ui, tour, steps);
        }
        Shape::Whole => {
            ui.columns(2, |cols| {
                let (left, right) = cols.split_at_mut(1);
                left[0].with_layout(egui::Layout::top_down(egui::Align::LEFT), |ui| {
                    text(ui, tour, palette)
                });
                right[0].with_layout(egui::Layout::top_down(egui::Align::LEFT), |ui| {
                    buttons(ui, tour, steps);
                    if let Some(trace) = trace {
                        ui.add_space(8.0);
                        record_card(ui, trace, palette);
                    }
                });
            });
        }
    }
    ui.add_space(6.0);
}

/// The talk preset's narration: the title with the buttons on its right, and one line under it,
/// a held moment's note in place of the beat's line while it holds.
fn stage(
    ui: &mut egui::Ui,
    tour: &TourPlay,
    palette: &Palette,
    steps: &mut MessageWriter<TourControl>,
) {
    let t = &tour.tour;
    let beat = &t.beats[tour.place.beat];
    let width = ui.available_width();
    ui.allocate_ui_with_layout(
        egui::vec2(width, 0.0),
        egui::Layout::right_to_left(egui::Align::Center),
        |ui| {
            stage_buttons(ui, tour, steps);
            ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                ui.add(
                    egui::Label::new(RichText::new(&beat.title).size(TITLE).strong()).truncate(),
                );
                ui.add(
                    egui::Label::new(
                        RichText::new(format!("{} of {}", tour.place.beat + 1, t.beats.len()))
                            .size(WATCH)
                            .color(color(palette.muted)),
                    )
                    .truncate(),
                );
            });
        },
    );
    // With the presenter view open, the speaker reads the rest there.
    if tour.presenter {
        return;
    }
    let line = match tour.place.hold(t) {
        Some(hold) => RichText::new(format!("{}. Next to go on.", hold.why))
            .strong()
            .color(color(palette.produce)),
        None => RichText::new(beat.stage_line()),
    };
    ui.add(egui::Label::new(line.size(NARRATION)).truncate());
}

/// The talk preset's buttons, right to left: the whole text, next, previous.
fn stage_buttons(ui: &mut egui::Ui, tour: &TourPlay, steps: &mut MessageWriter<TourControl>) {
    let place = tour.place;
    let big = |text: &str| egui::Button::new(RichText::new(text).size(WATCH + 3.0).strong());
    if ui
        .add(big("Text"))
        .on_hover_text("N: the beat's whole narration")
        .clicked()
    {
        steps.write(TourControl::WholeText);
    }
    if place.stage == Stage::Ready && place.beat == 0 {
        if ui.add(big(start_label(tour))).clicked() {
            steps.write(TourControl::Step(Step::Next));
        }
        return;
    }
    if ui
        .add(big(next_label(tour)))
        .on_hover_text("Right, PageDown, Space")
        .clicked()
    {
        steps.write(TourControl::Step(Step::Next));
    }
    if ui
        .add_enabled(place.beat > 0, big("<"))
        .on_hover_text("Previous: Left, PageUp")
        .clicked()
    {
        steps.write(TourControl::Step(Step::Previous));
    }
}

/// A lab is started as a lab; any other tour is the walkthrough or told like it.
fn start_label(tour: &TourPlay) -> &'static str {
    if tour.tour.lab.is_some() {
        "Start the lab"
    } else {
        "Start the walkthrough"
    }
}

/// What the next step does from here.
fn next_label(tour: &TourPlay) -> &'static str {
    match tour.place.stage {
        Stage::Ready => "Play this beat",
        Stage::Held(_) => "Go on >",
        _ if tour.place.beat + 1 == tour.tour.beats.len() => "Where next >",
        _ => "Next >",
    }
}

/// Which beat this is, its title, its narration and what to watch for.
fn text(ui: &mut egui::Ui, tour: &TourPlay, palette: &Palette) {
    let t = &tour.tour;
    let beat = &t.beats[tour.place.beat];
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(&beat.title).size(TITLE).strong());
        ui.label(
            RichText::new(format!(
                "beat {} of {}  ·  {}",
                tour.place.beat + 1,
                t.beats.len(),
                beat.component.id()
            ))
            .size(WATCH)
            .color(color(palette.muted)),
        );
    });
    if let Some(hold) = tour.place.hold(t) {
        // Paused at a moment that matters: what happened, and how to go on.
        ui.add(
            egui::Label::new(
                RichText::new(format!("{}. Next to go on.", hold.why))
                    .size(NARRATION)
                    .strong()
                    .color(color(palette.produce)),
            )
            .wrap(),
        );
    }
    ui.add(egui::Label::new(RichText::new(&beat.narration).size(NARRATION)).wrap());
    if !beat.watch_for.is_empty() {
        ui.add_space(4.0);
        ui.label(
            RichText::new("Watch for")
                .size(WATCH)
                .strong()
                .color(color(palette.produce)),
        );
        for line in &beat.watch_for {
            ui.add(egui::Label::new(RichText::new(format!("•  {line}")).size(WATCH)).wrap());
        }
    }
}

fn buttons(ui: &mut egui::Ui, tour: &TourPlay, steps: &mut MessageWriter<TourControl>) {
    let place = tour.place;
    let big = |text: &str| egui::Button::new(RichText::new(text).size(WATCH + 3.0).strong());
    ui.horizontal_wrapped(|ui| {
        if place.stage == Stage::Ready && place.beat == 0 {
            let start = start_label(tour);
            if ui.add(big(start)).clicked() {
                steps.write(TourControl::Step(Step::Next));
            }
            if ui.add(big("Skip to the sandbox")).clicked() {
                sandbox(steps);
            }
            return;
        }
        if ui
            .add_enabled(place.beat > 0, big("< Previous"))
            .on_hover_text("Left, PageUp")
            .clicked()
        {
            steps.write(TourControl::Step(Step::Previous));
        }
        let next = next_label(tour);
        if ui
            .add(big(next))
            .on_hover_text("Right, PageDown, Space")
            .clicked()
        {
            steps.write(TourControl::Step(Step::Next));
        }
        if ui.add(big("Replay")).on_hover_text("R").clicked() {
            steps.write(TourControl::Step(Step::Replay));
        }
    });
    // The beats as a row of numbers, the current one marked: a click goes there.
    ui.horizontal_wrapped(|ui| {
        for (i, b) in tour.tour.beats.iter().enumerate() {
            let text = RichText::new(format!("{}", i + 1)).size(WATCH);
            let button = egui::Button::new(if i == place.beat {
                text.strong().underline()
            } else {
                text
            })
            .selected(i == place.beat);
            if ui.add(button).on_hover_text(&b.title).clicked() {
                steps.write(TourControl::Step(Step::Go(i)));
            }
        }
        if ui
            .add(egui::Button::new(RichText::new("Sandbox").size(WATCH)))
            .on_hover_text("Leave the tour for the sandbox")
            .clicked()
        {
            sandbox(steps);
        }
    });
}

/// Leaves the tour for the sandbox, on the cluster the walkthrough's sandbox starts with.
fn sandbox(steps: &mut MessageWriter<TourControl>) {
    if let Ok(s) = Scenario::built_in("quickstart") {
        steps.write(TourControl::Leave(Box::new(s)));
    }
}

fn finished(
    ui: &mut egui::Ui,
    tour: &TourPlay,
    palette: &Palette,
    steps: &mut MessageWriter<TourControl>,
) {
    match &tour.tour.lab {
        // A lab's result on the left, the ways out on the right; one above the other where
        // half the window is too narrow for the table (a metric's name and each run's before
        // -> after).
        Some(lab) if ui.available_width() < 2.0 * table_width(ui, tour) => {
            lab_result(ui, tour, lab, palette);
            ui.add_space(8.0);
            where_next(ui, tour, palette, steps);
        }
        Some(lab) => {
            ui.columns(2, |cols| {
                // Columns justify their text; wrapped lines read better ragged.
                let ragged = egui::Layout::top_down(egui::Align::Min);
                let (left, right) = cols.split_at_mut(1);
                left[0].with_layout(ragged, |ui| lab_result(ui, tour, lab, palette));
                right[0].with_layout(ragged, |ui| where_next(ui, tour, palette, steps));
            });
        }
        None => where_next(ui, tour, palette, steps),
    }
    ui.add_space(6.0);
}

fn where_next(
    ui: &mut egui::Ui,
    tour: &TourPlay,
    palette: &Palette,
    steps: &mut MessageWriter<TourControl>,
) {
    ui.label(RichText::new("Where next").size(TITLE).strong());
    ui.label(
        RichText::new(
            "A lab tells a failure and counts what it cost; a scenario opens in the sandbox: play \
             it, pause it, break it further.",
        )
        .size(WATCH)
        .color(color(palette.muted)),
    );
    ui.add_space(4.0);
    egui::Grid::new("exits")
        .num_columns(2)
        .spacing([16.0, 8.0])
        .show(ui, |ui| {
            for exit in &tour.tour.after {
                let button =
                    egui::Button::new(RichText::new(&exit.label).size(WATCH + 2.0).strong());
                if ui.add(button).clicked() {
                    exit_to(exit, steps);
                }
                ui.add(egui::Label::new(RichText::new(&exit.about).size(WATCH)).wrap());
                ui.end_row();
            }
        });
    ui.horizontal(|ui| {
        if ui
            .button(RichText::new("< The last beat again").size(WATCH))
            .clicked()
        {
            steps.write(TourControl::Step(Step::Previous));
        }
        if ui
            .button(RichText::new("From the start").size(WATCH))
            .clicked()
        {
            steps.write(TourControl::Step(Step::First));
        }
    });
}

/// Opens what an exit names: a lab at its first beat, or a scenario in the sandbox.
pub(super) fn exit_to(exit: &crate::tour::Exit, steps: &mut MessageWriter<TourControl>) {
    if let Some(name) = &exit.tour {
        if let Ok((t, s)) = crate::tour::Tour::built_in(name) {
            steps.write(TourControl::Open(Box::new(t), Box::new(s)));
        }
    } else if let Some(name) = &exit.scenario
        && let Ok(s) = Scenario::built_in(name)
    {
        steps.write(TourControl::Leave(Box::new(s)));
    }
}

/// A lab's ending: the "was → now" table of each run, and how to prevent what it showed.
fn lab_result(ui: &mut egui::Ui, tour: &TourPlay, lab: &crate::tour::Lab, palette: &Palette) {
    ui.label(RichText::new("What it cost").size(TITLE).strong());
    match &tour.table {
        None => {
            ui.label(RichText::new("Counting…").size(WATCH));
        }
        Some(Err(why)) => {
            ui.colored_label(color(palette.lost), why);
        }
        Some(Ok(table)) => {
            ui.label(
                RichText::new(format!(
                    "Kafka's metrics at {:.1} s, just before -> at {:.1} s, after; each run from the start.",
                    table.was_ms as f64 / 1000.0,
                    table.now_ms as f64 / 1000.0
                ))
                .size(WATCH)
                .color(color(palette.muted)),
            );
            // The table scrolls sideways inside its own column where the window is narrow: it
            // never runs under "Where next".
            egui::ScrollArea::horizontal()
                .id_salt("lab table")
                .scroll_bar_visibility(egui::scroll_area::ScrollBarVisibility::AlwaysVisible)
                .show(ui, |ui| lab_table(ui, table, palette));
        }
    }
    ui.add_space(8.0);
    ui.label(
        RichText::new("How to prevent it")
            .size(WATCH + 3.0)
            .strong()
            .color(color(palette.produce)),
    );
    for line in &lab.prevent {
        ui.add(egui::Label::new(RichText::new(format!("•  {line}")).size(WATCH)).wrap());
    }
}

/// How wide the lab's table is, in points: its widest metric name, and each run's column at
/// its label or its widest "was -> now", with the grid's spacing.
fn table_width(ui: &egui::Ui, tour: &TourPlay) -> f32 {
    let Some(Ok(table)) = &tour.table else {
        return 760.0;
    };
    let width = |text: String, font: egui::FontId| {
        ui.ctx()
            .fonts_mut(|f| f.layout_no_wrap(text, font, egui::Color32::WHITE).size().x)
    };
    let names = table
        .rows
        .iter()
        .map(|r| width(r.metric.name(), egui::FontId::monospace(WATCH)))
        .fold(0.0, f32::max);
    let columns: f32 = (0..table.runs.len())
        .map(|i| {
            let values = table.rows.iter().filter_map(|r| {
                let (was, now) = r.values.get(i)?;
                Some(
                    width(r.metric.format(*was), egui::FontId::proportional(WATCH))
                        + width(
                            r.metric.format(*now),
                            egui::FontId::proportional(WATCH + 2.0),
                        )
                        + 40.0,
                )
            });
            values
                .chain([width(
                    table.runs[i].clone(),
                    egui::FontId::proportional(WATCH),
                )])
                .fold(0.0, f32::max)
        })
        .sum();
    names + columns + 24.0 * table.runs.len() as f32 + 16.0
}

/// The lab's metrics, a row each, before -> after for each run.
fn lab_table(ui: &mut egui::Ui, table: &crate::view::lab::Table, palette: &Palette) {
    egui::Grid::new("lab")
        .striped(true)
        .spacing([24.0, 6.0])
        .show(ui, |ui| {
            ui.label("");
            for run in &table.runs {
                ui.label(RichText::new(run).size(WATCH).strong());
            }
            ui.end_row();
            for row in &table.rows {
                ui.label(RichText::new(row.metric.name()).size(WATCH).monospace());
                for (was, now) in &row.values {
                    ui.horizontal(|ui| {
                        ui.label(RichText::new(row.metric.format(*was)).size(WATCH));
                        ui.label(RichText::new("->").size(WATCH).color(color(palette.muted)));
                        let now_text = RichText::new(row.metric.format(*now))
                            .size(WATCH + 2.0)
                            .strong();
                        // A cost that grew is what the lab is about.
                        ui.label(if row.metric.is_cost() && now > was {
                            now_text.color(color(palette.out_of_sync))
                        } else {
                            now_text
                        });
                    });
                }
                ui.end_row();
            }
        });
}

/// What is known of a followed record, a line each.
pub(super) fn card_lines(t: &Trace) -> Vec<(String, String)> {
    let yes = |b: bool| if b { "yes" } else { "not yet" };
    let mut lines = vec![(
        "key".to_string(),
        t.key.clone().unwrap_or_else(|| "(none)".into()),
    )];
    lines.push((
        "partition".into(),
        match &t.partitioner {
            Some(m) => format!(
                "{}-{}: murmur2 0x{:08x}, & 0x7fffffff = {}, % {} = {}",
                t.topic, t.partition, m.murmur2 as u32, m.positive, m.partitions, m.partition
            ),
            None => format!("{}-{} (no key: the sticky partition)", t.topic, t.partition),
        },
    ));
    lines.push((
        "offset".into(),
        t.offset
            .map_or_else(|| "not appended yet".into(), |o| o.to_string()),
    ));
    lines.push(("producer".into(), t.producer.clone()));
    lines.push(("acknowledged".into(), yes(t.acked).into()));
    lines.push((
        "committed".into(),
        format!("{} (below the leader's high watermark)", yes(t.committed)),
    ));
    let on: Vec<String> = t.replicas.iter().map(|b| format!("broker {b}")).collect();
    lines.push((
        "in the logs of".into(),
        if t.lost {
            "no broker: acknowledged, and lost".into()
        } else if t.expired {
            "no broker: retention deleted it, as configured".into()
        } else if t.compacted {
            "no broker: compaction removed it, as configured (a newer record has its key)".into()
        } else if on.is_empty() {
            "no broker yet".into()
        } else {
            on.join(", ")
        },
    ));
    for g in &t.groups {
        lines.push((
            format!("group {}", g.group),
            format!(
                "consumed: {}, committed: {}",
                yes(g.consumed),
                yes(g.committed)
            ),
        ));
    }
    lines
}

/// The card of a followed record.
pub(super) fn record_card(ui: &mut egui::Ui, t: &Trace, palette: &Palette) {
    egui::Frame::group(ui.style())
        .stroke(egui::Stroke::new(2.0, color(palette.produce)))
        .show(ui, |ui| {
            ui.label(
                RichText::new(format!(
                    "Following the record {}",
                    t.key.as_deref().unwrap_or("without a key")
                ))
                .size(WATCH)
                .strong(),
            );
            egui::Grid::new(("record", t.id))
                .num_columns(2)
                .show(ui, |ui| {
                    for (k, v) in card_lines(t) {
                        ui.label(RichText::new(k).color(color(palette.muted)));
                        ui.add(egui::Label::new(v).wrap());
                        ui.end_row();
                    }
                });
        });
}
