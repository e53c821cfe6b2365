//! tend-env — not written yet.
