//! What the scene shows, computed from the model without drawing anything: colours, where every
//! node and replica sits, where each message is at a sim time. The renderer reads these; tests
//! check them headless.

pub mod event_text;
pub mod explain;
pub mod layout;
pub mod log_strip;
pub mod motion;
pub mod palette;
pub mod snapshot;
