//! The egui overlay: the transport and timeline, the scenario picker, the side panel (Kafka's
//! metrics, partitions and ISR, consumer lag, event log, legend), the explanations under the
//! pointer, a broker's menu and the shortcuts. It reads the model and sends [`Control`]s.

use bevy::camera::Viewport;
use bevy::camera::visibility::RenderLayers;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::egui::{self, Color32, RichText};
use bevy_egui::{EguiContexts, EguiGlobalSettings, EguiPrimaryContextPass, PrimaryEguiContext};
use egui_plot::{Legend, Line, LineStyle, Plot};

use super::following::Following;
use super::input::{Pointer, Requests};
use super::playback::{Control, MAX_SPEED, MIN_SPEED, Model, Playback, Shown};
use super::tour::{TourControl, TourPlay};
use crate::scenario::{Action, BUILT_IN, ClusterConfig};
use crate::sim::chunked::Chunked;
use crate::sim::lag::{LagMonitor, LagSample, PartitionLag};
use crate::tour::LabMetric;
use crate::view::event_text::{Severity, clock, describe};
use crate::view::explain::{Target, explain};
use crate::view::palette::{Palette, ReplicaRole, Theme};
use crate::view::snapshot::Snapshot;
use crate::view::tour::Step;

/// The overlay's own state.
#[derive(Resource, Default)]
struct UiState {
    /// The scenario file field (native only: the web build has no files).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    path: String,
    /// Why the last scenario could not be loaded or saved.
    load_error: Option<String>,
    /// Where the last save went.
    saved: Option<String>,
    /// The narration's height when last shown, unscrolled.
    narration_height: f32,
    /// "Discard what came after" was clicked: it asks once more.
    confirm_discard: bool,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<UiState>()
        .add_systems(Startup, spawn_ui_camera)
        .add_systems(EguiPrimaryContextPass, overlay.in_set(OverlaySystems));
}

/// The scene's cameras on stage (not the presenter's, nor its thumbnail's): the panels leave
/// them their viewports.
type SceneCameras<'w, 's> = Query<
    'w,
    's,
    (&'static mut Camera, Has<super::camera::TwinCamera>),
    Or<(
        With<super::camera::SceneCamera>,
        With<super::camera::TwinCamera>,
    )>,
>;

/// The overlay's system, for ordering against it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OverlaySystems;

/// egui draws with its own camera, above the scene, so that the scene's camera can be fitted to
/// the space the panels leave.
pub(super) fn spawn_ui_camera(mut commands: Commands, mut settings: ResMut<EguiGlobalSettings>) {
    settings.auto_create_primary_context = false;
    commands.spawn((
        PrimaryEguiContext,
        Camera2d,
        RenderLayers::none(),
        Camera {
            order: 2,
            clear_color: ClearColorConfig::None,
            ..default()
        },
    ));
}

fn color(c: Srgba) -> Color32 {
    let [r, g, b, a] = c.to_u8_array();
    Color32::from_rgba_unmultiplied(r, g, b, a)
}

fn visuals(theme: Theme, palette: &Palette) -> egui::Visuals {
    let mut v = match theme {
        Theme::Dark => egui::Visuals::dark(),
        Theme::Light => egui::Visuals::light(),
    };
    v.panel_fill = color(palette.panel);
    v.window_fill = color(palette.panel);
    v.override_text_color = Some(color(palette.text));
    // On the light panel, egui's light grey controls all but vanish: outline them.
    if theme == Theme::Light {
        v.widgets.inactive.bg_stroke = egui::Stroke::new(1.0, color(palette.muted));
    }
    v
}

/// Where the overlay paints: egui, the window, and the scene's cameras it leaves room for.
#[derive(SystemParam)]
struct Screen<'w, 's> {
    contexts: EguiContexts<'w, 's>,
    window: Single<'w, 's, &'static Window, With<PrimaryWindow>>,
    camera: SceneCameras<'w, 's>,
}

/// The run on stage: the model, how it plays and what is shown of it, and the second run beside
/// it, if any.
#[derive(SystemParam)]
struct Run<'w> {
    model: Res<'w, Model>,
    playback: ResMut<'w, Playback>,
    shown: ResMut<'w, Shown>,
    twin: Option<Res<'w, super::playback::Twin>>,
    twin_shown: Option<Res<'w, super::playback::TwinShown>>,
}

/// What the overlay's panels keep between frames, and the reader's choices in them.
#[derive(SystemParam)]
struct Panels<'w> {
    pointer: ResMut<'w, Pointer>,
    state: ResMut<'w, UiState>,
    following: ResMut<'w, Following>,
    form: ResMut<'w, super::operations::OperationsForm>,
    terminal: ResMut<'w, super::terminal::Terminal>,
    why: Res<'w, super::why_notes::WhyNotes>,
}

fn overlay(
    screen: Screen,
    run: Run,
    mut requests: Requests,
    mut panels: Panels,
    tour: Option<Res<TourPlay>>,
    options: Res<super::Options>,
    presenter: Option<Res<super::presenter::Presenter>>,
) -> Result {
    // The speaker's notes take the page's place (the web): they paint the page.
    if presenter.is_some_and(|p| p.in_page()) {
        return Ok(());
    }
    let Screen {
        mut contexts,
        window,
        mut camera,
    } = screen;
    let Run {
        model,
        mut playback,
        mut shown,
        twin,
        twin_shown,
    } = run;
    let ctx = contexts.ctx_mut()?;
    let palette = shown.palette();
    ctx.set_visuals(visuals(shown.theme, &palette));
    if options.shot.is_some() {
        // A shot shows no tooltip of wherever the display's pointer happens to be.
        ctx.global_style_mut(|s| s.interaction.tooltip_delay = f32::MAX);
    }
    ctx.set_zoom_factor(shown.text_factor());
    let events = &model
        .sim
        .world()
        .resource::<crate::sim::Runtime>()
        .events
        .events;
    let mut root = egui::Ui::new(
        ctx.clone(),
        "overlay".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(ctx.viewport_rect()),
    );
    let tour = tour.as_deref();
    let talk = shown.talk;

    // A small window (an embed in a post) shows the scene alone until D asks for the details;
    // it follows the window's width (an embed's page settles its size after the first frames).
    // A tour leaves the scene its room unless asked; the talk preset shows only the narration
    // (the scene has its own lag monitor).
    panels.pointer.details_shown = !talk
        && panels
            .pointer
            .details
            .unwrap_or(tour.is_none() && ctx.viewport_rect().width() >= DETAILS_MIN_WINDOW_WIDTH);
    let top = if talk {
        0.0
    } else {
        egui::Panel::top("transport")
            .show(&mut root, |ui| {
                transport(
                    ui,
                    &mut shown,
                    &mut playback,
                    &model,
                    &mut requests,
                    &mut panels,
                    tour,
                )
            })
            .response
            .rect
            .height()
    };
    let bottom = if talk {
        0.0
    } else {
        egui::Panel::bottom("timeline")
            .exact_size(54.0)
            .show(&mut root, |ui| {
                timeline(ui, &shown, &model, events, &palette, &mut requests, tour)
            })
            .response
            .rect
            .height()
    };
    // The narration takes at most this share of the window's height, scrolling past it, so a
    // small window (an embed) keeps a scene.
    // A lab's end is its table: the scene behind it has told its story, and gives up more.
    let share = match &tour {
        Some(t) if t.tour.lab.is_some() && t.place.stage == crate::view::tour::Stage::Finished => {
            LAB_END_SHARE
        }
        _ => NARRATION_SHARE,
    };
    let narration_most = ctx.viewport_rect().height() * share;
    let narrow = ctx.viewport_rect().width() < NARROW_WINDOW_WIDTH;
    // A short window (an embed in a post) has no height to spare under the scene: the
    // narration goes beside it, on the right with the other panels.
    let beside = !talk && ctx.viewport_rect().height() < SHORT_WINDOW_HEIGHT;
    let mut narration_right = 0.0;
    let narration = match tour {
        Some(tour) if beside => {
            let width = (ctx.viewport_rect().width() * 0.4).clamp(260.0, 420.0);
            narration_right = egui::Panel::right("narration")
                .resizable(false)
                .exact_size(width)
                .show(&mut root, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| {
                        super::narration::narration(
                            ui,
                            tour,
                            panels.following.trace.as_ref(),
                            &palette,
                            super::narration::Shape::Narrow,
                            &mut requests.steps,
                        )
                    })
                })
                .response
                .rect
                .width();
            0.0
        }
        Some(tour) => {
            use super::narration::Shape;
            let shape = if tour.presenter || (talk && !tour.whole_text) {
                Shape::Stage
            } else if talk || narrow {
                Shape::Narrow
            } else {
                Shape::Whole
            };
            let mut show = |ui: &mut egui::Ui| {
                super::narration::narration(
                    ui,
                    tour,
                    panels.following.trace.as_ref(),
                    &palette,
                    shape,
                    &mut requests.steps,
                )
            };
            // Its own height while that fits (last frame's), else a scrolled part of it.
            let scroll = panels.state.narration_height > narration_most;
            egui::Panel::bottom("narration")
                .resizable(false)
                .show(&mut root, |ui| {
                    let top = ui.min_rect().top();
                    panels.state.narration_height = if scroll {
                        egui::ScrollArea::vertical()
                            .max_height(narration_most)
                            .min_scrolled_height(narration_most)
                            .show(ui, |ui| show(ui))
                            .content_size
                            .y
                    } else {
                        show(ui);
                        ui.min_rect().bottom() - top
                    };
                })
                .response
                .rect
                .height()
        }
        None => 0.0,
    };
    // The sandbox's operations: a tour plays its scenario as written.
    let in_sandbox = tour.is_none();
    let mut operation = None;
    let right = if panels.pointer.details_shown {
        egui::Panel::right("details")
            .resizable(true)
            .default_size(380.0)
            .min_size(280.0)
            .max_size(520.0)
            .show(&mut root, |ui| {
                // The lag plot reads its history where the model keeps it, uncopied.
                let lag = model.sim.world().resource::<LagMonitor>();
                egui::ScrollArea::vertical().show(ui, |ui| {
                    if in_sandbox {
                        egui::CollapsingHeader::new(RichText::new("Operations").strong())
                            .default_open(false)
                            .show(ui, |ui| {
                                operation = super::operations::operations(
                                    ui,
                                    &shown.snapshot,
                                    &model.scenario,
                                    model.sim.actions(),
                                    twin.is_some(),
                                    &mut panels.form,
                                );
                            });
                    }
                    details(ui, &shown, events, lag, &palette)
                });
            })
            .response
            .rect
            .width()
    } else {
        0.0
    } + narration_right;
    if let Some(change) = operation {
        match super::operations::control_for(&change, &model.scenario, model.sim.actions()) {
            Ok(control) => {
                requests.controls.write(control);
            }
            Err(why) => panels.form.refuse(change, why),
        }
    }

    // The scene's camera draws into what the panels leave.
    let k = window.scale_factor() * shown.text_factor();
    let (w, h) = (window.physical_width(), window.physical_height());
    let pos = UVec2::new(0, (top * k) as u32);
    let size = UVec2::new(
        w.saturating_sub((right * k) as u32).max(1),
        h.saturating_sub(((top + bottom + narration) * k) as u32)
            .max(1),
    );
    // Side by side, each run has half of it, a thin gap between them, under a band for the
    // runs' headings.
    let twin = twin.as_deref().zip(twin_shown.as_deref());
    let halves = twin.is_some();
    let gap = if halves { (4.0 * k) as u32 } else { 0 };
    // Runs with consumer groups get a lag plot in their heading.
    let plots = twin.is_some_and(|(t, _)| {
        !shown.snapshot.groups.is_empty() || !t.model.scenario.consumer_groups.is_empty()
    });
    let heading = RUN_HEADING + if plots { RUN_PLOT + 6.0 } else { 0.0 };
    let band = if halves { (heading * k) as u32 } else { 0 };
    let heading_at = pos;
    let pos = pos + UVec2::new(0, band);
    let size = UVec2::new(size.x, size.y.saturating_sub(band).max(1));
    let each = if halves {
        UVec2::new((size.x.saturating_sub(gap) / 2).max(1), size.y)
    } else {
        size
    };
    for (mut cam, is_twin) in &mut camera {
        let position = if is_twin {
            pos + UVec2::new(each.x + gap, 0)
        } else {
            pos
        };
        cam.viewport = Some(Viewport {
            physical_position: position,
            physical_size: each,
            ..default()
        });
    }
    // The scene is laid out for the room it has.
    shown.fit(each.as_vec2() / window.scale_factor());
    if let Some((twin, twin_shown)) = twin {
        let at = |x: u32| egui::pos2(x as f32 / k, heading_at.y as f32 / k);
        let width = each.x as f32 / k;
        let lag = |m: &Model| m.sim.world().get_resource::<LagMonitor>().map(group_lag);
        let (left_lag, right_lag) = (lag(&model).flatten(), lag(&twin.model).flatten());
        // One scale for both plots, so that the runs' lag compares at a glance.
        let top = [&left_lag, &right_lag]
            .iter()
            .filter_map(|l| l.as_ref())
            .flat_map(|l| l.committed.iter().chain(&l.consumers).map(|p| p[1]))
            .fold(1.0, f64::max);
        let now_s = shown.snapshot.now_ms as f64 / 1000.0;
        let headings = [
            ("left", at(pos.x), &twin.labels[0], &*shown, left_lag),
            (
                "right",
                at(pos.x + each.x + gap),
                &twin.labels[1],
                &twin_shown.0,
                right_lag,
            ),
        ];
        let watched = tour
            .and_then(|t| t.tour.lab.as_ref())
            .map_or(&[][..], |lab| &lab.metrics[..]);
        for (id, at, label, run, lag) in headings {
            run_label(
                ctx,
                RunHeading {
                    id,
                    at,
                    width,
                    label,
                    watched,
                    shown: run,
                    lag: lag.filter(|_| plots).map(|l| (l, top, now_s)),
                },
                &palette,
            );
        }
    }

    // An open menu is what the reader is looking at: no explanation over it.
    if options.shot.is_none() && panels.pointer.menu.is_none() {
        hover_explanation(
            ctx,
            &shown.snapshot,
            &model.scenario.cluster,
            panels.pointer.hover,
            &panels.why.notes,
        );
    }
    // A record picked in the sandbox gets its card; a tour's is in the narration.
    if tour.is_none()
        && let Some(trace) = panels.following.trace.clone()
    {
        let mut open = true;
        egui::Window::new("Record")
            .open(&mut open)
            .default_pos(egui::pos2(24.0, 140.0))
            .resizable(false)
            .show(ctx, |ui| {
                super::narration::record_card(ui, &trace, &palette)
            });
        if !open {
            *panels.following = Following::default();
        }
    }
    super::why_notes::paint(ctx, &panels.why, color(palette.out_of_sync));
    super::terminal::show(
        ctx,
        &mut panels.pointer.terminal,
        &mut panels.terminal,
        &shown.snapshot,
        &clock(shown.snapshot.now_ms),
    );
    broker_menu(
        ctx,
        &shown.snapshot,
        &mut panels.pointer,
        &mut requests.controls,
    );
    help(ctx, &mut panels.pointer, tour.is_some());
    Ok(())
}

/// A run's first group's lag over time, summed over its partitions: the committed lag
/// (`kafka-consumer-groups`' LAG) and the consumers' own, which, where no member consumes a
/// partition, climbs from where its last owner stopped.
struct GroupLagPlot {
    committed: Vec<[f64; 2]>,
    consumers: Vec<[f64; 2]>,
}

fn group_lag(monitor: &LagMonitor) -> Option<GroupLagPlot> {
    use std::collections::{BTreeMap, BTreeSet};
    let group = monitor.groups.first()?;
    let mut committed: BTreeMap<u64, f64> = BTreeMap::new();
    let mut consumers: BTreeMap<u64, f64> = BTreeMap::new();
    for p in &group.partitions {
        for s in p.samples.iter() {
            if let Some(lag) = s.lag {
                *committed.entry(s.at_ms).or_default() += lag as f64;
            }
        }
        // A partition's stretches share their joints: each instant is added once.
        let mut seen = BTreeSet::new();
        for (points, _) in consumer_lag(p) {
            for [t, v] in points {
                let at = (t * 1000.0).round() as u64;
                if seen.insert(at) {
                    *consumers.entry(at).or_default() += v;
                }
            }
        }
    }
    let line = |m: BTreeMap<u64, f64>| {
        m.into_iter()
            .map(|(t, v)| [t as f64 / 1000.0, v])
            .collect::<Vec<_>>()
    };
    Some(GroupLagPlot {
        committed: line(committed),
        consumers: line(consumers),
    })
}

/// What a side-by-side run's heading shows, and where.
struct RunHeading<'a> {
    id: &'a str,
    at: egui::Pos2,
    width: f32,
    label: &'a str,
    /// The lab's metrics: the numbers that show them come first, before any is cut.
    watched: &'a [LabMetric],
    shown: &'a Shown,
    /// Its group's lag, the top of the scale both plots share, and the instant shown (s).
    lag: Option<(GroupLagPlot, f64, f64)>,
}

/// A side-by-side run's heading, over its half of the scene: its label, the numbers that tell
/// the runs apart and, with a consumer group, its lag over time.
fn run_label(ctx: &egui::Context, h: RunHeading, palette: &Palette) {
    let RunHeading {
        id,
        at,
        width,
        label,
        watched,
        shown,
        lag,
    } = h;
    let s = &shown.snapshot;
    let (lost, unavailable) = shown.missing();
    // Each number with the lab metric it shows.
    let mut numbers = vec![
        (LabMetric::AckedLost, format!("lost {lost}")),
        (
            LabMetric::AckedUnavailable,
            format!("unavailable {unavailable}"),
        ),
        (
            LabMetric::OfflinePartitionsCount,
            format!("offline {}", s.offline()),
        ),
        (
            LabMetric::UnderReplicatedPartitions,
            format!("under-replicated {}", s.under_replicated()),
        ),
        (
            LabMetric::UnderMinIsrPartitionCount,
            format!("under min ISR {}", s.under_min_isr()),
        ),
    ];
    let dead = s.dead_leader_ms();
    if dead > 0 {
        numbers.push((
            LabMetric::DeadLeaderTime,
            format!("dead leader {:.1} s", dead as f64 / 1000.0),
        ));
    }
    for p in &s.producers {
        numbers.push((
            LabMetric::Acked(p.name.clone()),
            format!("{} acked {}", p.name, p.acked),
        ));
    }
    if s.metrics.records_read_from_followers > 0 {
        numbers.push((
            LabMetric::ReadFromFollowers,
            format!(
                "read from followers {}",
                s.metrics.records_read_from_followers
            ),
        ));
    }
    for g in &s.groups {
        numbers.push((
            LabMetric::Rebalances(g.name.clone()),
            format!("{} rebalances {}", g.name, g.rebalances),
        ));
        let paused = g.offsets.iter().filter(|o| o.paused).count();
        if paused > 0 {
            numbers.push((
                LabMetric::Pauses(g.name.clone()),
                match paused {
                    1 => "1 partition paused".to_string(),
                    n => format!("{n} partitions paused"),
                },
            ));
        }
    }
    // What the lab watches first, in its order; the line is cut at its end where it is long.
    numbers.sort_by_key(|(m, _)| watched.iter().position(|w| w == m).unwrap_or(usize::MAX));
    let numbers: Vec<String> = numbers.into_iter().map(|(_, n)| n).collect();
    egui::Area::new(egui::Id::new(("run label", id)))
        .fixed_pos(at + egui::vec2(6.0, 4.0))
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::new()
                .fill(color(palette.panel))
                .stroke(egui::Stroke::new(1.5, color(palette.produce)))
                .inner_margin(egui::Margin::symmetric(10, 4))
                .corner_radius(4.0)
                .show(ui, |ui| {
                    ui.set_width(width - 32.0);
                    ui.add(egui::Label::new(RichText::new(label).size(20.0).strong()).truncate());
                    ui.add(
                        egui::Label::new(RichText::new(numbers.join(" · ")).size(15.0)).truncate(),
                    );
                    if let Some((plot, top, now)) = lag {
                        let group = s.groups.first().map_or("", |g| g.name.as_str());
                        Plot::new(("run lag", id))
                            .height(RUN_PLOT)
                            .legend(Legend::default().position(egui_plot::Corner::LeftTop))
                            // Axes labelled without a row of their own: seconds on the
                            // ticks, records up the side.
                            .x_axis_formatter(|mark, _| format!("{} s", mark.value))
                            .y_axis_label("records")
                            .show_x(false)
                            .allow_scroll(false)
                            .allow_drag(false)
                            .allow_zoom(false)
                            .include_x(0.0)
                            .include_x(now)
                            .include_y(0.0)
                            .include_y(top)
                            .show(ui, |p| {
                                p.line(
                                    Line::new(format!("{group}: committed lag"), plot.committed)
                                        .color(color(palette.produce)),
                                );
                                p.line(
                                    Line::new(format!("{group}: consumers' lag"), plot.consumers)
                                        .color(color(palette.fetch))
                                        .style(LineStyle::dashed_loose()),
                                );
                            });
                    }
                });
        });
}

/// The labs, a click away from the sandbox.
fn labs_menu(ui: &mut egui::Ui, steps: &mut MessageWriter<TourControl>) {
    ui.menu_button("Labs", |ui| {
        for built_in in crate::tour::BUILT_IN_TOURS {
            let Ok((t, s)) = crate::tour::Tour::built_in(built_in.name) else {
                continue;
            };
            if t.lab.is_none() {
                continue;
            }
            let title = t.title.trim_start_matches("Lab: ").to_string();
            if ui.button(title).clicked() {
                steps.write(TourControl::Open(Box::new(t), Box::new(s)));
                ui.close();
            }
        }
    })
    .response
    .on_hover_text("The classic failures, told step by step and counted");
}

fn transport(
    ui: &mut egui::Ui,
    shown: &mut Shown,
    playback: &mut Playback,
    model: &Model,
    requests: &mut Requests,
    panels: &mut Panels,
    tour: Option<&TourPlay>,
) {
    let Requests { controls, steps } = requests;
    let (pointer, state) = (&mut *panels.pointer, &mut *panels.state);
    ui.horizontal_wrapped(|ui| {
        ui.strong("Kafkascope");
        if let Some(tour) = tour {
            ui.label(&tour.tour.title);
            if ui
                .button("Leave the tour")
                .on_hover_text("The sandbox: the same cluster under steady load")
                .clicked()
                && let Ok(s) = crate::scenario::Scenario::built_in("quickstart")
            {
                steps.write(TourControl::Leave(Box::new(s)));
            }
        } else {
            if ui
                .button("Walkthrough")
                .on_hover_text("The guided tour: one record through the cluster, in eight beats")
                .clicked()
                && let Ok((t, s)) = crate::tour::Tour::built_in("walkthrough")
            {
                steps.write(TourControl::Open(Box::new(t), Box::new(s)));
            }
            labs_menu(ui, steps);
            scenario_picker(ui, model, controls, state);
        }
        ui.separator();
        if tour.is_none()
            && ui
                .button("|<")
                .on_hover_text("Back to the start (Home)")
                .clicked()
        {
            controls.write(Control::Seek(0));
        }
        if tour.is_none()
            && ui
                .button("<")
                .on_hover_text("Back one millisecond (Left)")
                .clicked()
        {
            controls.write(Control::StepBack);
        }
        let label = if playback.paused { "Play" } else { "Pause" };
        let key = if tour.is_some() { "K" } else { "Space" };
        if ui.button(label).on_hover_text(key).clicked() {
            playback.paused = !playback.paused;
        }
        if tour.is_none()
            && ui
                .button(">")
                .on_hover_text("To the next instant anything happens (Right)")
                .clicked()
        {
            controls.write(Control::StepForward);
        }
        // A short track: the presets beside it are where most changes of speed are made.
        ui.spacing_mut().slider_width = 60.0;
        ui.add(
            egui::Slider::new(&mut playback.speed, MIN_SPEED..=MAX_SPEED)
                .logarithmic(true)
                .clamping(egui::SliderClamping::Edits)
                .text("x")
                .custom_formatter(|v, _| super::input::speed_name(v)),
        )
        .on_hover_text("Sim time per real time (+ and -)");
        for preset in super::input::SPEED_PRESETS {
            let name = if preset < 1.0 {
                super::input::speed_name(preset)
            } else {
                format!("{preset:.0}x")
            };
            let on = (playback.speed - preset).abs() < preset * 1e-6;
            if ui
                .selectable_label(on, name)
                .on_hover_text("Speed presets ([ and ])")
                .clicked()
            {
                playback.speed = preset;
            }
        }
        ui.separator();
        // The clock is one line: where the bar wraps, it goes to the next whole.
        ui.add(
            egui::Label::new(
                RichText::new(format!(
                    "t = {} / {}",
                    clock(shown.snapshot.now_ms),
                    clock(if tour.is_some() {
                        model.scenario.duration_ms
                    } else {
                        model.end_ms()
                    })
                ))
                .monospace(),
            )
            .extend(),
        );
        ui.separator();
        let mut light = shown.theme == Theme::Light;
        if ui
            .checkbox(&mut light, "light")
            .on_hover_text("T")
            .changed()
        {
            shown.theme = if light { Theme::Light } else { Theme::Dark };
        }
        ui.add(
            egui::Slider::new(&mut shown.text_scale, 0.75..=2.0)
                .step_by(0.05)
                .text("text"),
        );
        let mut details = pointer.details_shown;
        if ui
            .checkbox(&mut details, "details")
            .on_hover_text("The metrics, ISR, lag and event panel (D)")
            .changed()
        {
            pointer.details = Some(details);
        }
        if tour.is_none() {
            ui.checkbox(&mut pointer.talk, "talk").on_hover_text(
                "Make a talk by playing: mark beats as you go, save them as a tour",
            );
        }
        ui.checkbox(&mut pointer.terminal, "terminal")
            .on_hover_text("Kafka's tools at the playhead: kafka-topics.sh and kafka-consumer-groups.sh --describe (`)");
        if ui.button("?").on_hover_text("Shortcuts (?)").clicked() {
            pointer.show_help = !pointer.show_help;
        }
    });
    if tour.is_none() {
        // The cluster as it is at the playhead; the scenario's own line says how it began.
        ui.label(RichText::new(format!("Now: {}", shown.snapshot.summary())).weak())
            .on_hover_text(format!(
                "{}: {}",
                model.scenario.name, model.scenario.description
            ));
        later_actions(ui, model, controls, state);
    }
    if let Some(why) = &playback.halted {
        ui.colored_label(ui.visuals().warn_fg_color, why);
    }
    if let Some(e) = &state.load_error {
        ui.colored_label(Color32::from_rgb(0xd5, 0x5e, 0x00), e);
    } else if let Some(saved) = &state.saved {
        ui.label(RichText::new(saved).weak());
    }
}

/// Actions given for later instants than the playhead (it was moved back): they replay when the
/// run gets there. Dropping them is an explicit choice, asked once more.
fn later_actions(
    ui: &mut egui::Ui,
    model: &Model,
    controls: &mut MessageWriter<Control>,
    state: &mut UiState,
) {
    let later = model.sim.actions_after_now();
    if later == 0 {
        state.confirm_discard = false;
        return;
    }
    let these = if later == 1 {
        "1 action".to_string()
    } else {
        format!("{later} actions")
    };
    ui.horizontal_wrapped(|ui| {
        if state.confirm_discard {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                format!("Discard {these} after the playhead? The run goes on without them."),
            );
            if ui.button("Discard them").clicked() {
                controls.write(Control::DiscardLater);
                state.confirm_discard = false;
            }
            if ui.button("Keep them").clicked() {
                state.confirm_discard = false;
            }
        } else {
            ui.label(format!(
                "{these} given later than the playhead will replay when the run gets there (marked on the timeline)."
            ));
            if ui
                .button("Discard what came after")
                .on_hover_text("Drop them, once confirmed")
                .clicked()
            {
                state.confirm_discard = true;
            }
        }
    });
}

/// The built-in scenarios, and a file field on native (the web build has no files).
fn scenario_picker(
    ui: &mut egui::Ui,
    model: &Model,
    controls: &mut MessageWriter<Control>,
    state: &mut UiState,
) {
    let current = model.scenario.name.clone();
    let current_built_in = crate::scenario::BuiltIn::named(&current).map(|b| b.name);
    egui::ComboBox::from_id_salt("scenario")
        .selected_text(&current)
        .width(200.0)
        .show_ui(ui, |ui| {
            for b in BUILT_IN {
                if ui
                    .selectable_label(current_built_in == Some(b.name), b.name)
                    .clicked()
                    && let Ok(s) = crate::scenario::Scenario::built_in(b.name)
                {
                    state.load_error = None;
                    controls.write(Control::Load(Box::new(s)));
                }
            }
        });
    #[cfg(not(target_arch = "wasm32"))]
    {
        ui.add(
            egui::TextEdit::singleline(&mut state.path)
                .hint_text("scenario.ron")
                .desired_width(120.0),
        );
        if ui.button("Open").clicked() {
            match crate::scenario::Scenario::load(state.path.trim()) {
                Ok(s) => {
                    state.load_error = None;
                    controls.write(Control::Load(Box::new(s)));
                }
                Err(e) => state.load_error = Some(e.to_string()),
            }
        }
        if ui
            .button("Save")
            .on_hover_text("The scenario and every change made to it, as a scenario file")
            .clicked()
        {
            let text = model.saved().to_ron();
            let wanted = match state.path.trim() {
                "" => format!("{}-sandbox.ron", model.scenario.name),
                path => path.to_string(),
            };
            match crate::save::save_new(std::path::Path::new(&wanted), &text) {
                Ok(path) => {
                    state.load_error = None;
                    state.saved = Some(format!("saved to {}", path.display()));
                }
                Err(e) => {
                    state.saved = None;
                    state.load_error = Some(format!("{wanted}: not saved: {e}"));
                }
            }
        }
    }
    #[cfg(target_arch = "wasm32")]
    {
        if ui
            .button("Open")
            .on_hover_text("Pick a scenario file (.ron) to run")
            .clicked()
        {
            super::web_page::pick_file();
        }
        // A picked file is read between frames; a bad one is named with its line and column.
        if let Some((name, text)) = super::web_page::take_picked() {
            let parsed = text
                .map_err(|why| format!("{name}: {why}"))
                .and_then(|text| {
                    crate::scenario::Scenario::parse(&text, &name).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(s) => {
                    state.load_error = None;
                    state.saved = None;
                    controls.write(Control::Load(Box::new(s)));
                }
                Err(e) => state.load_error = Some(e),
            }
        }
    }
    #[cfg(target_arch = "wasm32")]
    if ui
        .button("Save")
        .on_hover_text("Download the scenario and every change made to it, as a scenario file")
        .clicked()
    {
        let text = model.saved().to_ron();
        let name = format!("{}-sandbox.ron", model.scenario.name);
        match super::web_page::download(&name, &text) {
            Ok(()) => {
                state.load_error = None;
                state.saved = Some(format!("downloaded as {name}"));
            }
            Err(e) => {
                state.saved = None;
                state.load_error = Some(format!("not saved: {e}"));
            }
        }
    }
}

/// How near the pointer a timeline mark says what it is, in points.
const MARK_HOVER_PX: f32 = 5.0;

/// The scenario's time as a bar: scripted actions and what happened so far are marked; a click
/// or a drag seeks there.
fn timeline(
    ui: &mut egui::Ui,
    shown: &Shown,
    model: &Model,
    events: &Chunked<crate::sim::Event>,
    palette: &Palette,
    requests: &mut Requests,
    tour: Option<&TourPlay>,
) {
    let Requests { controls, steps } = requests;
    // A sandbox run going on past its scenario's end grows the bar.
    let scenario_end = model.scenario.duration_ms.max(1);
    let duration = if tour.is_some() {
        scenario_end
    } else {
        model.end_ms().max(1)
    };
    let (rect, response) = ui.allocate_exact_size(
        egui::vec2(ui.available_width(), 40.0),
        egui::Sense::click_and_drag(),
    );
    let x_of = |ms: u64| rect.left() + rect.width() * (ms as f32 / duration as f32);
    let painter = ui.painter_at(rect);
    let bar = egui::Rect::from_min_max(
        egui::pos2(rect.left(), rect.center().y - 4.0),
        egui::pos2(rect.right(), rect.center().y + 4.0),
    );
    painter.rect_filled(bar, 3.0, color(palette.muted).gamma_multiply(0.35));
    let played =
        egui::Rect::from_min_max(bar.min, egui::pos2(x_of(shown.snapshot.now_ms), bar.max.y));
    painter.rect_filled(played, 3.0, color(palette.leader).gamma_multiply(0.6));
    // A long run keeps only its last 30 minutes seekable: what came before is veiled, and a
    // click there goes to the oldest instant kept.
    let seekable_from = model.sim.seekable_from_ms();
    let veiled_to = x_of(seekable_from);
    if seekable_from > 0 {
        let veil = egui::Rect::from_min_max(rect.min, egui::pos2(veiled_to, rect.max.y));
        painter.rect_filled(veil, 0.0, color(palette.background).gamma_multiply(0.75));
        let label = format!(
            "older than {} min: not kept",
            crate::sim::SEEKABLE_MS / 60_000
        );
        // Where the veil is wide enough to say so, above the bar.
        if veil.width() > label.len() as f32 * 7.0 + 12.0 {
            painter.text(
                egui::pos2(veil.center().x, rect.top() + 1.0),
                egui::Align2::CENTER_TOP,
                label,
                egui::FontId::proportional(12.0),
                color(palette.muted),
            );
        }
    }
    // Every action, with what it is for the pointer: the scenario's own as full-height lines,
    // those given in the sandbox as a line under a triangle.
    let mut marks: Vec<(f32, String)> = Vec::new();
    for e in &model.scenario.timeline {
        let x = x_of(e.at_ms);
        painter.line_segment(
            [
                egui::pos2(x, rect.top() + 2.0),
                egui::pos2(x, rect.bottom() - 2.0),
            ],
            egui::Stroke::new(2.0, color(palette.text)),
        );
        marks.push((
            x,
            format!("{}: {} (in the scenario)", clock(e.at_ms), e.action),
        ));
    }
    for (at, action) in model.sim.actions() {
        let x = x_of(*at);
        let c = color(palette.produce);
        painter.line_segment(
            [
                egui::pos2(x, rect.top() + 6.0),
                egui::pos2(x, rect.bottom() - 2.0),
            ],
            egui::Stroke::new(2.0, c),
        );
        painter.add(egui::Shape::convex_polygon(
            vec![
                egui::pos2(x - 5.0, rect.top()),
                egui::pos2(x + 5.0, rect.top()),
                egui::pos2(x, rect.top() + 7.0),
            ],
            c,
            egui::Stroke::NONE,
        ));
        let later = if *at > shown.snapshot.now_ms {
            " (still to come: it replays when the run gets there)"
        } else {
            ""
        };
        marks.push((x, format!("{}: {action}{later}", clock(*at))));
    }
    if duration > scenario_end {
        let x = x_of(scenario_end);
        painter.add(egui::Shape::dashed_line(
            &[egui::pos2(x, rect.top()), egui::pos2(x, rect.bottom())],
            egui::Stroke::new(2.0, color(palette.muted)),
            4.0,
            3.0,
        ));
        marks.push((
            x,
            format!(
                "{}: the scenario's own timeline ends here (duration_ms {scenario_end}); the sandbox plays on",
                clock(scenario_end)
            ),
        ));
    }
    for e in events {
        let (severity, _) = describe(&e.kind);
        let c = match severity {
            Severity::Bad => palette.out_of_sync,
            Severity::Good => palette.in_sync,
            Severity::Info => continue,
        };
        let x = x_of(e.at_ms);
        painter.line_segment(
            [
                egui::pos2(x, rect.top() + 8.0),
                egui::pos2(x, rect.bottom() - 8.0),
            ],
            egui::Stroke::new(2.0, color(c)),
        );
    }
    // A tour's beats, each a span of the bar with its number.
    if let Some(tour) = tour {
        for (i, b) in tour.tour.beats.iter().enumerate() {
            let (x0, x1) = (x_of(b.from_ms), x_of(b.to_ms).max(x_of(b.from_ms) + 3.0));
            let current = i == tour.place.beat;
            let span = egui::Rect::from_min_max(
                egui::pos2(x0, bar.min.y - 6.0),
                egui::pos2(x1, bar.max.y + 6.0),
            );
            let c = if current {
                palette.produce
            } else {
                palette.leader
            };
            painter.rect_filled(span, 2.0, color(c).gamma_multiply(0.8));
        }
        // Their numbers, beats that start too close to be told apart sharing one ("1-3").
        let font = egui::FontId::proportional(11.0);
        let starts: Vec<f32> = tour.tour.beats.iter().map(|b| x_of(b.from_ms)).collect();
        let label = |first: usize, last: usize| {
            if first == last {
                format!("{}", first + 1)
            } else {
                format!("{}-{}", first + 1, last + 1)
            }
        };
        // About how wide 11-point digits run, with room after them.
        let width = |text: &str| text.len() as f32 * 6.5 + 6.0;
        let mut i = 0;
        while i < starts.len() {
            let mut last = i;
            while last + 1 < starts.len()
                && starts[last + 1] < starts[i] + width(&label(i, last + 1))
            {
                last += 1;
            }
            let label = label(i, last);
            painter.text(
                egui::pos2(starts[i], rect.top()),
                egui::Align2::LEFT_TOP,
                label,
                font.clone(),
                color(palette.text),
            );
            i = last + 1;
        }
    }
    let head = x_of(shown.snapshot.now_ms);
    painter.line_segment(
        [
            egui::pos2(head, rect.top()),
            egui::pos2(head, rect.bottom()),
        ],
        egui::Stroke::new(3.0, color(palette.produce)),
    );
    let at = |p: egui::Pos2| {
        let f = ((p.x - rect.left()) / rect.width()).clamp(0.0, 1.0);
        (f as f64 * duration as f64).round() as u64
    };
    // In a tour a click goes to a beat: the one there, or the next after it.
    let beat_at = |ms: u64| {
        tour.map(|t| {
            t.tour
                .beats
                .iter()
                .position(|b| ms < b.to_ms)
                .unwrap_or(t.tour.beats.len() - 1)
        })
    };
    if let Some(p) = response.interact_pointer_pos() {
        match beat_at(at(p)) {
            Some(beat) if response.clicked() => {
                steps.write(TourControl::Step(Step::Go(beat)));
            }
            Some(_) => {}
            None if response.clicked() || response.dragged() => {
                controls.write(Control::Seek(at(p)));
            }
            None => {}
        }
    }
    if let Some(p) = response.hover_pos() {
        // The marks under the pointer say what they are; elsewhere, where a click goes.
        let near: Vec<&str> = marks
            .iter()
            .filter(|(x, _)| (x - p.x).abs() <= MARK_HOVER_PX)
            .map(|(_, text)| text.as_str())
            .collect();
        let text = match (beat_at(at(p)), tour) {
            _ if !near.is_empty() => near.join("\n"),
            (Some(beat), Some(t)) => format!("beat {}: {}", beat + 1, t.tour.beats[beat].title),
            _ if p.x < veiled_to => format!(
                "before {}: no longer seekable, as a long run keeps only its last {} minutes (a click goes to {})",
                clock(seekable_from),
                crate::sim::SEEKABLE_MS / 60_000,
                clock(seekable_from)
            ),
            _ => format!("seek to {}", clock(at(p))),
        };
        response.on_hover_text(text);
    }
}

fn details(
    ui: &mut egui::Ui,
    shown: &Shown,
    events: &Chunked<crate::sim::Event>,
    lag: &LagMonitor,
    palette: &Palette,
) {
    let s = &shown.snapshot;
    let now = s.now_ms;
    let per_sec = |pred: &dyn Fn(&crate::sim::EventKind) -> bool| {
        events
            .iter()
            .rev()
            .take_while(|e| e.at_ms + 1000 > now)
            .filter(|e| pred(&e.kind))
            .count()
    };
    egui::CollapsingHeader::new(RichText::new("Cluster metrics").strong())
        .default_open(true)
        .show(ui, |ui| {
            egui::Grid::new("metrics").striped(true).show(ui, |ui| {
                let mut row = |name: &str, value: String, bad: bool| {
                    ui.monospace(name);
                    if bad {
                        ui.colored_label(color(palette.out_of_sync), value);
                    } else {
                        ui.label(value);
                    }
                    ui.end_row();
                };
                let m = &s.metrics;
                row("ActiveControllerCount", "1".into(), false);
                row(
                    "FencedBrokerCount",
                    s.brokers.iter().filter(|b| b.fenced).count().to_string(),
                    s.brokers.iter().any(|b| b.fenced),
                );
                row(
                    "UnderReplicatedPartitions",
                    s.under_replicated().to_string(),
                    s.under_replicated() > 0,
                );
                row(
                    "UnderMinIsrPartitionCount",
                    s.under_min_isr().to_string(),
                    s.under_min_isr() > 0,
                );
                row(
                    "OfflinePartitionsCount",
                    s.offline().to_string(),
                    s.offline() > 0,
                );
                row(
                    "PreferredReplicaImbalanceCount",
                    s.not_on_preferred_leader().to_string(),
                    false,
                );
                let shrinks = per_sec(&|k| matches!(k, crate::sim::EventKind::IsrShrink { .. }));
                row(
                    "IsrShrinksPerSec",
                    format!("{shrinks} (total {})", m.isr_shrinks),
                    shrinks > 0,
                );
                let expands = per_sec(&|k| matches!(k, crate::sim::EventKind::IsrExpand { .. }));
                row(
                    "IsrExpandsPerSec",
                    format!("{expands} (total {})", m.isr_expands),
                    false,
                );
                let elections =
                    per_sec(&|k| matches!(k, crate::sim::EventKind::LeaderElected { .. }));
                row(
                    "LeaderElectionRateAndTimeMs",
                    format!("{elections}/s (total {})", m.leader_elections),
                    false,
                );
                row(
                    "UncleanLeaderElectionsPerSec",
                    format!("total {}", m.unclean_leader_elections),
                    m.unclean_leader_elections > 0,
                );
                row("MessagesIn (total)", m.records_appended.to_string(), false);
                let (lost, unavailable) = shown.missing();
                row("Acknowledged records lost", lost.to_string(), lost > 0);
                row(
                    "Acknowledged records unavailable",
                    unavailable.to_string(),
                    unavailable > 0,
                );
                let dead = s.dead_leader_ms();
                row(
                    "Time led by a dead leader",
                    format!("{:.1} s", dead as f64 / 1000.0),
                    dead > 0,
                );
                row(
                    "Records truncated (total)",
                    m.records_truncated.to_string(),
                    m.records_truncated > 0,
                );
            });
        });

    egui::CollapsingHeader::new(RichText::new("Partitions and ISR").strong())
        .default_open(true)
        .show(ui, |ui| {
            egui::Grid::new("isr").striped(true).show(ui, |ui| {
                for h in ["partition", "leader", "epoch", "replicas", "ISR", ""] {
                    ui.strong(h);
                }
                ui.end_row();
                for p in s.partitions.iter().filter(|p| !p.internal).take(64) {
                    ui.monospace(p.name());
                    ui.label(p.leader.map_or("none".into(), |l| l.to_string()));
                    ui.label(p.leader_epoch.to_string());
                    ui.label(format!("{:?}", p.assignment));
                    ui.label(format!("{:?}", p.isr));
                    if p.leader.is_none() {
                        ui.colored_label(color(palette.offline), "offline");
                    } else if p.under_min_isr() {
                        ui.colored_label(color(palette.out_of_sync), "under min ISR");
                    } else if p.under_replicated() {
                        ui.colored_label(color(palette.out_of_sync), "under-replicated");
                    } else {
                        ui.label("");
                    }
                    ui.end_row();
                }
            });
        });

    egui::CollapsingHeader::new(RichText::new("Consumer lag").strong())
        .default_open(true)
        .show(ui, |ui| {
            if s.groups.is_empty() {
                ui.weak("No consumer group in this scenario.");
            }
            for (g, history) in s.groups.iter().zip(&lag.groups) {
                ui.label(format!(
                    "{}: {}, {}, {} rebalances",
                    g.name,
                    g.state,
                    g.epochs(),
                    g.rebalances
                ));
                lag_table(ui, g, palette);
                // The committed lag climbs in any rebalance, since only a stable member commits;
                // the members' own lag tells whether they went on consuming meanwhile.
                let plots: [(&str, LagOf); 2] = [
                    ("committed lag", committed_lag),
                    ("consumer lag (records-lag)", consumer_lag),
                ];
                for (title, stretches) in plots {
                    Plot::new(("lag plot", &g.name, title))
                        .height(130.0)
                        .legend(Legend::default())
                        .x_axis_label("sim s")
                        .y_axis_label(title)
                        .allow_scroll(false)
                        // Both plots span the whole run so far, so their stretches line up.
                        .include_x(0.0)
                        .include_x(now as f64 / 1000.0)
                        .include_y(0.0)
                        .show(ui, |plot| {
                            for (k, p) in history.partitions.iter().enumerate() {
                                let name = s
                                    .partitions
                                    .get(p.ordinal as usize)
                                    .map_or_else(|| p.ordinal.to_string(), |p| p.name());
                                let colour = series_colour(k);
                                for (points, dashed) in stretches(p) {
                                    let line = Line::new(name.clone(), points).color(colour);
                                    plot.line(if dashed {
                                        line.style(LineStyle::dashed_loose())
                                    } else {
                                        line
                                    });
                                }
                            }
                        });
                }
                ui.weak(
                    "Dashed: no member owns the partition; the high watermark less where its \
                     last owner stopped.",
                );
            }
        });

    egui::CollapsingHeader::new(RichText::new("Event log").strong())
        .default_open(true)
        .show(ui, |ui| {
            if !shown.lost.is_empty() {
                let (lost, unavailable) = shown.missing();
                let headline = match (lost, unavailable) {
                    (_, 0) => format!("{lost} acknowledged records are gone from the cluster:"),
                    (0, _) => format!(
                        "{unavailable} acknowledged records are unavailable: only replicas that may not lead hold them"
                    ),
                    _ => format!(
                        "{lost} acknowledged records are gone from the cluster, {unavailable} more unavailable:"
                    ),
                };
                ui.colored_label(color(palette.lost), headline);
                for l in shown.lost.iter().take(5) {
                    ui.add(
                        egui::Label::new(
                            RichText::new(format!(
                                "{}-{} offset {} key {} from {}: {}",
                                l.topic,
                                l.partition,
                                l.offset.map_or("-".into(), |o| o.to_string()),
                                l.key.as_deref().unwrap_or("(none)"),
                                l.producer,
                                l.why
                            ))
                            .color(color(palette.lost)),
                        )
                        .wrap(),
                    );
                }
                if shown.lost.len() > 5 {
                    ui.weak(format!("and {} more", shown.lost.len() - 5));
                }
            }
            if events.is_empty() {
                ui.weak("Nothing has happened yet.");
            }
            for e in events.iter().rev().take(200) {
                let (severity, line) = describe(&e.kind);
                let c = match severity {
                    Severity::Bad => color(palette.out_of_sync),
                    Severity::Good => color(palette.in_sync),
                    Severity::Info => color(palette.muted),
                };
                ui.horizontal_wrapped(|ui| {
                    ui.monospace(clock(e.at_ms));
                    ui.add(egui::Label::new(RichText::new(line).color(c)).wrap());
                });
            }
        });

    egui::CollapsingHeader::new(RichText::new("Legend").strong())
        .default_open(true)
        .show(ui, |ui| {
            let swatch = |ui: &mut egui::Ui, c: Srgba, text: &str| {
                ui.horizontal(|ui| {
                    let (r, _) = ui.allocate_exact_size(egui::vec2(14.0, 14.0), egui::Sense::hover());
                    ui.painter().rect_filled(r, 2.0, color(c));
                    ui.label(text);
                });
            };
            swatch(ui, palette.replica(ReplicaRole::Leader), "leader replica");
            swatch(ui, palette.replica(ReplicaRole::InSync), "follower in the ISR");
            swatch(ui, palette.replica(ReplicaRole::OutOfSync), "follower out of the ISR");
            swatch(ui, palette.replica(ReplicaRole::Offline), "offline (broker down, no leader)");
            swatch(ui, palette.produce, "Produce request (ring: response)");
            swatch(ui, palette.fetch, "Fetch, follower or consumer (ring: response)");
            swatch(ui, palette.heartbeat, "BrokerHeartbeat to the controller");
            swatch(ui, palette.group, "group request: JoinGroup, SyncGroup, Heartbeat, OffsetCommit");
            ui.label("Log cells, in the replica's colour: filled = committed (below the high watermark); outlined = in the log, not yet committed; empty slot = not in this replica's log; struck out = past where this log leaves the leader's, truncated when it follows again. The bar across the log (white in the dark theme, black in the light one) is the high watermark; e1 marks where leader epoch 1 starts; \"+N ->\" says how far a log runs past the window.");
        });
}

/// A partition's lag history as a plot's stretches: points, and whether the stretch is drawn
/// dashed.
type LagOf = fn(&PartitionLag) -> Vec<(Vec<[f64; 2]>, bool)>;

fn at_s(sample: &LagSample) -> f64 {
    sample.at_ms as f64 / 1000.0
}

/// The committed lag, with a gap before the first commit ("-"), not a drop to zero.
fn committed_lag(p: &PartitionLag) -> Vec<(Vec<[f64; 2]>, bool)> {
    let points: Vec<[f64; 2]> = p
        .samples
        .iter()
        .filter_map(|s| s.lag.map(|lag| [at_s(s), lag as f64]))
        .collect();
    vec![(points, false)]
}

/// The owner's own lag (solid); where no member owns the partition, the high watermark less
/// where its last owner stopped (dashed): it climbs for as long as nobody consumes it.
fn consumer_lag(p: &PartitionLag) -> Vec<(Vec<[f64; 2]>, bool)> {
    let mut stretches: Vec<(Vec<[f64; 2]>, bool)> = Vec::new();
    let mut stopped_at: Option<u64> = None;
    for s in p.samples.iter() {
        let (value, dashed) = match s.consumer_lag {
            Some(lag) => {
                stopped_at = Some(s.high_watermark - lag);
                (lag, false)
            }
            None => match stopped_at {
                Some(position) => (s.high_watermark.saturating_sub(position), true),
                None => continue,
            },
        };
        let point = [at_s(s), value as f64];
        match stretches.last_mut() {
            Some((points, d)) if *d == dashed => points.push(point),
            last => {
                // Each stretch starts where the one before it ended, so the line is unbroken.
                let joint = last.and_then(|(points, _)| points.last().copied());
                stretches.push((joint.into_iter().chain([point]).collect(), dashed));
            }
        }
    }
    stretches
}

/// The colour of a plot's k-th series, as egui_plot picks them (golden-ratio hues), given
/// explicitly so the stretches of one partition's line share it.
fn series_colour(k: usize) -> egui::Color32 {
    let hue = (k as f32 * (std::f32::consts::GOLDEN_RATIO - 1.0)).fract();
    egui::ecolor::Hsva::new(hue, 0.85, 0.5, 1.0).into()
}

/// A group's lag, as `kafka-consumer-groups --describe` prints it: the log end a consumer can
/// read (the high watermark) less the committed offset, "-" while nothing is committed; beside
/// it the owner's own lag, and which partitions no member consumes now.
fn lag_table(ui: &mut egui::Ui, g: &crate::view::snapshot::GroupView, palette: &Palette) {
    use crate::view::snapshot::or_dash;
    egui::Grid::new(("lag", &g.name))
        .striped(true)
        .show(ui, |ui| {
            for h in [
                "partition",
                "LEO",
                "HW",
                "committed",
                "lag = HW - committed",
                "consumer lag",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for o in &g.offsets {
                ui.monospace(&o.partition);
                ui.label(o.log_end_offset.to_string());
                ui.label(o.high_watermark.to_string());
                ui.label(or_dash(o.committed));
                ui.monospace(match (o.committed, o.lag) {
                    (Some(c), Some(lag)) => format!("{} - {c} = {lag}", o.high_watermark),
                    _ => "-".into(),
                });
                // A paused partition has no live owner, so no consumer lag either.
                if o.paused {
                    ui.colored_label(color(palette.out_of_sync), "paused");
                } else {
                    ui.monospace(or_dash(o.consumer_lag));
                }
                ui.end_row();
            }
        });
}

use crate::view::layout::{LAB_END_SHARE, NARRATION_SHARE, RUN_HEADING, RUN_PLOT};
/// Shorter windows (in egui points) show the narration beside the scene, not under it.
const SHORT_WINDOW_HEIGHT: f32 = 600.0;
/// Narrower windows (in egui points) show the narration in one column, without the record's card.
const NARROW_WINDOW_WIDTH: f32 = 900.0;

/// Narrower windows show no details panel unless asked, so that the scene keeps its width.
const DETAILS_MIN_WINDOW_WIDTH: f32 = 1000.0;

fn hover_explanation(
    ctx: &egui::Context,
    s: &Snapshot,
    config: &ClusterConfig,
    hover: Option<Target>,
    notes: &[crate::view::why::Note],
) {
    let (Some(target), Some(at)) = (hover, ctx.pointer_latest_pos()) else {
        return;
    };
    let Some((title, mut body)) = explain(s, config, target) else {
        return;
    };
    // The scene's note about it, in the same words.
    if let Some(note) = crate::view::why::about(notes, target) {
        body = format!("{body}\n\nNow: {note}");
    }
    egui::Area::new("explanation".into())
        .fixed_pos(at + egui::vec2(18.0, 18.0))
        .order(egui::Order::Tooltip)
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.set_max_width(380.0);
                ui.strong(title);
                ui.label(body);
            });
        });
}

/// Where a menu opens beside the box it is about (`on_screen`, in logical pixels): its top at
/// the box's top, on the side of the box with more room, a small gap away; egui keeps it inside
/// the window. Returns the menu's corner that sits there, and where, in egui's points.
fn menu_place(on_screen: Rect, zoom: f32, screen: egui::Rect) -> (egui::Align2, egui::Pos2) {
    const GAP: f32 = 8.0;
    let (left, right, top) = (
        on_screen.min.x / zoom,
        on_screen.max.x / zoom,
        on_screen.min.y / zoom,
    );
    let top = top.max(screen.top());
    if screen.right() - right >= left - screen.left() {
        (egui::Align2::LEFT_TOP, egui::pos2(right + GAP, top))
    } else {
        (egui::Align2::RIGHT_TOP, egui::pos2(left - GAP, top))
    }
}

fn broker_menu(
    ctx: &egui::Context,
    s: &Snapshot,
    pointer: &mut Pointer,
    controls: &mut MessageWriter<Control>,
) {
    let Some((b, on_screen)) = pointer.menu else {
        return;
    };
    let Some(view) = s.broker(b) else {
        pointer.menu = None;
        return;
    };
    let mut open = true;
    let mut chosen = None;
    let mut hang = false;
    let (pivot, at) = menu_place(on_screen, ctx.zoom_factor(), ctx.content_rect());
    egui::Window::new(format!("Broker {b}: {}", view.state))
        .id(egui::Id::new("broker menu"))
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .pivot(pivot)
        .fixed_pos(at)
        .constrain(true)
        .show(ctx, |ui| {
            // A broker still registering after a restart runs too: it can crash again.
            if view.alive
                && view.state != "shutting down"
                && ui
                    .button("Controlled shutdown")
                    .on_hover_text("Its leaderships move to in-sync replicas, then it stops")
                    .clicked()
            {
                chosen = Some(Action::ControlledShutdown(b));
            }
            if view.alive || view.state == "starting" {
                if ui.button("Crash (the disk is kept)").clicked() {
                    chosen = Some(Action::CrashBroker(b));
                }
                if ui.button("Wipe (crash and lose the disk)").clicked() {
                    chosen = Some(Action::WipeBroker(b));
                }
            } else if ui.button("Restart").clicked() {
                chosen = Some(Action::RestartBroker(b));
            }
            if view.isolated {
                if ui.button("Heal its network").clicked() {
                    chosen = Some(Action::HealBroker(b));
                }
            } else if ui.button("Isolate from every other node").clicked() {
                chosen = Some(Action::IsolateBroker(b));
            }
            if view.controller_cut {
                if ui.button("Heal its controller link").clicked() {
                    chosen = Some(Action::HealControllerLink(b));
                }
            } else if ui
                .button("Cut it from the controller")
                .on_hover_text("It goes on serving; the controller fences it after its session")
                .clicked()
            {
                chosen = Some(Action::CutControllerLink(b));
            }
            if view.slowed_ms > 0 {
                if ui
                    .button(format!("Remove its {} ms delay", view.slowed_ms))
                    .clicked()
                {
                    chosen = Some(Action::SlowBroker(b, 0));
                }
            } else if ui.button("Slow every message by 50 ms").clicked() {
                chosen = Some(Action::SlowBroker(b, 50));
            }
            if view.alive
                && !s.producers.is_empty()
                && ui
                    .button("Hang producers' connections for 1 s")
                    .on_hover_text(
                        "It appends what they send, but its answers are lost until each \
                         producer's request.timeout.ms closes the connection; then they retry",
                    )
                    .clicked()
            {
                hang = true;
            }
        });
    if hang {
        // One action per producer, as a scenario's timeline would say it.
        let until_ms = s.now_ms + 1_000;
        for p in &s.producers {
            let action = Action::DropResponses(p.name.clone(), b, until_ms);
            controls.write(Control::Act(action));
        }
        pointer.menu = None;
    } else if let Some(action) = chosen {
        controls.write(Control::Act(action));
        pointer.menu = None;
    } else if !open {
        pointer.menu = None;
    }
}

fn help(ctx: &egui::Context, pointer: &mut Pointer, in_tour: bool) {
    if !pointer.show_help {
        return;
    }
    let mut open = true;
    egui::Window::new("Shortcuts")
        .open(&mut open)
        .collapsible(false)
        .show(ctx, |ui| {
            egui::Grid::new("keys").show(ui, |ui| {
                let tour_keys = [
                    (
                        "Right, PageDown, Space, .",
                        "next beat (a clicker's forward)",
                    ),
                    ("Left, PageUp, Backspace", "previous beat, from its start"),
                    ("Home / End", "first / last beat"),
                    ("R", "this beat again"),
                    ("K", "pause / play"),
                    ("a number, then Enter", "go to that beat"),
                    ("S", "the presenter view: notes, next beat, time"),
                    ("click the timeline", "go to that beat"),
                ];
                let sandbox_keys = [
                    ("Space", "play / pause"),
                    ("Right", "step to the next instant anything happens"),
                    ("Left", "step back one millisecond"),
                    ("Home", "back to the start"),
                    ("click the timeline", "seek there"),
                ];
                let common = [
                    ("+ / -", "faster / slower"),
                    (
                        "[ / ]",
                        "the speed preset below / above: 1/10, 1x, 10x, 100x",
                    ),
                    ("T", "dark / light theme"),
                    ("D", "show / hide the details panel"),
                    ("H", "show / hide the why notes in the scene"),
                    (
                        "`",
                        "show / hide the Terminal: Kafka's tools at the playhead",
                    ),
                    (
                        "P",
                        "the talk preset: light theme, large text, narration and lag only",
                    ),
                    ("N", "the talk preset: the beat's whole text"),
                    ("B / W", "black / white out the stage (again: show it)"),
                    ("F", "full screen"),
                    ("?", "this list"),
                    ("Esc", "close menus, leave full screen"),
                    ("click a log cell", "follow that record"),
                    (
                        "click a broker",
                        "controlled shutdown, crash, restart, wipe, isolate",
                    ),
                ];
                let first: &[(&str, &str)] = if in_tour { &tour_keys } else { &sandbox_keys };
                for &(key, what) in first.iter().chain(&common) {
                    ui.monospace(key);
                    ui.label(what);
                    ui.end_row();
                }
            });
        });
    if !open {
        pointer.show_help = false;
    }
}
