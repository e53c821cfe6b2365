//! A check whose start program is bpm's (`/var/vcap/jobs/bpm/bin/bpm start JOB [-p
//! PROCESS]`, as releases that use bpm write their monit files) is run directly: the
//! process its job's `config/bpm.yml` describes, translated by tend-jobs into a service
//! directory (the chain of tend programs ending in the executable, its environment,
//! limits, shutdown signal and logger), supervised with no runc, no pidfile and no
//! watcher. It keeps the check's name, groups and dependencies, and reports the states
//! monit would; its connection tests stay (their tend-check restarts the service).
//!
//! Only where nothing needs the watcher: a check with a restart limit or a resource test
//! keeps running `bpm start` as written.

use crate::model::{Check, Test};
use std::path::{Path, PathBuf};
use tend_client::install::Service;
use tend_sys::warn::Warn;

/// The bpm job and process a check starts, and the bpm.yml that describes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub job: String,
    pub process: String,
    pub file: PathBuf,
}

/// The route of `c`, if its start program is `bpm start JOB [-p PROCESS]`, bpm.yml is
/// where BOSH puts it (`JOBS/JOB/config/bpm.yml`, JOBS being the directory of bpm's own
/// job: `JOBS/bpm/bin/bpm`), and no rule of the check needs the watcher.
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
    let needs_watcher = c
        .rules
        .iter()
        .any(|r| matches!(r.test, Test::Resource { .. } | Test::Restarts { .. }));
    if needs_watcher {
        return None;
    }
    let jobs = bpm.parent()?.parent()?.parent()?;
    let file = jobs.join(&job).join("config").join("bpm.yml");
    file.is_file().then_some(Route { job, process, file })
}

/// The service of a check on the bpm route: tend-jobs' service for the one process,
/// under the check's name, owned by tend-monit, down until tend-monit starts it, with the
/// check's settings for its siblings' watchers (what depends on what).
pub fn render(
    c: &Check,
    r: &Route,
    settings: &crate::watch::Settings,
    report: &dyn Warn,
) -> Result<Service, String> {
    let fail = |why: String| format!("check {}: {}: {why}", c.name, r.file.display());
    let src = std::fs::read_to_string(&r.file).map_err(|e| fail(e.to_string()))?;
    let mut job = tend_jobs::bpm::parse(&src, &r.job, report).map_err(|e| fail(e.0))?;
    job.processes.retain(|p| p.name == r.process);
    if job.processes.is_empty() {
        return Err(fail(format!("no process {}", r.process)));
    }
    let host = tend_jobs::host(&r.job);
    let mut main = tend_jobs::render::services(&job, &host, report)
        .into_iter()
        .next()
        .ok_or_else(|| fail("nothing to run".into()))?;
    main.name = c.name.clone();
    main.files
        .retain(|f| f.path != tend_client::install::MARKER);
    for (path, bytes) in [
        (
            tend_client::install::MARKER,
            format!("{}\n", crate::service::OWNER),
        ),
        ("down", String::new()),
        (crate::watch::CHECK_FILE, settings.to_text()),
    ] {
        main.files.retain(|f| f.path != path);
        main.files.push(tend_client::install::File {
            path: path.into(),
            bytes: bytes.into_bytes(),
            mode: 0o644,
        });
    }
    main.files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(main)
}
