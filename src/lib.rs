//! Kafkascope: Apache Kafka's production lifecycle as a deterministic simulation.
//!
//! The model is its own crate, `kafkascope_model`, re-exported here: [`sim`] is the model (a Bevy
//! ECS world stepped phase by phase), [`scenario`] reads scenario files, [`report`] writes what a
//! run did, [`partitioner`] is Kafka's key hashing and [`assignor`] its assignors. This crate adds
//! [`tour`], the tours that tell scenarios in beats, [`app`] the window, [`view`] what it draws,
//! [`cli`] the command line, `clip` a render's GIF and MP4, [`talk`] a talk authored by playing,
//! and [`web`] the web page's address.

pub use kafkascope_model::{assignor, partitioner, report, scenario, sim};

pub mod app;
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod clip;
#[cfg(not(target_arch = "wasm32"))]
pub mod save;
pub mod talk;
pub mod tour;
pub mod view;
pub mod web;
