//! A check whose start program is bpm's (`/var/vcap/jobs/bpm/bin/bpm start JOB [-p
//! PROCESS]`, as releases that use bpm write their monit files) is run without bpm: the
//! process its job's `config/bpm.yml` describes, translated by tend-jobs (the chain of
//! tend programs ending in the executable, its environment, limits and logger), is the
//! check's start program, run in the foreground by the check's watcher, which watches it
//! as its own child: no runc, no pidfile. Everything else of the check stays as for any
//! other (its name, groups, dependencies and their restarts, connection and resource
//! tests, restart limit, events, states).

use crate::reader::model::Check;
use std::path::{Path, PathBuf};
use tend_sys::warn::Warn;

/// The bpm job and process a check starts, and the bpm.yml that describes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub job: String,
    pub process: String,
    pub file: PathBuf,
}

/// The route of `c`, if its start program is `bpm start JOB [-p PROCESS]` and bpm.yml is
/// where BOSH puts it (`JOBS/JOB/config/bpm.yml`, JOBS being the directory of bpm's own
/// job: `JOBS/bpm/bin/bpm`).
pub fn route(c: &Check) -> Option<Route> {
    let argv = &c.start.as_ref()?.argv;
    let (bpm, rest) = argv.split_first()?;
    let bpm = Path::new(bpm);
    if bpm.file_name()? != "bpm" || rest.first()? != "start" {
        return None;
    }
    let job = rest.get(1)?.clone();
    let process = match &rest[2..] {
        [] => job.clone(),
        [p, name] if p == "-p" || p == "--process" => name.clone(),
        _ => return None,
    };
    let jobs = bpm.parent()?.parent()?.parent()?;
    let file = jobs.join(&job).join("config").join("bpm.yml");
    file.is_file().then_some(Route { job, process, file })
}

/// The file the watcher runs in the foreground: tend-jobs' run script of the process.
pub const RUN: &str = "bpm-run";

/// A bpm process translated: the files its start program needs in the service directory
/// (`bpm-run`, its `env/`, and its logger `log/run`), the signal bpm stops it with and
/// the seconds bpm waits before SIGKILL.
pub struct Translated {
    pub files: Vec<tend_client::install::File>,
    pub signal: i32,
    pub grace: u32,
}

pub fn translate(c: &Check, r: &Route, report: &dyn Warn) -> Result<Translated, String> {
    let fail = |why: String| format!("check {}: {}: {why}", c.name, r.file.display());
    let src = std::fs::read_to_string(&r.file).map_err(|e| fail(e.to_string()))?;
    let mut job = tend_jobs::bpm::parse(&src, &r.job, report).map_err(|e| fail(e.0))?;
    job.processes.retain(|p| p.name == r.process);
    let Some(p) = job.processes.first().cloned() else {
        return Err(fail(format!("no process {}", r.process)));
    };
    let host = tend_jobs::host(&r.job);
    let main = tend_jobs::render::services(&job, &host, report)
        .into_iter()
        .next()
        .ok_or_else(|| fail("nothing to run".into()))?;
    // The watcher is ./run, tells readiness and stops the process itself: of tend-jobs'
    // service only the chain, its environment and its logger are kept.
    let files = main
        .files
        .into_iter()
        .filter_map(|mut f| {
            if f.path == tend_proto::servicedir::RUN {
                f.path = RUN.into();
                Some(f)
            } else {
                (f.path.starts_with("env/") || f.path.starts_with("log/")).then_some(f)
            }
        })
        .collect();
    Ok(Translated {
        files,
        signal: p.shutdown_signal,
        grace: u32::try_from(p.stop_grace_ms.div_ceil(1000)).unwrap_or(u32::MAX),
    })
}
