//! tend-log — not written yet.
