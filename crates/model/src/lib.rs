//! Kafkascope's model of Apache Kafka, without a window: [`sim`] is the model (a Bevy ECS world
//! stepped phase by phase), [`scenario`] reads scenario files, [`report`] writes what a run did,
//! [`partitioner`] is Kafka's key hashing and [`assignor`] its partition assignors.

pub mod assignor;
pub mod partitioner;
pub mod report;
pub mod scenario;
pub mod sim;
