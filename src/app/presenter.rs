//! The speaker's presenter view: a second window with the beat's notes, the next beat's title
//! and a live thumbnail of its first frame, where the talk is, and the time spent and left. It
//! opens with `--presenter` or S in a tour; the stage window then shows the beat's title only.
//! Both windows take the clicker's keys (Bevy gathers every window's keys); B and W blank the
//! stage alone. A web page has one window: there the view takes the page's place
//! (`presenter=1`), and another page showing the stage keeps in step with it (`web_page`).
//! What it says is `view::presenter`'s, tested headless.

use bevy::camera::RenderTarget;
use bevy::camera::visibility::RenderLayers;
use bevy::ecs::schedule::ScheduleLabel;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::render::render_resource::TextureFormat;
use bevy::window::{WindowRef, WindowResolution};
use bevy_egui::{
    EguiContext, EguiPrimaryContextPass, EguiSchedule, EguiTextureHandle, EguiUserTextures, egui,
};

use super::AppSet;
use super::clicker::Clicker;
use super::playback::{DEFAULT_AREA, Model, Shown};
use super::tour::TourPlay;
use crate::sim::Sim;
use crate::view::presenter::Sheet;
use crate::view::snapshot::Snapshot;
use crate::view::tour::Blank;

/// The presenter window's egui pass.
#[derive(ScheduleLabel, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PresenterPass;

/// The open presenter view.
#[derive(Resource)]
pub struct Presenter {
    /// Its own window and camera; none on the web, where it takes the page's place.
    window: Option<(Entity, Entity)>,
    preview_camera: Entity,
    thumbnail: egui::TextureId,
    /// When the talk's clock started, in the app's real time (seconds).
    started_s: f64,
}

impl Presenter {
    /// The view takes the page's place (the web) rather than a window of its own.
    pub fn in_page(&self) -> bool {
        self.window.is_none()
    }
}

/// A presenter view is open on another page of the same talk (the web): the stage shows the
/// beat's title only, as it does beside a presenter window.
#[derive(Resource, Default)]
pub struct PresenterElsewhere(pub bool);

/// Marks the presenter window's camera, which draws only its egui pass.
#[derive(Component)]
pub struct PresenterCamera;

/// The next beat's first frame, for the thumbnail: the scenario's run at the beat's start, laid
/// out far from the scenes on stage.
#[derive(Resource, Deref, DerefMut)]
pub struct PreviewShown(pub Shown);

/// The run the preview is read from, and the beat it is at.
#[derive(Resource)]
struct PreviewRun {
    sim: Sim,
    beat: usize,
}

/// Where the preview's scene lies: neither camera on stage ever sees it.
const PREVIEW_ORIGIN: Vec2 = Vec2::new(0.0, 200_000.0);
/// The thumbnail's size in pixels: the stage's shape.
const THUMBNAIL: (u32, u32) = (640, 360);

pub(super) fn plugin(app: &mut App) {
    app.add_systems(
        Startup,
        open_at_start.after(super::overlay::spawn_ui_camera),
    )
    .add_systems(
        Update,
        (toggle, closed).chain().in_set(super::InputSet::Read),
    )
    .add_systems(
        Update,
        preview
            .in_set(AppSet::Model)
            .after(super::playback::read_model),
    )
    .add_systems(PresenterPass, paint_window)
    .add_systems(
        EguiPrimaryContextPass,
        paint_page
            .after(super::overlay::OverlaySystems)
            .after(super::clicker::ClickerSystems),
    )
    .init_resource::<PresenterElsewhere>();
}

/// What opening the view takes: the app's options, the thumbnail's image and egui texture, and
/// the clock the talk's time starts from.
#[derive(SystemParam)]
struct Opening<'w> {
    options: Res<'w, super::Options>,
    images: ResMut<'w, Assets<Image>>,
    textures: ResMut<'w, EguiUserTextures>,
    time: Res<'w, Time<Real>>,
}

fn open_at_start(mut commands: Commands, opening: Opening) {
    if opening.options.presenter && opening.options.tour.is_some() {
        open(&mut commands, opening);
    }
}

fn open(commands: &mut Commands, opening: Opening) {
    let Opening {
        options,
        mut images,
        mut textures,
        time,
    } = opening;
    let window = (!cfg!(target_arch = "wasm32")).then(|| spawn_window(commands, &options));
    let image = images.add(Image::new_target_texture(
        THUMBNAIL.0,
        THUMBNAIL.1,
        TextureFormat::Rgba8UnormSrgb,
        None,
    ));
    let thumbnail = textures.add_image(EguiTextureHandle::Strong(image.clone()));
    let preview_camera = commands.spawn(super::camera::preview_camera(image)).id();
    commands.insert_resource(Presenter {
        window,
        preview_camera,
        thumbnail,
        started_s: time.elapsed_secs_f64(),
    });
}

/// The presenter's window, and its camera, which draws only the view's egui pass.
fn spawn_window(commands: &mut Commands, options: &super::Options) -> (Entity, Entity) {
    let window = commands
        .spawn(Window {
            title: "Kafkascope: presenter".to_string(),
            resolution: WindowResolution::new(options.size.0, options.size.1),
            // Beside the stage where the screen has room (a projector is usually a second
            // screen the stage window is moved to).
            position: WindowPosition::At(IVec2::new(options.size.0 as i32, 0)),
            ..default()
        })
        .id();
    let camera = commands
        .spawn((
            PresenterCamera,
            Camera2d,
            // Apart from the scene's cameras (order 0 and 1, which the pointer and the notes
            // look for) and the stage's egui (2).
            Camera {
                order: 3,
                ..default()
            },
            RenderLayers::none(),
            RenderTarget::Window(WindowRef::Entity(window)),
            EguiSchedule::new(PresenterPass),
        ))
        .id();
    (window, camera)
}

fn close(commands: &mut Commands, presenter: &Presenter) {
    let (window, camera) = presenter.window.unzip();
    for e in [window, camera, Some(presenter.preview_camera)]
        .into_iter()
        .flatten()
    {
        if let Ok(mut e) = commands.get_entity(e) {
            e.despawn();
        }
    }
    commands.remove_resource::<Presenter>();
    commands.remove_resource::<PreviewShown>();
    commands.remove_resource::<PreviewRun>();
}

/// S opens or closes the presenter view, in a tour.
fn toggle(
    mut commands: Commands,
    keys: Res<ButtonInput<KeyCode>>,
    presenter: Option<Res<Presenter>>,
    tour: Option<Res<TourPlay>>,
    opening: Opening,
) {
    if !keys.just_pressed(KeyCode::KeyS) || tour.is_none() {
        return;
    }
    match presenter {
        Some(p) => close(&mut commands, &p),
        None => open(&mut commands, opening),
    }
}

/// Closing the presenter window (its own close button) closes the view; leaving the tour does
/// too. The stage knows whether it is open.
fn closed(
    mut commands: Commands,
    presenter: Option<Res<Presenter>>,
    elsewhere: Res<PresenterElsewhere>,
    windows: Query<(), With<Window>>,
    tour: Option<ResMut<TourPlay>>,
) {
    let gone = |p: &Presenter| p.window.is_some_and(|(w, _)| windows.get(w).is_err());
    let open = match &presenter {
        Some(p) if gone(p) || tour.is_none() => {
            close(&mut commands, p);
            false
        }
        // In the page, the view is the page: the stage is elsewhere.
        Some(p) => !p.in_page(),
        None => elsewhere.0,
    };
    if let Some(mut tour) = tour
        && tour.presenter != open
    {
        tour.presenter = open;
    }
}

/// Keeps the preview at the next beat's start: the run is seeked there once per beat.
fn preview(
    mut commands: Commands,
    presenter: Option<Res<Presenter>>,
    tour: Option<Res<TourPlay>>,
    model: Res<Model>,
    shown: Res<Shown>,
    run: Option<ResMut<PreviewRun>>,
    preview: Option<ResMut<PreviewShown>>,
) {
    let (Some(_), Some(tour)) = (presenter, tour) else {
        return;
    };
    let Some(next) = Sheet::preview_beat(&tour.tour, tour.place) else {
        if preview.is_some() {
            commands.remove_resource::<PreviewShown>();
        }
        return;
    };
    if let (Some(run), Some(mut p)) = (run.as_deref(), preview)
        && run.beat == next
    {
        // The look follows the stage's (its theme, text size or talk preset changed).
        if p.theme != shown.theme || p.text_factor() != shown.text_factor() {
            p.look_like(&shown);
            p.relayout();
        }
        return;
    }
    let at = tour.tour.beats[next].from_ms;
    let snapshot = match run {
        Some(mut run) => {
            run.beat = next;
            run.sim.seek(at);
            Snapshot::of(run.sim.world_mut())
        }
        None => {
            let mut sim = Sim::new(&model.scenario);
            sim.seek(at);
            let snapshot = Snapshot::of(sim.world_mut());
            commands.insert_resource(PreviewRun { sim, beat: next });
            snapshot
        }
    };
    commands.insert_resource(PreviewShown(Shown::placed(
        snapshot,
        &shown,
        PREVIEW_ORIGIN,
        DEFAULT_AREA,
    )));
}

/// Text sizes of the presenter view, in egui points: read at arm's length on a laptop.
const NOTES: f32 = 26.0;
const HEADING: f32 = 30.0;
const SMALL: f32 = 18.0;

/// What the view paints from.
type ViewParams<'w> = (
    Option<Res<'w, Presenter>>,
    Option<Res<'w, TourPlay>>,
    Res<'w, super::Options>,
    Res<'w, Shown>,
    Res<'w, Clicker>,
    Option<Res<'w, PreviewShown>>,
    Res<'w, Time<Real>>,
);

/// The view in its own window.
fn paint_window(
    mut context: Single<&mut EguiContext, With<PresenterCamera>>,
    view: ViewParams,
    windows: Query<&Window>,
) {
    let height = view
        .0
        .as_ref()
        .and_then(|p| p.window)
        .and_then(|(w, _)| windows.get(w).ok())
        .map_or(720.0, |w| w.height());
    paint(context.get_mut(), view, height);
}

/// The view in the page's place (the web's `presenter=1`).
fn paint_page(
    mut contexts: bevy_egui::EguiContexts,
    view: ViewParams,
    window: Single<&Window, With<bevy::window::PrimaryWindow>>,
) {
    if !view.0.as_ref().is_some_and(|p| p.in_page()) {
        return;
    }
    let Ok(ctx) = contexts.ctx_mut() else { return };
    paint(ctx, view, window.height());
}

/// Paints the view into `ctx`, a window `height` logical pixels tall.
fn paint(
    ctx: &mut egui::Context,
    (presenter, tour, options, shown, clicker, preview, time): ViewParams,
    height: f32,
) {
    let (Some(presenter), Some(tour)) = (presenter, tour) else {
        return;
    };
    let elapsed = (time.elapsed_secs_f64() - presenter.started_s).max(0.0) as u64;
    let sheet = Sheet::of(&tour.tour, tour.place, elapsed, options.minutes);
    let palette = shown.palette();
    // The view's layout is made for 720 lines; a larger window enlarges it, with the reader's
    // text size on top.
    ctx.set_zoom_factor(options.text_scale * (height / 720.0).max(1.0));
    ctx.set_visuals(match shown.theme {
        crate::view::palette::Theme::Dark => egui::Visuals::dark(),
        crate::view::palette::Theme::Light => egui::Visuals::light(),
    });
    let colour = |c: bevy::color::Srgba| {
        let [r, g, b, a] = c.to_u8_array();
        egui::Color32::from_rgba_unmultiplied(r, g, b, a)
    };
    let muted = colour(palette.muted);
    // Above the page's own panels where it takes the page's place.
    let mut root = egui::Ui::new(
        ctx.clone(),
        "presenter".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::new(
                egui::Order::Foreground,
                egui::Id::new("presenter"),
            ))
            .max_rect(ctx.viewport_rect()),
    );
    egui::Panel::top("presenter-heading").show(&mut root, |ui| {
        ui.horizontal(|ui| {
            ui.label(egui::RichText::new(&sheet.position).size(HEADING).strong());
            ui.label(egui::RichText::new(&sheet.title).size(HEADING));
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if let Some(countdown) = &sheet.countdown {
                    let text = egui::RichText::new(countdown).size(HEADING).strong();
                    ui.label(if sheet.over {
                        text.color(colour(palette.lost))
                    } else {
                        text
                    });
                }
                ui.label(
                    egui::RichText::new(format!("{} in", sheet.elapsed))
                        .size(HEADING)
                        .color(muted),
                );
            });
        });
        let blank = match clicker.blank {
            Blank::Shown => String::new(),
            Blank::Black => " · the stage is black (B shows it)".to_string(),
            Blank::White => " · the stage is white (W shows it)".to_string(),
        };
        ui.add(
            egui::Label::new(
                egui::RichText::new(format!("{}{blank}", sheet.stage))
                    .size(SMALL + 4.0)
                    .color(colour(palette.produce)),
            )
            .wrap(),
        );
        ui.add_space(4.0);
    });
    let width = ctx.viewport_rect().width();
    egui::Panel::right("presenter-next")
        .resizable(false)
        .exact_size(width * 0.4)
        .show(&mut root, |ui| {
            ui.add_space(6.0);
            ui.add(
                egui::Label::new(egui::RichText::new(&sheet.next).size(SMALL + 6.0).strong())
                    .wrap(),
            );
            ui.add_space(4.0);
            let w = ui.available_width();
            if preview.is_some() {
                let size = egui::vec2(w, w * THUMBNAIL.1 as f32 / THUMBNAIL.0 as f32);
                ui.add(egui::Image::new(egui::load::SizedTexture::new(
                    presenter.thumbnail,
                    size,
                )));
            }
            ui.add_space(10.0);
            ui.add(
                egui::Label::new(
                    egui::RichText::new(
                        "Right, PageDown, Space: next · Left, PageUp: previous · a number, \
                         Enter: that beat · B, W: blank the stage · S: close this view",
                    )
                    .size(SMALL)
                    .color(muted),
                )
                .wrap(),
            );
        });
    egui::CentralPanel::default().show(&mut root, |ui| {
        egui::ScrollArea::vertical()
            .id_salt("notes")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                ui.add_space(6.0);
                ui.add(
                    egui::Label::new(
                        egui::RichText::new(&sheet.notes)
                            .size(NOTES)
                            .color(colour(palette.text)),
                    )
                    .wrap(),
                );
            });
    });
}
