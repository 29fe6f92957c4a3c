//! What the scene shows, computed from the model without drawing anything: colours, where every
//! node and replica sits, where each message is at a sim time, where a followed record is, and
//! what a tour's beat frames. The renderer reads these; tests check them headless.

pub mod annotations;
pub mod callout_layout;
pub mod contract;
pub mod event_text;
pub mod explain;
pub mod follow;
pub mod hit;
pub mod kafka_tools;
pub mod lab;
pub mod layout;
pub mod log_strip;
pub mod motion;
pub mod palette;
pub mod presenter;
pub mod snapshot;
pub mod tour;
pub mod why;
