//! The PHA-D decision rule: which carriers' MPTCP endpoints should be backup now. One
//! implementation of zone, lead and margin, used by the onboard gateway (`railpath-gateway`'s
//! controller, on live GPS) and by the simulator's `mechanisms = ["pha-d"]` (on the train's
//! simulated position).
//!
//! Source: PHA paper, seeds.md section 1 ("PHA-D (downlink, no server change)"): normal mode is
//! all subflows regular; at least one RTT before a predicted handover zone the train sends
//! MP_PRIO B=1 for that carrier's subflows (a sender does not use a backup path while a regular
//! one is up, RFC 8684 section 3.3.8); at most one RTT before the predicted end of the zone it
//! sends MP_PRIO B=0. Zones come from the learned handover table through
//! `railpath_radio::table::Predictor` (position-based, PHA Algorithm 1).
//!
//! Rule, for each configured carrier, with `lead` (ahead of a zone's start: one RTT unless
//! configured) and `back` (ahead of its end: one RTT):
//! - backup iff some zone of the carrier has `enters_in <= lead` (this includes being in it) and
//!   the train will not leave it within `back` (`leaves_in > back`, or unknown because stopped);
//!
//! The two margins are separate because they cover different delays. Going backup must happen
//! early enough for the MP_PRIO to reach the sender (half an RTT) *and* for the data the sender
//! has already committed to that subflow to drain: on Linux a bulk sender keeps its subflows'
//! write queues full (1.1-1.6 MB each at 20 Mbit/s in the testbed, 0.5-0.65 s), so on a real
//! stack the paper's "at least one RTT" means RTT plus that drain time (`lead_time_ms`). Coming
//! back needs only the MP_PRIO's half RTT plus the new data's half RTT: "at most one RTT before
//! the predicted end" (seeds.md section 1).
//! - if this would make every carrier backup, the one whose zone is entered last (ties: the one
//!   left first, then by name) stays regular: PHA relies on one healthy path at all times, and
//!   with every path backup the kernel would use them all anyway;
//! - no position, a stale position (older than `stale_after`) or an off-track position: every
//!   carrier regular (the safe state: plain MPTCP) and the reason is reported;
//! - a carrier the table does not know is never flipped (it stays regular).
//!
//! The position used is dead-reckoned from the last fix: `position_m + speed_mps * age`.

use crate::table::Predictor;
use railpath_core::Time;

/// A position fix along the track.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fix {
    pub position_m: f64,
    /// Along-track speed, positive towards increasing position.
    pub speed_mps: f64,
}

/// Why a carrier has the state it has.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// No zone within the lead time.
    Clear,
    /// A zone starts within the lead time (or the train is in one) and it does not end within it.
    ZoneAhead {
        start_m: f64,
        end_m: f64,
        enters_in: Time,
        /// What the zone holds (handovers, or failures learned there): the gateway's log says it.
        kind: crate::ZoneKind,
    },
    /// In a zone that ends within `back` (one RTT): back to regular before its end.
    LeavingZone { end_m: f64, leaves_in: Time },
    /// Kept regular so that one carrier stays regular.
    LastRegular,
    /// The table has no entry for this carrier.
    UnknownCarrier,
    /// Position lost or stale: everything regular.
    Fallback(FallbackReason),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackReason {
    NoPosition,
    Stale,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CarrierDecision {
    pub carrier: String,
    pub backup: bool,
    pub reason: Reason,
}

/// Decides every carrier's state. `fix` is the latest fix and its age; `None` when there is none.
pub fn decide(
    predictor: &Predictor,
    carriers: &[String],
    fix: Option<(Fix, Time)>,
    lead: Time,
    back: Time,
    stale_after: Time,
) -> Vec<CarrierDecision> {
    let all_regular = |r: FallbackReason| {
        carriers
            .iter()
            .map(|c| CarrierDecision {
                carrier: c.clone(),
                backup: false,
                reason: Reason::Fallback(r),
            })
            .collect()
    };
    let (f, age) = match fix {
        None => return all_regular(FallbackReason::NoPosition),
        Some((_, age)) if age > stale_after => return all_regular(FallbackReason::Stale),
        Some((f, _)) if !f.position_m.is_finite() || !f.speed_mps.is_finite() => {
            return all_regular(FallbackReason::NoPosition)
        }
        Some(x) => x,
    };
    // Dead reckoning between fixes (GPS gives 1-10 fixes/s; PHA samples position every 10 ms).
    let f = Fix {
        position_m: f.position_m + f.speed_mps * age.secs_f64(),
        ..f
    };
    let known = predictor.known_carriers();
    let mut out: Vec<CarrierDecision> = carriers
        .iter()
        .map(|c| {
            if !known.contains(&c.as_str()) {
                return CarrierDecision {
                    carrier: c.clone(),
                    backup: false,
                    reason: Reason::UnknownCarrier,
                };
            }
            let preds = predictor
                .predict_carrier(c, f.position_m, f.speed_mps, lead.max(back))
                .unwrap_or_default();
            let mut reason = Reason::Clear;
            let mut backup = false;
            for p in &preds {
                let Some(enters) = p.enters_in else { continue };
                if enters > lead {
                    continue;
                }
                match p.leaves_in {
                    Some(l) if l <= back => {
                        if !backup {
                            reason = Reason::LeavingZone {
                                end_m: p.zone_end_m,
                                leaves_in: l,
                            };
                        }
                    }
                    _ => {
                        backup = true;
                        reason = Reason::ZoneAhead {
                            start_m: p.zone_start_m,
                            end_m: p.zone_end_m,
                            enters_in: enters,
                            kind: p.kind,
                        };
                        break;
                    }
                }
            }
            CarrierDecision {
                carrier: c.clone(),
                backup,
                reason,
            }
        })
        .collect();
    if !out.is_empty() && out.iter().all(|d| d.backup) {
        // Keep the carrier entering its zone last regular.
        let key = |d: &CarrierDecision| match d.reason {
            Reason::ZoneAhead { enters_in, .. } => enters_in,
            _ => Time::ZERO,
        };
        let mut best = 0;
        for i in 1..out.len() {
            if key(&out[i]) > key(&out[best]) {
                best = i;
            }
        }
        out[best].backup = false;
        out[best].reason = Reason::LastRegular;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::HandoverTable;

    fn table() -> Predictor {
        let t = HandoverTable::from_json_str(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 50,
                "carriers": {"A": {"zones": [{"start_m": 1000.0, "end_m": 1100.0, "count": 50}], "runs": 50},
                             "B": {"zones": [{"start_m": 2000.0, "end_m": 2040.0, "count": 50}], "runs": 50}}}"#,
            "t.json",
        )
        .unwrap();
        Predictor::new(&t)
    }

    fn names() -> Vec<String> {
        vec!["A".into(), "B".into()]
    }

    const LEAD: Time = Time::from_ms(100);
    const STALE: Time = Time::from_secs(2);

    fn at(pos: f64, v: f64) -> Option<(Fix, Time)> {
        Some((
            Fix {
                position_m: pos,
                speed_mps: v,
            },
            Time::ZERO,
        ))
    }

    fn backups(d: &[CarrierDecision]) -> Vec<bool> {
        d.iter().map(|x| x.backup).collect()
    }

    #[test]
    fn backup_one_lead_time_before_zone_not_earlier() {
        let p = table();
        // At 100 m/s, 100 ms is 10 m: 991 m is 90 ms before the zone -> backup.
        let d = decide(&p, &names(), at(991.0, 100.0), LEAD, LEAD, STALE);
        assert_eq!(backups(&d), [true, false]);
        assert!(matches!(d[0].reason, Reason::ZoneAhead { start_m, .. } if start_m == 1000.0));
        // 985 m is 150 ms before -> not yet.
        let d = decide(&p, &names(), at(985.0, 100.0), LEAD, LEAD, STALE);
        assert_eq!(backups(&d), [false, false]);
        assert_eq!(d[0].reason, Reason::Clear);
    }

    #[test]
    fn regular_again_one_lead_time_before_zone_end() {
        let p = table();
        // In the zone, 1085 m: leaves in 150 ms -> still backup.
        assert_eq!(
            backups(&decide(&p, &names(), at(1085.0, 100.0), LEAD, LEAD, STALE)),
            [true, false]
        );
        // 1095 m: leaves in 50 ms <= 100 ms -> regular.
        let d = decide(&p, &names(), at(1095.0, 100.0), LEAD, LEAD, STALE);
        assert_eq!(backups(&d), [false, false]);
        assert!(matches!(d[0].reason, Reason::LeavingZone { end_m, .. } if end_m == 1100.0));
        // Past the zone -> clear.
        assert_eq!(
            decide(&p, &names(), at(1101.0, 100.0), LEAD, LEAD, STALE)[0].reason,
            Reason::Clear
        );
    }

    #[test]
    fn entry_lead_and_return_margin_are_separate() {
        let p = table();
        // Lead 1 s, back 100 ms, 100 m/s: zone A [1000, 1100] m.
        let (lead, back) = (Time::from_secs(1), Time::from_ms(100));
        // 905 m: enters in 950 ms <= 1 s, leaves in 1950 ms -> backup.
        let d = decide(&p, &names(), at(905.0, 100.0), lead, back, STALE);
        assert_eq!(backups(&d), [true, false]);
        // 895 m: enters in 1050 ms -> not yet.
        let d = decide(&p, &names(), at(895.0, 100.0), lead, back, STALE);
        assert_eq!(backups(&d), [false, false]);
        // 1005 m: leaves in 950 ms, within the lead but not within back -> still backup
        // (with one margin for both, a 1 s lead would end the backup 0.9 s before the zone end).
        let d = decide(&p, &names(), at(1005.0, 100.0), lead, back, STALE);
        assert_eq!(backups(&d), [true, false]);
        // 1085 m: leaves in 150 ms -> backup; 1095 m: leaves in 50 ms <= 100 ms -> regular.
        let d = decide(&p, &names(), at(1085.0, 100.0), lead, back, STALE);
        assert_eq!(backups(&d), [true, false]);
        let d = decide(&p, &names(), at(1095.0, 100.0), lead, back, STALE);
        assert_eq!(backups(&d), [false, false]);
        assert!(matches!(d[0].reason, Reason::LeavingZone { end_m, .. } if end_m == 1100.0));
    }

    #[test]
    fn direction_of_travel_is_respected() {
        let p = table();
        // Moving backwards at 1105 m: zone A (ends at 1100) is 50 ms ahead -> backup.
        assert_eq!(
            backups(&decide(&p, &names(), at(1105.0, -100.0), LEAD, LEAD, STALE)),
            [true, false]
        );
        // Moving backwards at 995 m: zone A is behind -> clear.
        assert_eq!(
            backups(&decide(&p, &names(), at(995.0, -100.0), LEAD, LEAD, STALE)),
            [false, false]
        );
    }

    #[test]
    fn position_is_dead_reckoned_from_fix_age() {
        let p = table();
        // Fix at 900 m, 100 m/s, 950 ms old -> 995 m now: zone A in 50 ms -> backup.
        let old = Some((
            Fix {
                position_m: 900.0,
                speed_mps: 100.0,
            },
            Time::from_ms(950),
        ));
        assert_eq!(
            backups(&decide(&p, &names(), old, LEAD, LEAD, STALE)),
            [true, false]
        );
        let fresh = Some((
            Fix {
                position_m: 900.0,
                speed_mps: 100.0,
            },
            Time::ZERO,
        ));
        assert_eq!(
            backups(&decide(&p, &names(), fresh, LEAD, LEAD, STALE)),
            [false, false]
        );
    }

    #[test]
    fn stopped_in_zone_stays_backup() {
        let p = table();
        assert_eq!(
            backups(&decide(&p, &names(), at(1050.0, 0.0), LEAD, LEAD, STALE)),
            [true, false]
        );
    }

    #[test]
    fn stale_or_missing_position_falls_back_to_all_regular() {
        let p = table();
        let stale = Some((
            Fix {
                position_m: 1050.0,
                speed_mps: 100.0,
            },
            Time::from_ms(2001),
        ));
        let d = decide(&p, &names(), stale, LEAD, LEAD, STALE);
        assert_eq!(backups(&d), [false, false]);
        assert_eq!(d[1].reason, Reason::Fallback(FallbackReason::Stale));
        let d = decide(&p, &names(), None, LEAD, LEAD, STALE);
        assert_eq!(d[0].reason, Reason::Fallback(FallbackReason::NoPosition));
        let d = decide(&p, &names(), at(f64::NAN, 1.0), LEAD, LEAD, STALE);
        assert_eq!(d[0].reason, Reason::Fallback(FallbackReason::NoPosition));
    }

    #[test]
    fn unknown_carrier_is_never_flipped() {
        let p = table();
        let d = decide(
            &p,
            &["A".into(), "Z".into()],
            at(1050.0, 0.0),
            LEAD,
            LEAD,
            STALE,
        );
        assert_eq!(backups(&d), [true, false]);
        assert_eq!(d[1].reason, Reason::UnknownCarrier);
    }

    #[test]
    fn one_carrier_always_stays_regular() {
        // Overlapping zones: A entered (in zone), B 50 ms ahead -> B (entered last) stays regular.
        let t = HandoverTable::from_json_str(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 1,
                "carriers": {"A": {"zones": [{"start_m": 1000.0, "end_m": 1100.0, "count": 1}], "runs": 1},
                             "B": {"zones": [{"start_m": 1055.0, "end_m": 1200.0, "count": 1}], "runs": 1}}}"#,
            "t.json",
        )
        .unwrap();
        let p = Predictor::new(&t);
        let d = decide(&p, &names(), at(1050.0, 100.0), LEAD, LEAD, STALE);
        assert_eq!(backups(&d), [true, false]);
        assert_eq!(d[1].reason, Reason::LastRegular);
        // A single carrier is never made backup.
        let d = decide(&p, &["A".into()], at(1050.0, 100.0), LEAD, LEAD, STALE);
        assert_eq!(backups(&d), [false]);
    }
}
