//! tend-notify — not written yet.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("tend-notify: fatal: not implemented");
    std::process::exit(111);
}
