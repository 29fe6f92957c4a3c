//! The record the reader follows: picked in the scene or named by the tour, and where it is now.
//! Its own file, so that the pointer that picks it and the tour that names it need not know each
//! other.

use bevy::prelude::*;

use crate::view::follow::{AckScan, Picked, Trace};

/// The record the reader follows (the tour's, or one picked in the scene), and where it is now.
#[derive(Resource, Default)]
pub struct Following {
    pub picked: Option<Picked>,
    pub trace: Option<Trace>,
    pub(super) acks: AckScan,
    /// The layout it was picked in: a record of another scenario is not followed.
    pub(super) layout_version: u64,
    /// The instant a tour's record was last looked for (the search reads the logs).
    pub(super) looked_at_ms: Option<u64>,
}

impl Following {
    /// Follows `picked`, a record of the scenario shown with layout `layout_version`.
    pub fn pick(picked: Picked, layout_version: u64) -> Self {
        Following {
            picked: Some(picked),
            layout_version,
            ..Following::default()
        }
    }
}
