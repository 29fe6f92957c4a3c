//! The page around the web build's canvas learns what the app shows: the browser tab's title
//! names the scenario, and the canvas carries the scenario, the instant drawn and a frame count,
//! which the page (and its tests) read.

use bevy::prelude::*;

use super::playback::{Model, Shown};

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<Frames>().add_systems(Last, tell_page);
}

/// Frames drawn so far.
#[derive(Resource, Default)]
struct Frames(u64);

fn tell_page(model: Option<Res<Model>>, shown: Option<Res<Shown>>, mut frames: ResMut<Frames>) {
    let (Some(model), Some(shown)) = (model, shown) else {
        return;
    };
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    frames.0 += 1;
    let name = &model.scenario.name;
    let title = format!("Kafkascope: {name}");
    if document.title() != title {
        document.set_title(&title);
    }
    if let Some(canvas) = document.get_element_by_id("kafkascope") {
        let _ = canvas.set_attribute("data-scenario", name);
        let _ = canvas.set_attribute("data-sim-ms", &(shown.display_ms as u64).to_string());
        let _ = canvas.set_attribute("data-frames", &frames.0.to_string());
    }
}
