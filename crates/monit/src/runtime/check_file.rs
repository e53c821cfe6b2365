//! The watcher's own file, `monit-check`: one `key value` a line, written by
//! `service::render`, read by the watcher (`tend-monit -W`) when it starts.

use crate::runtime::state::{DEFAULT_TIMEOUT, LimitAction, Run, Settings};

impl Settings {
    /// The file's text: one `key value` per line; arguments one per line (a newline
    /// inside one is refused when rendering).
    pub fn to_text(&self) -> String {
        let mut s = format!("name {}\n", self.name);
        if let Some(p) = &self.pidfile {
            s += &format!("pidfile {p}\n");
        }
        if let Some(m) = &self.matching {
            s += &format!("matching {m}\n");
        }
        if let Some((n, secs, a)) = &self.restart_limit {
            s += &format!("restart-limit {n} {secs} {}\n", a.word());
            if let LimitAction::Exec(argv) = a {
                for x in argv {
                    s += &format!("restart-limit-arg {x}\n");
                }
            }
        }
        if !self.resources.is_empty() {
            s += &format!("cycle {}\n", self.cycle);
        }
        let m = &self.mail;
        for r in &m.recipients {
            s += &format!("alert-to {r}\n");
        }
        for x in &m.servers {
            s += &format!("mailserver {x}\n");
        }
        if self.foreground {
            s += "foreground\n";
        }
        if let Some(g) = self.stop_grace {
            s += &format!("stop-grace {g}\n");
        }
        if let Some(name) = self.stop_signal.and_then(tend_sys::signals::name) {
            s += &format!("stop-signal {name}\n");
        }
        for (k, v) in [
            ("mail-from", &m.from),
            ("mail-subject", &m.subject),
            ("eventqueue", &m.queue),
            ("logfile", &m.log),
            ("connection", &self.connection),
        ] {
            if let Some(v) = v {
                s += &format!("{k} {v}\n");
            }
        }
        if let Some(msg) = &m.message {
            for l in msg.split('\n') {
                s += &format!("mail-message {l}\n");
            }
        }
        for r in &self.resources {
            s += &r.to_line();
        }
        for d in &self.depends {
            s += &format!("depends {d}\n");
        }
        for (k, r) in [("start", &self.start), ("stop", &self.stop)] {
            let Some(r) = r else { continue };
            s += &format!("{k}-timeout {}\n", r.timeout);
            if let Some(u) = r.uid {
                s += &format!("{k}-uid {u}\n");
            }
            if let Some(g) = r.gid {
                s += &format!("{k}-gid {g}\n");
            }
            for a in &r.argv {
                s += &format!("{k}-arg {a}\n");
            }
        }
        s
    }

    pub fn parse(text: &str) -> Result<Settings, String> {
        let mut st = Settings::default();
        for (i, line) in text.lines().enumerate() {
            let (k, v) = line.split_once(' ').unwrap_or((line, ""));
            let num = || {
                v.parse::<u32>()
                    .map_err(|_| format!("line {}: not a number: {v}", i + 1))
            };
            match k {
                "name" => st.name = v.into(),
                "pidfile" => st.pidfile = Some(v.into()),
                "matching" => st.matching = Some(v.into()),
                "restart-limit" => {
                    st.restart_limit = Some(
                        restart_limit(v)
                            .ok_or_else(|| format!("line {}: bad restart-limit: {v}", i + 1))?,
                    )
                }
                "cycle" => st.cycle = num()?,
                "depends" => st.depends.push(v.into()),
                "alert-to" => st.mail.recipients.push(v.into()),
                "mailserver" => st.mail.servers.push(v.into()),
                "mail-from" => st.mail.from = Some(v.into()),
                "mail-subject" => st.mail.subject = Some(v.into()),
                "eventqueue" => st.mail.queue = Some(v.into()),
                "logfile" => st.mail.log = Some(v.into()),
                "connection" => st.connection = Some(v.into()),
                "foreground" => st.foreground = true,
                "stop-signal" => {
                    st.stop_signal = Some(
                        tend_sys::signals::parse(v)
                            .ok_or_else(|| format!("line {}: bad stop-signal: {v}", i + 1))?,
                    )
                }
                "stop-grace" => st.stop_grace = Some(num()?),
                "mail-message" => match &mut st.mail.message {
                    Some(m) => {
                        m.push('\n');
                        m.push_str(v);
                    }
                    None => st.mail.message = Some(v.into()),
                },
                "resource" => st.resources.push(
                    crate::runtime::resource::Rule::parse(v)
                        .ok_or_else(|| format!("line {}: bad resource rule: {v}", i + 1))?,
                ),
                "resource-arg" => match st.resources.last_mut() {
                    Some(r) => r.argv.push(v.into()),
                    None => return Err(format!("line {}: resource-arg without resource", i + 1)),
                },
                "restart-limit-arg" => match &mut st.restart_limit {
                    Some((_, _, LimitAction::Exec(argv))) => argv.push(v.into()),
                    _ => return Err(format!("line {}: restart-limit-arg without exec", i + 1)),
                },
                _ => {
                    let Some((which, what)) = k
                        .split_once('-')
                        .filter(|(w, _)| *w == "start" || *w == "stop")
                    else {
                        return Err(format!("line {}: unknown key {k}", i + 1));
                    };
                    match what {
                        "timeout" => run(&mut st, which).timeout = num()?,
                        "uid" => run(&mut st, which).uid = Some(num()?),
                        "gid" => run(&mut st, which).gid = Some(num()?),
                        "arg" => run(&mut st, which).argv.push(v.into()),
                        _ => return Err(format!("line {}: unknown key {k}", i + 1)),
                    }
                }
            }
        }
        Ok(st)
    }
}

/// The start or stop program's settings, made on first use.
fn run<'s>(st: &'s mut Settings, which: &str) -> &'s mut Run {
    let slot = if which == "start" {
        &mut st.start
    } else {
        &mut st.stop
    };
    slot.get_or_insert_with(|| Run {
        timeout: DEFAULT_TIMEOUT,
        ..Default::default()
    })
}

/// `restart-limit N SECS ACTION` (an exec's argv follows on `restart-limit-arg` lines).
fn restart_limit(v: &str) -> Option<(u32, u64, LimitAction)> {
    let f: Vec<&str> = v.split(' ').collect();
    let [n, secs, what] = f.as_slice() else {
        return None;
    };
    let a = match *what {
        "unmonitor" => LimitAction::Unmonitor,
        "exec" => LimitAction::Exec(Vec::new()),
        "alert" => LimitAction::Alert,
        _ => return None,
    };
    Some((n.parse().ok()?, secs.parse().ok()?, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    type Limit = Option<(u32, u64, LimitAction)>;

    #[test]
    fn restart_limit_rows() {
        let rows: [(&str, Limit); 7] = [
            ("3 30 unmonitor", Some((3, 30, LimitAction::Unmonitor))),
            ("1 10 exec", Some((1, 10, LimitAction::Exec(Vec::new())))),
            ("5 50 alert", Some((5, 50, LimitAction::Alert))),
            ("3 30 restart", None),
            ("3 30", None),
            ("x 30 alert", None),
            ("3 30 alert extra", None),
        ];
        for (text, want) in rows {
            assert_eq!(restart_limit(text), want, "{text}");
        }
    }

    #[test]
    fn text_round_trips() {
        let st = Settings {
            name: "web".into(),
            pidfile: Some("/var/vcap/sys/run/web.pid".into()),
            start: Some(Run {
                argv: vec!["/bin/sh".into(), "-c".into(), "exec web".into()],
                timeout: 60,
                uid: Some(1000),
                gid: None,
            }),
            restart_limit: Some((3, 30, LimitAction::Exec(vec!["/bin/true".into()]))),
            stop_signal: Some(nix::sys::signal::Signal::SIGINT as i32),
            stop_grace: Some(20),
            foreground: true,
            ..Default::default()
        };
        assert_eq!(Settings::parse(&st.to_text()), Ok(st.clone()));
        assert!(
            st.to_text().contains("stop-signal SIGINT\n"),
            "{}",
            st.to_text()
        );
        assert_eq!(
            Settings::parse("name web\nstop-signal HUPP\n"),
            Err("line 2: bad stop-signal: HUPP".into())
        );
        let bad = "name web\nrestart-limit 3 thirty unmonitor\n";
        assert_eq!(
            Settings::parse(bad),
            Err("line 2: bad restart-limit: 3 thirty unmonitor".into())
        );
    }
}
