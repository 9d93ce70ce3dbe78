//! Redundant: the out-of-tree Linux MPTCP `redundant` scheduler (multipath-tcp.org kernel,
//! `net/mptcp/mptcp_redundant.c`): every segment is sent on every available subflow.
//!
//! Split of work: [`Scheduler::redundant`] returns `true`, and the connection sends a copy of
//! each segment on every usable subflow with cwnd space. `pick` names the subflow for the first
//! copy: the first subflow (in order) of the candidate class that has space, else wait. Backups
//! are used only when no regular subflow is usable.
//!
//! Not modelled: `mptcp_redundant.c`'s per-subflow skb pointers that let a subflow that was
//! full catch up later on segments it missed (copies are made only at first transmission).

use super::common::candidates;
use super::{ConnInfo, Decision, Scheduler, SubflowInfo};

#[derive(Debug, Default)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn pick(&mut self, subs: &[SubflowInfo], _conn: &ConnInfo) -> Decision {
        match candidates(subs).into_iter().find(|s| s.has_space) {
            Some(s) => Decision::Send(s.id),
            None => Decision::Wait,
        }
    }

    fn redundant(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::{conn, sub};
    use super::*;

    #[test]
    fn first_with_space_and_flags_redundant() {
        let mut s = Redundant;
        assert!(s.redundant());
        let subs = [sub(0, 10, 10, 10), sub(1, 50, 10, 0), sub(2, 5, 10, 0)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Send(1));
        let subs = [sub(0, 10, 10, 10), sub(1, 50, 10, 10)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Wait);
    }
}
