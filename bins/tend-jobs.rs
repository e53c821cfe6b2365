//! tend-jobs — translate a bpm.yml job description into tend service directories (or
//! systemd units), check it, or remove a job's services. See man/man8/tend-jobs.8.
//!
//! Its own C `main`, as the multi-call `tend` (bins/tend.rs): Rust's start-up would
//! reopen closed fds 0-2 on /dev/null.
#![no_main]
#![deny(unsafe_code)]

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;
use tend_cli::{Program, code, expand_long, parse_duration_ms, shown};
use tend_jobs::{apply, bpm, model, render, systemd};

const USAGE: &str = "tend-jobs check [ -n job ] [ -R vcaproot ] file | tend-jobs apply [ -s ] [ -n job ] [ -R vcaproot ] [ -t patience ] file dir | tend-jobs remove [ -t patience ] job scandir";
const PROG: Program = Program::new("tend-jobs", USAGE);
const SPEC: &str = "sn:t:R:";
const LONG: &[(&str, char)] = &[("systemd", 's'), ("name", 'n')];

/// Read and check the file: the job, or exit 100 (bad input) / 111 (unreadable).
fn read_job(p: &tend_cli::Parsed, file: &OsString) -> model::Job {
    let path = Path::new(file);
    let name = match p.value('n') {
        Some(n) => n.to_str().map(String::from),
        None => tend_jobs::job_name_of(path),
    }
    .unwrap_or_else(|| {
        PROG.fatal(
            code::USAGE,
            format_args!("no job name for {}: give one with -n", shown(file)),
        )
    });
    // Blocking and any kind of file (a pipe from <(...) is fine), but bounded.
    let mut src = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| {
        std::io::Read::read_to_end(
            &mut std::io::Read::take(f, tend_jobs::yaml::MAX_BYTES as u64 + 1),
            &mut src,
        )
    });
    if let Err(e) = read {
        PROG.fatal(
            code::SYSTEM,
            format_args!(
                "unable to read {}: {}",
                shown(file),
                tend_sys::error::io_reason(&e)
            ),
        )
    }
    if src.len() > tend_jobs::yaml::MAX_BYTES {
        PROG.fatal(
            code::USAGE,
            format_args!("{}: larger than 1 MiB: refused", shown(file)),
        )
    }
    let src = String::from_utf8(src).unwrap_or_else(|_| {
        PROG.fatal(code::USAGE, format_args!("{}: not UTF-8 text", shown(file)))
    });
    bpm::parse(&src, &name, &PROG)
        .unwrap_or_else(|e| PROG.fatal(e.code(), format_args!("{}: {e}", shown(file))))
}

/// What the host offers, BOSH's tree at -R's directory or /var/vcap.
fn host(p: &tend_cli::Parsed, job: &str) -> render::Host {
    let root = p
        .value('R')
        .map_or(Path::new(tend_jail::plan::VCAP), Path::new);
    tend_jobs::host_at(job, root)
}

fn patience(p: &tend_cli::Parsed) -> Duration {
    p.value('t').map_or(Duration::from_secs(30), |v| {
        Duration::from_millis(parse_duration_ms(v).unwrap_or_else(|| PROG.usage_exit()))
    })
}

tend_sys::c_main!(run);

fn run() {
    tend_cli::help::holds(const { &[&tend_cli::help::pages::TEND_JOBS] });
    let mut args = tend_cli::args();
    let Some(sub) = args.next() else {
        PROG.usage_exit()
    };
    let p = PROG.parse(expand_long(args, SPEC, LONG), SPEC);
    match (sub.to_str(), p.operands.as_slice()) {
        (Some("check"), [file]) if !p.has('s') && !p.has('t') => check(&p, file),
        (Some("apply"), [file, dir]) if p.has('s') => apply_systemd(&p, file, dir),
        (Some("apply"), [file, dir]) => apply(&p, file, dir),
        (Some("remove"), [job, dir]) if !p.has('s') && !p.has('n') && !p.has('R') => {
            remove(&p, job, dir)
        }
        _ => PROG.usage_exit(),
    }
}

/// `check`: read the file and render the services, writing nothing.
fn check(p: &tend_cli::Parsed, file: &OsString) -> ! {
    let job = read_job(p, file);
    let host = host(p, &job.name);
    let services = render::services(&job, &host, &PROG);
    println!(
        "tend-jobs: {}: job {}: {} processes, {} services: valid",
        shown(file),
        job.name,
        job.processes.len(),
        services.len()
    );
    std::process::exit(code::OK)
}

/// `apply -s`: systemd units into `dir`.
fn apply_systemd(p: &tend_cli::Parsed, file: &OsString, dir: &OsString) -> ! {
    let job = read_job(p, file);
    let units = systemd::units(&job, &host(p, &job.name), &PROG);
    match systemd::write(Path::new(dir), &job.name, &units, patience(p)) {
        Ok(changed) => report(&job.name, &changed, units.len()),
        Err(e) => PROG.fatal(e.code(), e),
    }
}

/// `apply`: service directories into the scan directory `dir`.
fn apply(p: &tend_cli::Parsed, file: &OsString, dir: &OsString) -> ! {
    let job = read_job(p, file);
    let host = host(p, &job.name);
    let services = render::services(&job, &host, &PROG);
    for pr in &job.processes {
        if pr.executable.starts_with('/') && !Path::new(&pr.executable).exists() {
            PROG.warn(format_args!(
                "process {}: {} does not exist (yet): the service will fail to start until it does",
                pr.name, pr.executable
            ));
        }
    }
    let o = apply::apply(Path::new(dir), &job.name, &services, patience(p), &PROG)
        .unwrap_or_else(|e| PROG.fatal(e.code(), e));
    for (what, names) in [
        ("added", &o.added),
        ("replaced", &o.replaced),
        ("removed", &o.removed),
    ] {
        for n in names {
            println!("tend-jobs: {what} {n}");
        }
    }
    if !o.changed() {
        println!(
            "tend-jobs: job {}: no change ({} services as described)",
            job.name,
            o.unchanged.len()
        );
    }
    std::process::exit(code::OK)
}

/// `remove`: bring down and remove the job's services.
fn remove(p: &tend_cli::Parsed, job: &OsString, dir: &OsString) -> ! {
    let Some(job) = job.to_str().filter(|j| model::check_name("job", j).is_ok()) else {
        PROG.fatal(
            code::USAGE,
            format_args!("invalid job name: {}", shown(job)),
        )
    };
    let names = apply::remove(Path::new(dir), job, patience(p), &PROG)
        .unwrap_or_else(|e| PROG.fatal(e.code(), e));
    if names.is_empty() {
        PROG.fatal(
            code::NO,
            format_args!("no service of job {job} in {}", shown(dir)),
        )
    }
    for n in names {
        println!("tend-jobs: removed {n}");
    }
    std::process::exit(code::OK)
}

fn report(job: &str, changed: &[String], total: usize) -> ! {
    for n in changed {
        println!("tend-jobs: {n}");
    }
    if changed.is_empty() {
        println!("tend-jobs: job {job}: no change ({total} units as described)");
    }
    std::process::exit(code::OK)
}
