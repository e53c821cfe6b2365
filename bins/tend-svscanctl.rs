//! tend-svscanctl — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-svscanctl: fatal: not implemented");
    std::process::exit(111);
}
