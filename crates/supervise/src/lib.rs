//! tend-supervise — not written yet.
