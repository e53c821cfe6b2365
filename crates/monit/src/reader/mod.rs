//! The reader: monitrc text to plain data, every error named by file and line.

pub mod lex;
pub mod model;
pub mod order;
pub mod parse;
pub mod validate;
