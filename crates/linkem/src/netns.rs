//! Named network namespaces (`ip netns`, bind-mounted under /run/netns), removed on drop; running
//! a closure inside one (a scoped thread that `setns(2)`s, so the caller's namespace is never
//! touched); TUN devices (Linux `Documentation/networking/tuntap.rst`).

use crate::TestbedError;
use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

/// Prefix of every namespace railpath creates: `rp-<pid>-<n>-<role>`.
pub const NS_PREFIX: &str = "rp-";

/// Run `ip ARGS` and fail with its stderr.
pub fn ip<I, S>(args: I) -> Result<(), TestbedError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    run_cmd(Command::new("ip").args(&args))
}

/// Run a command to completion, failing with its stderr when it exits non-zero.
pub fn run_cmd(cmd: &mut Command) -> Result<(), TestbedError> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| TestbedError::io(format!("cannot run {shown}"), e))?;
    if !out.status.success() {
        return Err(TestbedError::Command {
            cmd: shown,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// A named network namespace, deleted (with every interface in it) when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    pub fn create(name: &str) -> Result<Netns, TestbedError> {
        ip(["netns", "add", name])?;
        let ns = Netns {
            name: name.to_string(),
        };
        // Loopback up: local sockets (and `lo` addresses) work.
        ip(["-n", name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(["netns", "del", &self.name]) {
            eprintln!("linkem: could not delete namespace {}: {e}", self.name);
        }
    }
}

/// Run `f` on a thread that has entered namespace `ns` (by name, under /run/netns). Sockets and
/// TUN devices created by `f` belong to that namespace and stay usable from any thread.
pub fn run_in<R, F>(ns: &str, f: F) -> Result<R, TestbedError>
where
    R: Send,
    F: FnOnce() -> R + Send,
{
    let path = format!("/run/netns/{ns}");
    let file = File::open(&path).map_err(|e| TestbedError::io(format!("cannot open {path}"), e))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(&file, ns)?;
            Ok(f())
        })
        .join()
        .map_err(|_| TestbedError::Other(format!("thread inside namespace {ns} panicked")))?
    })
}

/// Move the calling thread into the namespace open as `file`.
pub fn enter(file: &File, ns: &str) -> Result<(), TestbedError> {
    // SAFETY: setns on a valid fd; affects only the calling thread's network namespace.
    let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(TestbedError::io(
            format!("setns into {ns}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Spawn a named thread that runs inside namespace `ns`.
pub fn spawn_in<R, F>(
    ns: &str,
    name: &str,
    f: F,
) -> Result<std::thread::JoinHandle<R>, TestbedError>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let path = format!("/run/netns/{ns}");
    let file = File::open(&path).map_err(|e| TestbedError::io(format!("cannot open {path}"), e))?;
    let ns_name = ns.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let r = enter(&file, &ns_name);
            let ok = r.is_ok();
            let _ = tx.send(r);
            assert!(ok, "setns failed (reported to the spawner)");
            f()
        })
        .map_err(|e| TestbedError::io("cannot spawn thread", e))?;
    match rx.recv() {
        Ok(Ok(())) => Ok(h),
        Ok(Err(e)) => {
            let _ = h.join();
            Err(e)
        }
        Err(_) => Err(TestbedError::Other(format!(
            "thread for namespace {ns} died"
        ))),
    }
}

/// Create (in the calling thread's namespace) a non-blocking TUN device `name` without packet
/// information headers: each read/write is one IP packet. It disappears when the fd is closed.
pub fn open_tun(name: &str) -> Result<OwnedFd, TestbedError> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(TestbedError::Other(format!("bad interface name {name:?}")));
    }
    // SAFETY: plain open(2) of a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(TestbedError::io(
            "open /dev/net/tun",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF takes a pointer to an ifreq that outlives the call.
    let r = unsafe {
        libc::ioctl(
            owned.as_raw_fd(),
            libc::TUNSETIFF,
            &mut req as *mut libc::ifreq,
        )
    };
    if r < 0 {
        return Err(TestbedError::io(
            format!("TUNSETIFF {name}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(owned)
}

/// The creating process of a railpath namespace name `rp-<pid>-<n>-<role>`, if it is one.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NS_PREFIX)?;
    let mut parts = rest.splitn(3, '-');
    let (pid, n, role) = (parts.next()?, parts.next()?, parts.next()?);
    if role.is_empty() || n.parse::<u64>().is_err() {
        return None;
    }
    pid.parse().ok()
}

/// Delete namespaces `rp-<pid>-...` left behind by railpath processes that no longer run (a test
/// killed by SIGKILL cannot run its Drop guards). Returns the names removed.
pub fn cleanup_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return removed;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if ip(["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_only_for_railpath_names() {
        assert_eq!(owner_pid("rp-1234-0-rtr"), Some(1234));
        assert_eq!(owner_pid("rp-1234-17-c3"), Some(1234));
        assert_eq!(owner_pid("rp-gw-0-rtr"), None);
        assert_eq!(owner_pid("rp-1234-x-rtr"), None);
        assert_eq!(owner_pid("rp-1234-0-"), None);
        assert_eq!(owner_pid("rp-1234"), None);
        assert_eq!(owner_pid("other-1234-0-rtr"), None);
    }
}
