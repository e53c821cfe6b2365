//! The runtime: what tend-monit does with a configuration once it is read.

pub mod alert;
pub mod bpm;
pub mod cache;
pub mod check_file;
pub mod control;
pub mod daemon;
pub mod http;
pub mod passwd;
pub mod resource;
pub mod service;
pub mod state;
pub mod status;
pub mod text;
pub mod watch;
