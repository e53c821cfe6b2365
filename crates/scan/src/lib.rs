//! tend-scan — not written yet.
