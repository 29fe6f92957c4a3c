//! The sandbox's talk panel: a speaker plays to a moment, frames what matters (a broker's menu
//! open, a record followed), and marks a beat with an optional line; "Save tour" writes the tour
//! and the run it plays. The beats are `crate::talk`'s, tested headless.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use super::following::Following;
use super::input::Pointer;
use super::playback::{Model, Playback, Shown};
use super::tour::TourPlay;
use crate::talk::{Draft, Moment};
use crate::tour::{Focus, RecordRef};

/// The talk being marked, and the panel's fields.
#[derive(Resource, Default)]
pub struct TalkPanel {
    pub draft: Draft,
    /// The scenario the beats were marked on: another one starts a new talk.
    scenario: String,
    title: String,
    line: String,
    file: String,
    /// What the last mark or save said, and whether it went wrong.
    said: Option<(String, bool)>,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<TalkPanel>().add_systems(
        EguiPrimaryContextPass,
        panel.after(super::overlay::OverlaySystems),
    );
}

/// What the speaker has on screen: the broker whose menu is open is framed, the record followed
/// is followed.
fn moment(
    model: &Model,
    playback: &Playback,
    pointer: &Pointer,
    shown: &Shown,
    following: &Following,
) -> Moment {
    let follow = following.picked.and_then(|p| {
        let partition = shown
            .snapshot
            .partitions
            .iter()
            .find(|v| v.ordinal == p.partition)?;
        Some(RecordRef::Offset(
            partition.topic.clone(),
            partition.index,
            p.offset?,
        ))
    });
    Moment {
        now_ms: model.sim.now_ms(),
        speed: playback.speed,
        frame: pointer
            .menu
            .map(|(broker, _)| vec![Focus::Broker(broker)])
            .unwrap_or_default(),
        follow,
        title: String::new(),
        line: String::new(),
    }
}

/// The run as the speaker plays it, read to mark a beat: the model, its playback, what is shown
/// of it and the record followed.
#[derive(SystemParam)]
struct Playing<'w> {
    model: Res<'w, Model>,
    playback: Res<'w, Playback>,
    shown: Res<'w, Shown>,
    following: Res<'w, Following>,
}

fn panel(
    mut contexts: EguiContexts,
    mut talk: ResMut<TalkPanel>,
    mut pointer: ResMut<Pointer>,
    playing: Playing,
    tour: Option<Res<TourPlay>>,
) {
    if tour.is_some() || !pointer.talk {
        return;
    }
    let Playing {
        model,
        playback,
        shown,
        following,
    } = playing;
    let Ok(ctx) = contexts.ctx_mut() else { return };
    let talk = &mut *talk;
    // A talk is of one run: another scenario starts a new one, where the playhead is.
    if talk.scenario != model.scenario.name
        || talk.draft.beats.is_empty() && talk.draft.start_ms > model.sim.now_ms()
    {
        talk.draft = Draft::new(model.sim.now_ms());
        talk.scenario = model.scenario.name.clone();
    }
    let mut open = true;
    egui::Window::new("Your talk")
        .open(&mut open)
        .default_width(360.0)
        .anchor(egui::Align2::RIGHT_TOP, egui::vec2(-12.0, 80.0))
        .show(ctx, |ui| {
            let from = talk.draft.next_from();
            ui.label(format!(
                "Play to a moment, click a broker to frame it or a log cell to follow a record, \
                 then mark it: the beat runs from {} to the playhead, at the speed playing.",
                crate::view::event_text::clock(from)
            ));
            if talk.draft.beats.is_empty() && ui.button("Start from here").clicked() {
                talk.draft = Draft::new(model.sim.now_ms());
            }
            egui::Grid::new("talk-fields")
                .num_columns(2)
                .show(ui, |ui| {
                    ui.label("Title");
                    ui.add(
                        egui::TextEdit::singleline(&mut talk.title)
                            .hint_text(format!("Beat {}", talk.draft.beats.len() + 1)),
                    );
                    ui.end_row();
                    ui.label("Line");
                    ui.add(
                        egui::TextEdit::multiline(&mut talk.line)
                            .desired_rows(2)
                            .hint_text("what the stage says (empty: what happened)"),
                    );
                    ui.end_row();
                });
            ui.horizontal(|ui| {
                if ui.button("Mark beat").clicked() {
                    let at = Moment {
                        title: std::mem::take(&mut talk.title),
                        line: std::mem::take(&mut talk.line),
                        ..moment(&model, &playback, &pointer, &shown, &following)
                    };
                    let events: Vec<crate::sim::Event> = model
                        .sim
                        .world()
                        .resource::<crate::sim::Runtime>()
                        .events
                        .events
                        .iter()
                        .filter(|e| e.at_ms >= from)
                        .cloned()
                        .collect();
                    talk.said = Some(match talk.draft.mark(at.clone(), &events) {
                        Ok(beat) => (format!("marked {:?}", beat.title), false),
                        Err(e) => {
                            // The fields stay as typed.
                            talk.title = at.title;
                            talk.line = at.line;
                            (e, true)
                        }
                    });
                }
                if !talk.draft.beats.is_empty() && ui.button("Take back the last").clicked() {
                    talk.draft.unmark();
                    talk.said = None;
                }
            });
            for (i, b) in talk.draft.beats.iter().enumerate() {
                let framed = match b.frame.first() {
                    Some(Focus::Broker(id)) => format!(", frames broker {id}"),
                    _ => String::new(),
                };
                let follows = if b.highlight.contains(&Focus::Record) {
                    ", follows the record"
                } else {
                    ""
                };
                ui.label(egui::RichText::new(format!(
                    "{}. {}: {} to {} at {}{framed}{follows}",
                    i + 1,
                    b.title,
                    crate::view::event_text::clock(b.from_ms),
                    crate::view::event_text::clock(b.to_ms),
                    super::input::speed_name(b.speed),
                )));
            }
            ui.separator();
            save_row(ui, talk, &model);
            if let Some((said, wrong)) = &talk.said {
                let text = egui::RichText::new(said.as_str());
                ui.label(if *wrong {
                    text.color(ui.visuals().warn_fg_color)
                } else {
                    text.weak()
                });
            }
        });
    if !open {
        pointer.talk = false;
    }
}

/// Save: the tour and the run it plays, as files beside each other (downloads on the web).
fn save_row(ui: &mut egui::Ui, talk: &mut TalkPanel, model: &Model) {
    ui.horizontal(|ui| {
        ui.add(
            egui::TextEdit::singleline(&mut talk.file)
                .hint_text("talk.ron")
                .desired_width(140.0),
        );
        if !ui
            .add_enabled(!talk.draft.beats.is_empty(), egui::Button::new("Save tour"))
            .on_hover_text("The tour, and beside it the run it plays with every action taken")
            .clicked()
        {
            return;
        }
        let file = match talk.file.trim() {
            "" => "talk.ron".to_string(),
            f if f.ends_with(".ron") => f.to_string(),
            f => format!("{f}.ron"),
        };
        talk.said = Some(match save(&talk.draft, &file, model) {
            Ok(said) => (said, false),
            Err(e) => (e, true),
        });
    });
}

#[cfg(not(target_arch = "wasm32"))]
fn save(draft: &Draft, file: &str, model: &Model) -> Result<String, String> {
    let (tour, scenario) = draft.save(std::path::Path::new(file), &model.saved())?;
    Ok(format!(
        "saved {} and {}: kafkascope tour {} plays it",
        tour.display(),
        scenario.display(),
        tour.display()
    ))
}

#[cfg(target_arch = "wasm32")]
fn save(draft: &Draft, file: &str, model: &Model) -> Result<String, String> {
    let stem = file.trim_end_matches(".ron");
    let scenario_file = format!("{stem}-scenario.ron");
    let tour = draft.tour_text(stem, &scenario_file)?;
    super::web_page::download(&scenario_file, &draft.scenario(&model.saved()).to_ron())?;
    super::web_page::download(file, &tour)?;
    Ok(format!(
        "downloaded {file} and {scenario_file}: kafkascope tour {file} plays it"
    ))
}
