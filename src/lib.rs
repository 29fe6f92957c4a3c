//! Kafkascope: Apache Kafka's production lifecycle as a deterministic simulation.
//!
//! [`sim`] is the model (a Bevy ECS schedule), [`scenario`] reads scenario files, [`tour`] the
//! tours that tell them in beats, [`report`] writes what a run did, [`partitioner`] is Kafka's
//! key hashing, [`app`] the window and [`web`] the web page's address.

pub mod app;
pub mod assignor;
pub mod cli;
pub mod partitioner;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod tour;
pub mod view;
pub mod web;
