//! tend-client — not written yet.
