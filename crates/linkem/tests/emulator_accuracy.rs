//! Emulator accuracy through real namespaces (issue 5, part 1): the configured rate, one-way
//! delay and random loss, measured with UDP through the emulated links, must be within 5 %, 1 ms
//! and 20 % (relative) of the configuration. Needs root and kernel MPTCP; otherwise it prints
//! SKIP and passes.

use railpath_core::Time;
use railpath_linkem::model::{Buffer, DirConfig, Service};
use railpath_linkem::{check_environment, EmuOptions, LinkConfig, Testbed, TestbedSpec};
use railpath_scenario::OutageMode;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn dir(rate_mbps: u64, delay_ms: u64, loss: f64) -> DirConfig {
    DirConfig {
        service: Service::Rate(rate_mbps * 1_000_000),
        delay: Time::from_ms(delay_ms),
        loss,
        buffer: Buffer::Packets(1000),
        outage_mode: OutageMode::Hold,
    }
}

fn link(id: &str, rate_mbps: u64, delay_ms: u64, loss: f64) -> LinkConfig {
    LinkConfig {
        id: id.into(),
        data: dir(rate_mbps, delay_ms, loss),
        reverse: dir(rate_mbps, delay_ms, 0.0),
        steps: vec![],
        outages: vec![],
        queue_drops: vec![],
    }
}

/// A Mahimahi trace "1, 3" (period 3 ms: opportunities at 1, 3, 4, 6, 7, ... ms, 1500 B each:
/// 8 Mbit/s), 10 ms delay; the
/// reverse direction has 15 ms.
fn traced() -> LinkConfig {
    let mut l = link("traced", 100, 10, 0.0);
    l.data.service = Service::Trace(std::sync::Arc::new(vec![1, 3]));
    l.reverse.delay = Time::from_ms(15);
    l
}

/// `n` datagrams of `payload` bytes, `burst` at a time every `gap`; receive until `wait` after.
struct Pattern {
    n: usize,
    payload: usize,
    burst: usize,
    gap: Duration,
    wait: Duration,
}

/// The busy, stolen and total jiffies of all cores together, from the first line of /proc/stat
/// (proc(5): user nice system idle iowait irq softirq steal ...; busy is all but idle, iowait
/// and steal; steal is time the hypervisor ran something else while this machine's CPU wanted
/// to run).
fn cpu_jiffies(stat: &str) -> Option<(u64, u64, u64)> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4)?;
    let steal = *v.get(7)?;
    Some((total - idle - steal, steal, total))
}

fn host_jiffies() -> Option<(u64, u64, u64)> {
    cpu_jiffies(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// How much of this host's cores' time the hypervisor took between two [`host_jiffies`]
/// readings (0 to 1), and how busy they were and that share, as words: "busy B %, stolen S %".
fn host_share(
    before: Option<(u64, u64, u64)>,
    after: Option<(u64, u64, u64)>,
) -> (Option<f64>, String) {
    match (before, after) {
        (Some(a), Some(b)) if b.2 > a.2 => {
            let total = (b.2 - a.2) as f64;
            let stolen = (b.1 - a.1) as f64 / total;
            let busy = (b.0 - a.0) as f64 / total;
            (
                Some(stolen),
                format!("busy {:.0} %, stolen {:.1} %", busy * 100.0, stolen * 100.0),
            )
        }
        _ => (None, "busy and stolen time unknown".to_string()),
    }
}

/// The share of the cores' time the hypervisor may take during a delay measurement whose tail
/// (p99) is still judged: several times what an idle host of this kind lost on 2026-11-29 (0.55 %
/// in a 10 s sample, 0.65 % over the whole uptime).
const STOLEN_TAIL_LIMIT: f64 = 0.02;

/// Say on stderr (which the test harness does not capture) that the tail bound of `what` was not
/// judged because the hypervisor took more than [`STOLEN_TAIL_LIMIT`], with the measurement.
fn note_tail_not_judged(what: &str, stats: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "NOTE emulator accuracy: {what} tail (p99 below 2 ms) not judged, the hypervisor took \
         more than {:.0} % of the CPUs' time: {stats}",
        STOLEN_TAIL_LIMIT * 100.0
    );
}

#[test]
fn busy_and_stolen_jiffies_from_the_first_line_of_proc_stat() {
    // user 10, nice 20, system 30, idle 400, iowait 50, irq 6, softirq 7, steal 8, then guest
    // and guest_nice (already counted in user and nice): total 531, busy 531 - 450 - 8 = 73.
    let stat = "cpu  10 20 30 400 50 6 7 8 90 91\ncpu0 5 10 15 200 25 3 3 4 0 0\n";
    assert_eq!(cpu_jiffies(stat), Some((73, 8, 531)));
    assert_eq!(cpu_jiffies("intr 1 2 3\n"), None);
    assert_eq!(cpu_jiffies("cpu  1 2 x 4 5 6 7 8\n"), None);
    // Between (73, 8, 531) and (173, 58, 1531): 100 busy and 50 stolen of 1000.
    let (stolen, words) = host_share(Some((73, 8, 531)), Some((173, 58, 1531)));
    assert_eq!(stolen, Some(0.05));
    assert_eq!(words, "busy 10 %, stolen 5.0 %");
    let (stolen, words) = host_share(None, Some((1, 1, 1)));
    assert_eq!(
        (stolen, words.as_str()),
        (None, "busy and stolen time unknown")
    );
    // This host's own line parses.
    let (busy, steal, total) = host_jiffies().expect("/proc/stat's cpu line");
    assert!(total > 0 && busy + steal <= total, "{busy} {steal} {total}");
}

/// Each probe's one-way delay minus `expect_ns`, in microseconds, smallest first (`probe`'s
/// `(received, sent)` pairs, ns).
fn sorted_delay_errors_us(got: &[(u64, u64)], expect_ns: f64) -> Vec<f64> {
    let mut e: Vec<f64> = got
        .iter()
        .map(|(r, s)| ((*r - *s) as f64 - expect_ns) / 1e3)
        .collect();
    e.sort_by(f64::total_cmp);
    e
}

/// Send `n` datagrams of `payload` bytes from `src` to `dst` (a router address: the data
/// direction; a server address: the reverse direction), one every `gap`, each stamped with its send time since `t0`; return the receive times and stamps
/// of those that arrived (receiving until `wait` after the last send).
fn probe(tb: &Testbed, src: SocketAddr, dst: SocketAddr, pat: Pattern) -> Vec<(u64, u64)> {
    let Pattern {
        n,
        payload,
        burst,
        gap,
        wait,
    } = pat;
    // Data direction: server -> router; the reverse direction the other way round.
    let (tx_ns, rx_ns) = if tb
        .link_ids()
        .iter()
        .any(|l| std::net::IpAddr::V4(tb.router_addr(l).unwrap()) == dst.ip())
    {
        (tb.server_ns(), tb.router_ns())
    } else {
        (tb.router_ns(), tb.server_ns())
    };
    let rx = tb.run_in(rx_ns, || UdpSocket::bind(dst)).unwrap().unwrap();
    let tx = tb.run_in(tx_ns, || UdpSocket::bind(src)).unwrap().unwrap();
    let sock = socket2::SockRef::from(&rx);
    sock.set_recv_buffer_size(8 << 20).unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    // Kernel receive timestamps: the measurement excludes this thread's scheduling delay.
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with a pointer to an int that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            rx.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_TIMESTAMPNS");
    let t0 = Instant::now();
    let total_send = gap * (n / burst) as u32;
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut got = Vec::with_capacity(n);
            let mut buf = vec![0u8; 2048];
            let end = t0 + total_send + wait;
            while Instant::now() < end {
                if let Some((k, now)) = recv_stamped(&rx, &mut buf) {
                    if k >= 8 {
                        let sent = u64::from_be_bytes(buf[..8].try_into().unwrap());
                        got.push((now, sent));
                    }
                }
            }
            got
        });
        let mut buf = vec![0u8; payload];
        for i in 0..n {
            if i % burst == 0 {
                let due = t0 + gap * (i / burst) as u32;
                while Instant::now() < due {
                    let left = due - Instant::now();
                    if left > Duration::from_micros(200) {
                        std::thread::sleep(left - Duration::from_micros(100));
                    }
                }
            }
            buf[..8].copy_from_slice(&realtime_ns().to_be_bytes());
            let _ = tx.send_to(&buf, dst);
        }
        h.join().unwrap()
    })
}

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Receive one datagram with its kernel receive timestamp (CLOCK_REALTIME, ns).
fn recv_stamped(s: &UdpSocket, buf: &mut [u8]) -> Option<(usize, u64)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 16];
    // SAFETY: msghdr is plain data; all-zero is valid before the fields are set.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: msg points to live buffers for the duration of the call.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return None;
    }
    // SAFETY: walking the control messages the kernel wrote into cbuf.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some((
                    n as usize,
                    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
                ));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    None
}

#[test]
fn rate_delay_and_loss_through_namespaces() {
    if let Err(e) = check_environment() {
        // Straight to the stderr handle: the test harness captures print! and eprint!.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIP emulator accuracy test: {e}");
        return;
    }
    let spec = TestbedSpec {
        links: vec![
            link("fast", 100, 20, 0.0),
            link("lossy", 20, 5, 0.1),
            traced(),
        ],
        clients: 0,
        mptcp_endpoints: false,
        emu: EmuOptions {
            seed: 3,
            ..EmuOptions::default()
        },
    };
    let tb = Testbed::new(&spec).expect("testbed");
    // The host's CPU time from here to the end: the write lateness's tail is judged only if the
    // hypervisor left the CPUs alone (STOLEN_TAIL_LIMIT), as the delay's is.
    let whole_run = host_jiffies();
    let fast_r: SocketAddr = (tb.router_addr("fast").unwrap(), 9000).into();
    let fast_s: SocketAddr = (tb.server_link_addr("fast").unwrap(), 9001).into();

    // Delay: 2000 small datagrams, one per ms: no queueing, so one-way delay = 20 ms plus the
    // 228 B serialisation (18.24 us). The bound (delay within 1 ms) is the mean and
    // median. The tail is bounded more loosely, and it is the host's as much as the emulator's:
    // idle runs give p99 0.06-0.27 ms, but right after the gateway tests, while the kernel
    // still tears down their namespaces on one of the two cores, a clean-clone CI run measured
    // p99 1.09 ms and one on a slower host 3.27 ms (median 0.22 ms), where the same test binary run
    // alone right after passed three times out of three. On 2026-11-29 a clean-clone CI run
    // failed two attempts (p99 2.04 and 3.63 ms), and the test binary run alone on the idle
    // host gave p99 1.0 to 7.5 ms attempt by attempt (median 0.05 to 0.22 ms) while the
    // hypervisor took 5.8 % of both vCPUs' time (389 of 6726 jiffies, /proc/stat's steal). So
    // the measurement is taken up to four times, 2 s apart, and one within every bound passes
    // (an emulator that misses them misses them every time); each attempt says how busy the
    // host was and how much of its time the hypervisor took. When no attempt is within every
    // bound, but one met all except the tail's while the hypervisor took more than
    // STOLEN_TAIL_LIMIT of the time, the tail measured the hypervisor: the test passes, saying
    // on stderr that the tail was not judged.
    let expect_ns = 20_000_000.0 + 228.0 * 8.0 / 100e6 * 1e9;
    let mut failures = Vec::new();
    // The first attempt within every bound but the tail's while the hypervisor stole time.
    let mut unjudged: Option<String> = None;
    for attempt in 1..=4 {
        if attempt > 1 {
            std::thread::sleep(Duration::from_secs(2));
        }
        let before = host_jiffies();
        let got = probe(
            &tb,
            fast_s,
            fast_r,
            Pattern {
                n: 2000,
                payload: 200,
                burst: 1,
                gap: Duration::from_millis(1),
                wait: Duration::from_millis(200),
            },
        );
        assert!(
            got.len() >= 1990,
            "only {} of 2000 delay probes arrived",
            got.len()
        );
        let (stolen, host) = host_share(before, host_jiffies());
        let err_us = sorted_delay_errors_us(&got, expect_ns);
        let q = |f: f64| err_us[((err_us.len() - 1) as f64 * f) as usize];
        let mean = err_us.iter().sum::<f64>() / err_us.len() as f64;
        let stats = format!(
            "delay error vs 20.018 ms (us), attempt {attempt} (host {host}): min {:.1} median {:.1} mean {:.1} p99 {:.1} max {:.1}",
            err_us[0],
            q(0.5),
            mean,
            q(0.99),
            err_us[err_us.len() - 1]
        );
        println!("{stats}");
        let core = mean.abs() < 1000.0 && q(0.5).abs() < 1000.0 && err_us[0] > -1000.0;
        if core && q(0.99) < 2000.0 {
            failures.clear();
            unjudged = None;
            break;
        }
        if core && stolen.is_some_and(|s| s > STOLEN_TAIL_LIMIT) {
            unjudged.get_or_insert_with(|| stats.clone());
        }
        failures.push(stats);
    }
    if let Some(stats) = unjudged {
        note_tail_not_judged("delay", &stats);
        failures.clear();
    }
    assert!(
        failures.is_empty(),
        "delay error out of bounds (mean and median within 1 ms, p99 below 2 ms, none 1 ms early) in all four attempts: {failures:?}"
    );

    // Rate: 2.5 s of 1500 B IP packets offered at 120 Mbit/s (10 per ms) into the 100 Mbit/s link;
    // the received rate over the middle 2 s must be within 5 %.
    let got = probe(
        &tb,
        fast_s,
        fast_r,
        Pattern {
            n: 25_000,
            payload: 1472,
            burst: 10,
            gap: Duration::from_millis(1),
            wait: Duration::from_millis(300),
        },
    );
    let first = got
        .iter()
        .map(|(_, s)| *s)
        .min()
        .expect("rate probes arrived");
    let (lo, hi) = (first + 300_000_000, first + 2_300_000_000);
    let n = got.iter().filter(|(r, _)| (lo..hi).contains(r)).count();
    let rate = n as f64 * 1500.0 * 8.0 / ((hi - lo) as f64 / 1e9);
    println!(
        "rate: {:.2} Mbit/s of 100 configured ({} packets in 2 s)",
        rate / 1e6,
        n
    );
    assert!(
        (rate / 100e6 - 1.0).abs() < 0.05,
        "rate {rate} bit/s vs 100 Mbit/s"
    );

    // Reverse direction (router -> server) of the same link: 20 ms as well.
    let got = probe(
        &tb,
        fast_r,
        fast_s,
        Pattern {
            n: 500,
            payload: 200,
            burst: 1,
            gap: Duration::from_millis(1),
            wait: Duration::from_millis(200),
        },
    );
    assert!(
        got.len() >= 495,
        "only {} of 500 reverse probes arrived",
        got.len()
    );
    let rev_us = sorted_delay_errors_us(&got, expect_ns);
    let rev_median = rev_us[rev_us.len() / 2];
    println!(
        "reverse delay error (us): median {:.1} max {:.1}",
        rev_median,
        rev_us[rev_us.len() - 1]
    );
    assert!(
        rev_median.abs() < 1000.0,
        "reverse delay error {rev_median} us"
    );

    // Mahimahi trace: 1500 B packets offered at 12 Mbit/s into the 8 Mbit/s trace for 2.5 s.
    let tr_r: SocketAddr = (tb.router_addr("traced").unwrap(), 9000).into();
    let tr_s: SocketAddr = (tb.server_link_addr("traced").unwrap(), 9001).into();
    let got = probe(
        &tb,
        tr_s,
        tr_r,
        Pattern {
            n: 2500,
            payload: 1472,
            burst: 1,
            gap: Duration::from_millis(1),
            wait: Duration::from_millis(300),
        },
    );
    let first = got
        .iter()
        .map(|(_, s)| *s)
        .min()
        .expect("trace probes arrived");
    let (lo, hi) = (first + 300_000_000, first + 2_300_000_000);
    let n = got.iter().filter(|(r, _)| (lo..hi).contains(r)).count();
    let trace_rate = n as f64 * 1500.0 * 8.0 / 2.0;
    println!(
        "trace rate: {:.3} Mbit/s of 8 ({} packets in 2 s)",
        trace_rate / 1e6,
        n
    );
    assert!(
        (trace_rate / 8e6 - 1.0).abs() < 0.05,
        "trace rate {trace_rate} bit/s vs 8 Mbit/s"
    );

    // Loss: 5000 datagrams at 2 per ms through a link with loss 0.1.
    let lossy_r: SocketAddr = (tb.router_addr("lossy").unwrap(), 9000).into();
    let lossy_s: SocketAddr = (tb.server_link_addr("lossy").unwrap(), 9001).into();
    let got = probe(
        &tb,
        lossy_s,
        lossy_r,
        Pattern {
            n: 5000,
            payload: 200,
            burst: 2,
            gap: Duration::from_millis(1),
            wait: Duration::from_millis(200),
        },
    );
    let loss = 1.0 - got.len() as f64 / 5000.0;
    println!("loss: {:.4} of 0.1 configured", loss);
    assert!(
        (loss / 0.1 - 1.0).abs() < 0.2,
        "measured loss {loss} vs 0.1"
    );

    let report = tb.finish().unwrap();
    let (stolen, host) = host_share(whole_run, host_jiffies());
    let l = &report.lateness;
    let lateness = format!(
        "emulator write lateness (us, host {host}): mean {:.1} p50 {:.0} p99 {:.0} p99.9 {:.0} max {:.0} over {} packets",
        l.mean_us, l.p50_us, l.p99_us, l.p999_us, l.max_us, l.packets
    );
    println!("{lateness}");
    assert_eq!(
        report.links[1].data.random_losses as usize,
        5000 - got.len()
    );
    // Timing of every packet the emulator wrote, including the 100 Mbit/s phase: well under 1 ms
    // on average (below); the tail within 2 ms (see the delay tail above), judged unless the
    // hypervisor took more than STOLEN_TAIL_LIMIT of the CPUs' time over the run. A clean-clone
    // CI run on 2026-11-29 measured p99 2380 us and mean 141 us while it took 6 to 17 % during
    // the delay attempts.
    if stolen.is_some_and(|s| s > STOLEN_TAIL_LIMIT) && report.lateness.p99_us >= 2000.0 {
        note_tail_not_judged("write lateness", &lateness);
    } else {
        assert!(
            report.lateness.p99_us < 2000.0,
            "p99 write lateness {} us: {lateness}",
            report.lateness.p99_us
        );
    }
    assert!(
        report.lateness.mean_us < 250.0,
        "mean write lateness {} us",
        report.lateness.mean_us
    );
}
