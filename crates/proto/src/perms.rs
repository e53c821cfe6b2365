//! Who may read a service's status, control it, and subscribe to its events, as s6
//! encodes it: in the modes and groups of `supervise/`, `supervise/control` and `event/`
//! (s6-svperms sets them; the supervisors create them restrictive and then leave them
//! alone). `supervise/status` itself stays 0644: the search bit of `supervise/` decides.
//!
//! | who                     | supervise/          | supervise/control | event/        |
//! |-------------------------|---------------------|-------------------|---------------|
//! | status: owner           | 0700, primary group |                   |               |
//! | status: group G         | 0710, G             |                   |               |
//! | status: public          | 0711, primary group |                   |               |
//! | control: owner          |                     | 0600, primary     |               |
//! | control: group G        |                     | 0620, G           |               |
//! | events: group G         |                     |                   | 03730, G      |
//! | events: public          |                     |                   | 01733, primary|
//!
//! "Primary group" is the primary group of the file's owner. Reading back is as strict
//! as s6-svperms: any other mode is reported as incorrect.

/// Who may read the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Owner,
    Group,
    Public,
}

/// Who may send control commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Owner,
    Group,
}

/// Who may subscribe to events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Events {
    Group,
    Public,
}

/// The mode `supervise/` gets.
pub fn supervise_mode(s: Status) -> u32 {
    match s {
        Status::Owner => 0o700,
        Status::Group => 0o710,
        Status::Public => 0o711,
    }
}

/// The mode `supervise/control` gets.
pub fn control_mode(c: Control) -> u32 {
    match c {
        Control::Owner => 0o600,
        Control::Group => 0o620,
    }
}

/// The mode `event/` gets.
pub fn events_mode(e: Events) -> u32 {
    match e {
        Events::Group => 0o3730,
        Events::Public => 0o1733,
    }
}

/// Who may read the status, from `supervise/`'s permission bits (07777); `None` if the
/// mode is not one s6 accepts: set-id, sticky, group/other read or write bits, an owner
/// without rwx, or other search without group search.
pub fn status_of(mode: u32) -> Option<Status> {
    if mode & 0o5066 != 0 || mode & 0o700 != 0o700 || (mode & 0o001 != 0 && mode & 0o010 == 0) {
        return None;
    }
    Some(if mode & 0o001 != 0 {
        Status::Public
    } else if mode & 0o010 != 0 {
        Status::Group
    } else {
        Status::Owner
    })
}

/// Who may control, from `supervise/control`'s permission bits; `None` if it has
/// execute, set-id-like, group read or any other bit s6 refuses.
pub fn control_of(mode: u32) -> Option<Control> {
    if mode & 0o157 != 0 {
        return None;
    }
    Some(if mode & 0o020 != 0 {
        Control::Group
    } else {
        Control::Owner
    })
}

/// Who may subscribe, from `event/`'s permission bits: exactly 03730 or 01733.
pub fn events_of(mode: u32) -> Option<Events> {
    match mode & 0o7777 {
        0o3730 => Some(Events::Group),
        0o1733 => Some(Events::Public),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_back() {
        for s in [Status::Owner, Status::Group, Status::Public] {
            assert_eq!(status_of(supervise_mode(s)), Some(s));
        }
        for c in [Control::Owner, Control::Group] {
            assert_eq!(control_of(control_mode(c)), Some(c));
        }
        for e in [Events::Group, Events::Public] {
            assert_eq!(events_of(events_mode(e)), Some(e));
        }
    }

    #[test]
    fn strict_like_s6() {
        assert_eq!(status_of(0o755), None);
        assert_eq!(status_of(0o701), None);
        assert_eq!(status_of(0o600), None);
        assert_eq!(status_of(0o1700), None);
        assert_eq!(status_of(0o2710), Some(Status::Group), "setgid is allowed");
        assert_eq!(control_of(0o640), None);
        assert_eq!(control_of(0o700), None);
        assert_eq!(control_of(0o200), Some(Control::Owner));
        assert_eq!(events_of(0o0730), None);
        assert_eq!(events_of(0o3733), None);
    }
}
