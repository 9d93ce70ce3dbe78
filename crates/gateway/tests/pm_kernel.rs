//! The path-manager client against the real kernel, in namespaces: endpoint dump, address to id
//! resolution, SET_FLAGS backup/regular (checked with `ip mptcp endpoint show`), MP_PRIO sent on a
//! live subflow (MPTcpExtMPPrioTx) and seen by `ip mptcp monitor`. Needs root and kernel MPTCP;
//! otherwise prints SKIP and passes.

mod common;

use common::*;
use railpath_gateway::pm::PathManager;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::IpAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn set_backup_sends_mp_prio_on_live_subflows() {
    skip_if_unavailable!("set_backup_sends_mp_prio_on_live_subflows");
    let ns = Namespaces::new(&["pmc", "pms"]);
    ns.veth("pmc", "a0", "10.95.1.1/24", "pms", "a0", "10.95.1.2/24");
    ns.veth("pmc", "b0", "10.95.2.1/24", "pms", "b0", "10.95.2.2/24");
    ns.ip("pmc", &["rule", "add", "from", "10.95.2.1", "table", "102"]);
    ns.ip(
        "pmc",
        &[
            "route",
            "add",
            "10.95.1.0/24",
            "via",
            "10.95.2.2",
            "table",
            "102",
        ],
    );
    for n in ["pmc", "pms"] {
        ns.ip(
            n,
            &[
                "mptcp",
                "limits",
                "set",
                "subflow",
                "4",
                "add_addr_accepted",
                "4",
            ],
        );
    }
    ns.ip(
        "pmc",
        &[
            "mptcp",
            "endpoint",
            "add",
            "10.95.2.1",
            "dev",
            "b0",
            "id",
            "2",
            "subflow",
        ],
    );
    ns.ip(
        "pmc",
        &[
            "mptcp",
            "endpoint",
            "add",
            "10.95.1.1",
            "dev",
            "a0",
            "id",
            "1",
            "subflow",
            "fullmesh",
        ],
    );

    // Monitor events in both namespaces.
    let mut monitors = Vec::new();
    for n in ["pmc", "pms"] {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &ns.name(n), "ip", "mptcp", "monitor"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        monitors.push((child, rx));
    }
    std::thread::sleep(Duration::from_millis(200));

    // A server and a client that stays connected: two subflows (a0 initial, b0 joined).
    let srv = ns.name("pms");
    let server = std::thread::spawn(move || {
        in_ns(&srv, || {
            let addr: std::net::SocketAddr = "10.95.1.2:7100".parse().unwrap();
            let (l, _) = railpath_gateway::sockopt::stream_socket(&addr, true).unwrap();
            l.set_nonblocking(false).unwrap();
            l.set_reuse_address(true).unwrap();
            l.bind(&addr.into()).unwrap();
            l.listen(4).unwrap();
            let (s, _) = l.accept().unwrap();
            let mut s: std::net::TcpStream = s.into();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            // Data both ways: MPTCP is fully established (and joins subflows) only then.
            let mut b = [0u8; 5];
            s.read_exact(&mut b).unwrap();
            s.write_all(b"ok").unwrap();
            let _ = s.read(&mut b);
        })
    });
    std::thread::sleep(Duration::from_millis(200));
    let cli = ns.name("pmc");
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (res_tx, res_rx) = std::sync::mpsc::channel();
    let client = std::thread::spawn(move || {
        in_ns(&cli, move || {
            let addr: std::net::SocketAddr = "10.95.1.2:7100".parse().unwrap();
            let (s, _) = railpath_gateway::sockopt::stream_socket(&addr, true).unwrap();
            s.set_nonblocking(false).unwrap();
            s.connect(&addr.into()).unwrap();
            let mut s: std::net::TcpStream = s.into();
            s.write_all(b"hello").unwrap();
            let mut b = [0u8; 2];
            s.read_exact(&mut b).unwrap();
            std::thread::sleep(Duration::from_millis(500)); // let the join complete
            let before = mpprio_tx();
            let mut pm = PathManager::open().unwrap();
            let eps = pm.endpoints().unwrap();
            let id_b = pm.endpoint_id_for(IpAddr::from([10, 95, 2, 1])).unwrap();
            pm.set_backup(2, true).unwrap();
            let show_backup = sh_out(&["ip", "mptcp", "endpoint", "show", "id", "2"]);
            let after_backup = mpprio_tx();
            pm.set_backup(2, false).unwrap();
            pm.set_backup(1, true).unwrap();
            let ep1 = pm.endpoint(1).unwrap();
            pm.set_backup(1, false).unwrap();
            let ep1_after = pm.endpoint(1).unwrap();
            let after_all = mpprio_tx();
            let missing = pm.set_backup(77, true).err().map(|e| e.to_string());
            res_tx
                .send((
                    eps,
                    id_b,
                    show_backup,
                    before,
                    after_backup,
                    after_all,
                    ep1,
                    ep1_after,
                    missing,
                ))
                .unwrap();
            let _ = done_rx.recv_timeout(Duration::from_secs(10));
            let _ = s.write_all(b"x");
        })
    });
    let (eps, id_b, show_backup, before, after_backup, after_all, ep1, ep1_after, missing) = res_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("client result");
    std::thread::sleep(Duration::from_millis(300));
    done_tx.send(()).unwrap();
    client.join().unwrap();
    server.join().unwrap();
    let mut events = Vec::new();
    for (mut child, rx) in monitors {
        let _ = child.kill();
        let _ = child.wait();
        events.extend(rx.try_iter());
    }

    assert_eq!(eps.len(), 2, "{eps:?}");
    assert_eq!(id_b, 2);
    assert!(
        show_backup.contains("backup"),
        "ip mptcp endpoint show: {show_backup}"
    );
    assert!(
        after_backup > before,
        "no MP_PRIO sent: MPPrioTx {before} -> {after_backup}"
    );
    assert!(after_all >= before + 4, "MPPrioTx {before} -> {after_all}");
    // FULLMESH survived the flips; BACKUP was set then cleared.
    assert!(
        ep1.is_backup() && ep1.flags & railpath_gateway::pm::MPTCP_PM_ADDR_FLAG_FULLMESH != 0,
        "{ep1:?}"
    );
    assert!(
        !ep1_after.is_backup()
            && ep1_after.flags & railpath_gateway::pm::MPTCP_PM_ADDR_FLAG_FULLMESH != 0
    );
    let missing = missing.expect("unknown endpoint must be an error");
    assert!(missing.contains("77"), "{missing}");
    // The peer reports each MP_PRIO it receives as an SF_PRIO event, in order.
    let prio: Vec<&String> = events.iter().filter(|l| l.contains("SF_PRIO")).collect();
    let b: Vec<&&String> = prio
        .iter()
        .filter(|l| l.contains("daddr4=10.95.2.1"))
        .collect();
    assert!(
        b.len() == 2 && b[0].contains("backup=1") && b[1].contains("backup=0"),
        "expected backup=1 then backup=0 for carrier b's subflow: {events:#?}"
    );
    let a: Vec<&&String> = prio
        .iter()
        .filter(|l| l.contains("daddr4=10.95.1.1"))
        .collect();
    assert!(
        a.len() == 2 && a[0].contains("backup=1") && a[1].contains("backup=0"),
        "expected backup=1 then backup=0 on the initial subflow: {events:#?}"
    );
}
