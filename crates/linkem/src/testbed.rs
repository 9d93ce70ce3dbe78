//! The namespace testbed: passenger clients, the train router, one emulated link per carrier and
//! the server, each in its own network namespace, with kernel MPTCP on the router and server.
//!
//! ```text
//!  client i (rp-P-N-c<i>)        router (rp-P-N-rtr)                       server (rp-P-N-srv)
//!  eth0 10.99.i.2/24 --veth-- lan<i> 10.99.i.1/24
//!                              car<k> 10.200.k.1/24 ==TUN== emulator ==TUN== car<k> 10.200.k.2/24
//!                                                                          lo 10.201.0.1/32 (service)
//! ```
//!
//! The router reaches the server's service address over every carrier: source-address policy
//! routing (`ip rule from 10.200.k.1 table 100+k`, default route `dev car<k>` there), the main
//! table's default route uses the first carrier. MPTCP: the router has one endpoint per carrier,
//! `ip mptcp endpoint add 10.200.k.1 dev car<k> id k+1 subflow`, so an MPTCP connection opened
//! from the router gets a subflow over every carrier; `ip mptcp limits set subflow 8
//! add_addr_accepted 8` on both ends. The router forwards (ip_forward = 1) client traffic; the
//! server routes 10.99.0.0/16 back over the first carrier. Every namespace is deleted when the
//! [`Testbed`] is dropped, also while unwinding from a panic.

use crate::config::LinkConfig;
use crate::emu::{EmuOptions, EmuReport, Emulator, LinkControl, LinkEvent, LinkIo};
use crate::netns::{ip, open_tun, run_cmd, run_in, Netns, NS_PREFIX};
use crate::TestbedError;
use railpath_core::Time;
use railpath_scenario::Resolved;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Instant;

/// MTU of every testbed interface.
pub const MTU: u32 = 1500;
/// The server's service address (on its loopback), reachable over every carrier.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 1);

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// What to build.
#[derive(Debug, Clone)]
pub struct TestbedSpec {
    /// One emulated carrier link each (at most 50).
    pub links: Vec<LinkConfig>,
    /// Passenger client namespaces (0 is allowed; at most 50).
    pub clients: usize,
    /// Configure the router's MPTCP endpoints (one `subflow` endpoint per carrier).
    pub mptcp_endpoints: bool,
    pub emu: EmuOptions,
}

impl TestbedSpec {
    /// Links, seed and bin width from a resolved scenario; one client.
    pub fn from_resolved(r: &Resolved) -> Result<TestbedSpec, TestbedError> {
        Ok(TestbedSpec {
            links: LinkConfig::all(r)?,
            clients: 1,
            mptcp_endpoints: true,
            emu: EmuOptions {
                seed: r.run.seed,
                bin: Time::from_ms_f64(r.run.bin_ms),
                // `[capture]`, its directory as the caller resolved it.
                pcap: railpath_capture::CaptureOptions::of_resolved(r),
                ..EmuOptions::default()
            },
        })
    }
}

/// Whether this process can build a testbed: root (CAP_NET_ADMIN), /dev/net/tun, `ip`, and
/// kernel MPTCP enabled. The error says what is missing (tests print it as their SKIP reason).
pub fn check_environment() -> Result<(), TestbedError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(TestbedError::Unavailable(
            "not root: the testbed needs CAP_NET_ADMIN (run as root)".into(),
        ));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(TestbedError::Unavailable(
            "/dev/net/tun is missing (no TUN support)".into(),
        ));
    }
    match std::fs::read_to_string("/proc/sys/net/mptcp/enabled") {
        Ok(v) if v.trim() == "1" => {}
        Ok(v) => {
            return Err(TestbedError::Unavailable(format!(
                "kernel MPTCP disabled (net.mptcp.enabled = {})",
                v.trim()
            )))
        }
        Err(_) => {
            return Err(TestbedError::Unavailable(
                "kernel has no MPTCP (/proc/sys/net/mptcp missing)".into(),
            ))
        }
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Err(TestbedError::Unavailable(
            "the `ip` command (iproute2) is missing".into(),
        ));
    }
    Ok(())
}

/// A running testbed. Drop it (or call [`Testbed::finish`]) to tear everything down.
pub struct Testbed {
    link_ids: Vec<String>,
    clients: usize,
    // Field order = drop order: the emulator (and its TUN fds) first, then the namespaces.
    emulator: Option<Emulator>,
    router: Netns,
    server: Netns,
    client_ns: Vec<Netns>,
}

impl Testbed {
    /// Build every namespace, interface, address, route and MPTCP endpoint, then start the
    /// emulator; the moment it starts is t = 0 of the links' outages and schedules.
    pub fn new(spec: &TestbedSpec) -> Result<Testbed, TestbedError> {
        check_environment()?;
        if spec.links.is_empty() || spec.links.len() > 50 {
            return Err(TestbedError::Other(format!(
                "a testbed needs 1 to 50 links, got {}",
                spec.links.len()
            )));
        }
        if spec.clients > 50 {
            return Err(TestbedError::Other(format!(
                "at most 50 clients, got {}",
                spec.clients
            )));
        }
        crate::netns::cleanup_stale();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let base = format!("{NS_PREFIX}{}-{n}", std::process::id());
        let router = Netns::create(&format!("{base}-rtr"))?;
        let server = Netns::create(&format!("{base}-srv"))?;
        let mut client_ns = Vec::new();
        for i in 0..spec.clients {
            client_ns.push(Netns::create(&format!("{base}-c{i}"))?);
        }
        let mut tb = Testbed {
            link_ids: spec.links.iter().map(|l| l.id.clone()).collect(),
            clients: spec.clients,
            emulator: None,
            router,
            server,
            client_ns,
        };
        let ios = tb.configure(spec)?;
        let links = spec.links.iter().cloned().zip(ios).collect();
        tb.emulator = Some(Emulator::start(links, spec.emu.clone())?);
        Ok(tb)
    }

    fn configure(&mut self, spec: &TestbedSpec) -> Result<Vec<LinkIo>, TestbedError> {
        let r = self.router.name().to_string();
        let s = self.server.name().to_string();
        self.sysctl(&r, "net.ipv4.ip_forward", "1")?;
        for c in &self.client_ns {
            // IPv4 only: no IPv6 router solicitations or MLD reports on the emulated links.
            self.sysctl(c.name(), "net.ipv6.conf.all.disable_ipv6", "1")?;
            self.sysctl(c.name(), "net.ipv6.conf.default.disable_ipv6", "1")?;
        }
        for ns in [&r, &s] {
            self.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")?;
            self.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")?;
            self.sysctl(ns, "net.ipv4.conf.all.rp_filter", "0")?;
            self.sysctl(ns, "net.ipv4.conf.default.rp_filter", "0")?;
            self.sysctl(ns, "net.mptcp.enabled", "1")?;
            ip([
                "-n",
                ns,
                "mptcp",
                "limits",
                "set",
                "subflow",
                "8",
                "add_addr_accepted",
                "8",
            ])?;
        }
        ip([
            "-n",
            &s,
            "addr",
            "add",
            &format!("{SERVER_ADDR}/32"),
            "dev",
            "lo",
        ])?;
        let mut ios = Vec::new();
        for (k, _) in spec.links.iter().enumerate() {
            let dev = format!("car{k}");
            let rfd = run_in(&r, || open_tun(&dev))??;
            let sfd = run_in(&s, || open_tun(&dev))??;
            ios.push(LinkIo {
                router: rfd,
                server: sfd,
            });
            for (ns, host) in [(&r, 1), (&s, 2)] {
                ip(["-n", ns, "link", "set", &dev, "mtu", &MTU.to_string()])?;
                ip([
                    "-n",
                    ns,
                    "addr",
                    "add",
                    &format!("10.200.{k}.{host}/24"),
                    "dev",
                    &dev,
                ])?;
                ip(["-n", ns, "link", "set", &dev, "up"])?;
            }
            // TUN devices default to a 500-packet tx queue; keep it above any emulated buffer.
            for ns in [&r, &s] {
                ip(["-n", ns, "link", "set", &dev, "txqueuelen", "10000"])?;
            }
            let table = (100 + k).to_string();
            ip([
                "-n", &r, "route", "add", "default", "dev", &dev, "table", &table,
            ])?;
            ip([
                "-n",
                &r,
                "rule",
                "add",
                "from",
                &format!("10.200.{k}.1"),
                "table",
                &table,
                "pref",
                &(1000 + k).to_string(),
            ])?;
            if k == 0 {
                ip(["-n", &r, "route", "add", "default", "dev", &dev])?;
                ip(["-n", &s, "route", "add", "10.99.0.0/16", "dev", &dev])?;
            }
            if spec.mptcp_endpoints {
                ip([
                    "-n",
                    &r,
                    "mptcp",
                    "endpoint",
                    "add",
                    &format!("10.200.{k}.1"),
                    "dev",
                    &dev,
                    "id",
                    &(k + 1).to_string(),
                    "subflow",
                ])?;
            }
        }
        for (i, c) in self.client_ns.iter().enumerate() {
            let c = c.name();
            let lan = format!("lan{i}");
            ip([
                "-n", &r, "link", "add", &lan, "type", "veth", "peer", "name", "eth0", "netns", c,
            ])?;
            ip([
                "-n",
                &r,
                "addr",
                "add",
                &format!("10.99.{i}.1/24"),
                "dev",
                &lan,
            ])?;
            ip(["-n", &r, "link", "set", &lan, "up"])?;
            ip([
                "-n",
                c,
                "addr",
                "add",
                &format!("10.99.{i}.2/24"),
                "dev",
                "eth0",
            ])?;
            ip(["-n", c, "link", "set", "eth0", "up"])?;
            ip([
                "-n",
                c,
                "route",
                "add",
                "default",
                "via",
                &format!("10.99.{i}.1"),
            ])?;
        }
        Ok(ios)
    }

    /// Set a sysctl (`net.mptcp.stale_loss_cnt`, `net.ipv4.tcp_...`) inside namespace `ns`.
    pub fn sysctl(&self, ns: &str, key: &str, value: &str) -> Result<(), TestbedError> {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        run_in(ns, || std::fs::write(&path, value))?
            .map_err(|e| TestbedError::io(format!("sysctl {key}={value} in {ns}"), e))
    }

    /// Name of the router namespace (for `ip netns exec`).
    pub fn router_ns(&self) -> &str {
        self.router.name()
    }
    pub fn server_ns(&self) -> &str {
        self.server.name()
    }
    /// Name of client namespace `i`.
    pub fn client_ns(&self, i: usize) -> Option<&str> {
        self.client_ns.get(i).map(|n| n.name())
    }
    pub fn clients(&self) -> usize {
        self.clients
    }
    /// Link ids in scenario order; link k's devices are `car<k>` in router and server.
    pub fn link_ids(&self) -> &[String] {
        &self.link_ids
    }
    fn link_index(&self, link: &str) -> Result<usize, TestbedError> {
        self.link_ids
            .iter()
            .position(|l| l == link)
            .ok_or_else(|| TestbedError::UnknownLink(link.to_string()))
    }
    /// Interface name of `link` (the same in router and server).
    pub fn link_dev(&self, link: &str) -> Result<String, TestbedError> {
        Ok(format!("car{}", self.link_index(link)?))
    }
    /// The router's address on `link` (its MPTCP endpoint).
    pub fn router_addr(&self, link: &str) -> Result<Ipv4Addr, TestbedError> {
        Ok(Ipv4Addr::new(10, 200, self.link_index(link)? as u8, 1))
    }
    /// The server's address on `link`.
    pub fn server_link_addr(&self, link: &str) -> Result<Ipv4Addr, TestbedError> {
        Ok(Ipv4Addr::new(10, 200, self.link_index(link)? as u8, 2))
    }
    /// The server's service address, reachable over every link.
    pub fn server_addr(&self) -> Ipv4Addr {
        SERVER_ADDR
    }
    /// Client `i`'s address; the router is `10.99.i.1` on `lan<i>`.
    pub fn client_addr(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 99, i as u8, 2)
    }
    /// The router's MPTCP endpoint id of `link` (`ip mptcp endpoint change id N backup`).
    pub fn endpoint_id(&self, link: &str) -> Result<u8, TestbedError> {
        Ok(self.link_index(link)? as u8 + 1)
    }

    /// A command that will run inside namespace `ns` (`ip netns exec ns program ...`).
    pub fn command(&self, ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }
    /// Run a command inside `ns` to completion, failing with its stderr.
    pub fn exec(&self, ns: &str, program: &str, args: &[&str]) -> Result<(), TestbedError> {
        run_cmd(self.command(ns, program).args(args))
    }
    /// Run `f` on a thread inside `ns` (sockets it creates live in `ns`).
    pub fn run_in<R: Send, F: FnOnce() -> R + Send>(
        &self,
        ns: &str,
        f: F,
    ) -> Result<R, TestbedError> {
        run_in(ns, f)
    }

    fn emu(&self) -> &Emulator {
        self.emulator
            .as_ref()
            .expect("emulator runs while the testbed lives")
    }
    /// The instant that is t = 0 (emulator start).
    pub fn origin(&self) -> Instant {
        self.emu().origin()
    }
    /// Time since t = 0.
    pub fn now(&self) -> Time {
        Time(self.origin().elapsed().as_nanos() as u64)
    }
    /// Script outages and parameter changes from any thread.
    pub fn control(&self) -> LinkControl {
        self.emu().control()
    }
    /// Outage start/end events as they happen (once; later calls return None).
    pub fn take_events(&mut self) -> Option<Receiver<LinkEvent>> {
        self.emulator.as_mut().and_then(|e| e.take_events())
    }

    /// Stop the emulator, return its measurements and delete every namespace.
    pub fn finish(mut self) -> Result<EmuReport, TestbedError> {
        let emu = self
            .emulator
            .take()
            .expect("emulator runs while the testbed lives");
        emu.stop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testbed_and_control_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Testbed>();
        shared::<LinkControl>();
    }

    #[test]
    fn spec_from_a_scenario_takes_seed_and_bin() {
        let s = railpath_scenario::parse_str(
            "[run]\nduration_s = 1\nseed = 9\nbin_ms = 50\n[[link]]\nid = \"a\"\nrate_mbps = 10\n[[flow]]\nid = \"f\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n",
            "t.toml",
        )
        .unwrap();
        let spec = TestbedSpec::from_resolved(&s.validate().unwrap()).unwrap();
        assert_eq!((spec.emu.seed, spec.emu.bin), (9, Time::from_ms(50)));
        assert_eq!((spec.links.len(), spec.clients), (1, 1));
    }
}
