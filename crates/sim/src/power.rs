//! The BOND paper's analytic power model of two bonded wireless interfaces (seeds.md section 5;
//! shared/seeds/004_3aa6be496264816a.txt, section IV, equations 1-3 and Table 1).
//!
//! Packets arrive as a Poisson process of rate lambda and are split between the interfaces by
//! the scheduling weights alpha and beta = 1 - alpha; each interface has its own queue (at most
//! P and Q packets) and exponential service of rate mu1, mu2; bonded, the pair serves at mu /
//! gamma (gamma >= 1: the closer to 1, the better the scheme uses both). The queues form a
//! product-form two-dimensional Markov chain, equation 1:
//!
//! ```text
//! p(i, j) = (alpha gamma rho1)^i (beta gamma rho2)^j p(0, 0),   rho1 = lambda / mu1, rho2 = lambda / mu2
//! p(0, 0) = (1 - alpha gamma rho1) (1 - beta gamma rho2)
//! u(0)    = exp(-alpha lambda tau),   v(0) = exp(-beta lambda tau)
//! ```
//!
//! An interface sleeps once it has had nothing to send for tau and wakes at once when a packet
//! comes; u(0) and v(0) are the probabilities that no packet reaches it within tau. The four
//! states and their probabilities (equation 2 and its mirror):
//!
//! ```text
//! both asleep       p(0,0) u(0) v(0)
//! 1 active, 2 asleep  sum_{i=1..P} p(i,0) v(0) + p(0,0) (1 - u(0)) v(0)
//! 1 asleep, 2 active  sum_{j=1..Q} p(0,j) u(0) + p(0,0) u(0) (1 - v(0))
//! both active       the rest: 1 + p(0,0) u(0) v(0) - p(0,0) (u(0) + v(0))
//!                             - sum p(i,0) v(0) - sum p(0,j) u(0)
//! ```
//!
//! and the average power, equation 3, weighs each state by its draw: `Psleep + Qsleep`,
//! `Pactive + Qsleep`, `Psleep + Qactive`, `Pactive + Qactive` (P for interface 1, Q for 2).
//! The equations are the paper's as printed: p(0,0) is the infinite-queue normalisation, P and Q
//! bound only the sums.

/// An interface pair's draw, mW: (active, sleep) of interface 1 (802.11a in the paper) and 2
/// (802.11g).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    pub active_1_mw: f64,
    pub sleep_1_mw: f64,
    pub active_2_mw: f64,
    pub sleep_2_mw: f64,
}

/// The paper's Table 1 (Atheros chipsets).
pub const PROFILES: [Profile; 2] = [
    Profile {
        name: "AR5213 (1.8 V supply)",
        active_1_mw: 126.0,
        sleep_1_mw: 10.8,
        active_2_mw: 126.0,
        sleep_2_mw: 10.8,
    },
    Profile {
        name: "AR9170 (5 V supply)",
        active_1_mw: 1290.0,
        sleep_1_mw: 930.0,
        active_2_mw: 1085.0,
        sleep_2_mw: 820.0,
    },
];

/// gamma from the paper's measurements: (scheme, wired delay ms, gamma).
pub const PAPER_GAMMA: [(&str, f64, f64); 4] = [
    ("mptcp", 50.0, 1.12),
    ("bonding", 50.0, 1.39),
    ("mptcp", 100.0, 1.84),
    ("bonding", 100.0, 1.39),
];

/// The model's inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inputs {
    /// Packet arrival rate, packets/s.
    pub lambda: f64,
    /// Service rates of interfaces 1 and 2, packets/s.
    pub mu1: f64,
    pub mu2: f64,
    /// Weight of interface 1 (alpha); interface 2 gets beta = 1 - alpha.
    pub alpha: f64,
    pub gamma: f64,
    /// Time without anything to send before an interface sleeps, s.
    pub tau_s: f64,
    /// Queue limits P and Q, packets.
    pub queue_1: u32,
    pub queue_2: u32,
    pub profile: Profile,
}

/// The model's result: the state probabilities and the average power.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Output {
    pub both_asleep: f64,
    pub only_1_active: f64,
    pub only_2_active: f64,
    pub both_active: f64,
    pub p_avg_mw: f64,
}

/// Equations 1-3. An error names the input that is out of range, or says which queue the load
/// makes unstable (alpha gamma rho1 >= 1 or beta gamma rho2 >= 1: no steady state).
pub fn analytic(x: &Inputs) -> Result<Output, String> {
    let finite_pos = |v: f64| v.is_finite() && v > 0.0;
    if !(x.lambda.is_finite() && x.lambda >= 0.0) {
        return Err(format!(
            "lambda: expected packets/s >= 0, found {}",
            x.lambda
        ));
    }
    if !finite_pos(x.mu1) || !finite_pos(x.mu2) {
        return Err(format!(
            "mu1, mu2: expected packets/s > 0, found {} and {}",
            x.mu1, x.mu2
        ));
    }
    if !(0.0..=1.0).contains(&x.alpha) {
        return Err(format!("alpha: expected 0 ..= 1, found {}", x.alpha));
    }
    if !(x.gamma.is_finite() && x.gamma >= 1.0) {
        return Err(format!("gamma: expected >= 1, found {}", x.gamma));
    }
    if !(x.tau_s.is_finite() && x.tau_s >= 0.0) {
        return Err(format!("tau: expected seconds >= 0, found {}", x.tau_s));
    }
    let beta = 1.0 - x.alpha;
    let a = x.alpha * x.gamma * x.lambda / x.mu1;
    let b = beta * x.gamma * x.lambda / x.mu2;
    if a >= 1.0 || b >= 1.0 {
        return Err(format!(
            "unstable: alpha gamma rho1 = {a:.4} and beta gamma rho2 = {b:.4} must both be below 1 (lambda {} packets/s is more than the pair serves)",
            x.lambda
        ));
    }
    let p00 = (1.0 - a) * (1.0 - b);
    let u0 = (-x.alpha * x.lambda * x.tau_s).exp();
    let v0 = (-beta * x.lambda * x.tau_s).exp();
    // sum_{i=1..n} r^i p(0,0), term by term.
    let sum = |r: f64, n: u32| -> f64 {
        let mut term = p00;
        let mut s = 0.0;
        for _ in 0..n {
            term *= r;
            s += term;
        }
        s
    };
    let (s1, s2) = (sum(a, x.queue_1), sum(b, x.queue_2));
    let both_asleep = p00 * u0 * v0;
    let only_1_active = s1 * v0 + p00 * (1.0 - u0) * v0;
    let only_2_active = s2 * u0 + p00 * u0 * (1.0 - v0);
    let both_active = 1.0 + p00 * u0 * v0 - p00 * (u0 + v0) - s1 * v0 - s2 * u0;
    let p = &x.profile;
    let p_avg_mw = (p.sleep_1_mw + p.sleep_2_mw) * both_asleep
        + (p.active_1_mw + p.sleep_2_mw) * only_1_active
        + (p.sleep_1_mw + p.active_2_mw) * only_2_active
        + (p.active_1_mw + p.active_2_mw) * both_active;
    Ok(Output {
        both_asleep,
        only_1_active,
        only_2_active,
        both_active,
        p_avg_mw,
    })
}

/// The simulated counterpart of the model's sleep rule for one interface (a bond member's
/// data direction): it is awake from the moment a packet reaches its queue while asleep until
/// `tau` after its queue last emptied, asleep otherwise (the paper's section IV: "sleeps after
/// tau with nothing to send, wakes at once when a packet arrives"). Waking costs nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AwakeClock {
    tau: railpath_core::Time,
    /// Start of the current (or last) awake period.
    since: railpath_core::Time,
    /// While idle: when the interface falls asleep; `None` while it has packets.
    until: Option<railpath_core::Time>,
    /// Whether any packet has come (before the first the interface is asleep).
    started: bool,
    /// Awake time of the finished periods.
    awake: railpath_core::Time,
}

impl AwakeClock {
    pub fn new(tau: railpath_core::Time) -> AwakeClock {
        use railpath_core::Time;
        AwakeClock {
            tau,
            since: Time::ZERO,
            until: Some(Time::ZERO),
            started: false,
            awake: Time::ZERO,
        }
    }

    /// A packet reaches the queue at `now`.
    #[inline]
    pub fn packet(&mut self, now: railpath_core::Time) {
        match self.until {
            None => {}
            Some(u) if self.started && now <= u => self.until = None,
            Some(u) => {
                if self.started {
                    self.awake += u - self.since;
                }
                self.started = true;
                self.since = now;
                self.until = None;
            }
        }
    }

    /// The queue emptied at `now` (the last packet left the server, or was dropped).
    #[inline]
    pub fn idle(&mut self, now: railpath_core::Time) {
        if self.until.is_none() {
            self.until = Some(now + self.tau);
        }
    }

    /// Seconds awake from 0 to `end`.
    pub fn awake_s(&self, end: railpath_core::Time) -> f64 {
        let open = match (self.started, self.until) {
            (false, _) => railpath_core::Time::ZERO,
            (true, None) => end.saturating_sub(self.since),
            (true, Some(u)) => u.min(end).saturating_sub(self.since.min(end)),
        };
        (self.awake + open).secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9
    }

    #[test]
    fn profile_1_equal_weights() {
        // lambda 5, mu1 20, mu2 10: rho 0.25 and 0.5; alpha = beta = 0.5, gamma 1.12 (MPTCP at
        // 50 ms): a = 0.5 x 1.12 x 0.25 = 0.14, b = 0.28; p(0,0) = 0.86 x 0.72 = 0.6192;
        // u(0) = v(0) = exp(-0.5 x 5 x 0.2) = exp(-0.5) = 0.6065306597126334;
        // P = Q = 3: S1 = 0.6192 (0.14 + 0.0196 + 0.002744) = 0.1005234048,
        // S2 = 0.6192 (0.28 + 0.0784 + 0.021952) = 0.2355139584.
        // States: 0.22779094997335705, 0.20874336155060963, 0.29061927108059127,
        // 0.272846417395442; power 21.6 w1 + 136.8 (w2 + w3) + 252 w4.
        let o = analytic(&Inputs {
            lambda: 5.0,
            mu1: 20.0,
            mu2: 10.0,
            alpha: 0.5,
            gamma: 1.12,
            tau_s: 0.2,
            queue_1: 3,
            queue_2: 3,
            profile: PROFILES[0],
        })
        .unwrap();
        assert!(close(o.both_asleep, 0.22779094997335705), "{o:?}");
        assert!(close(o.only_1_active, 0.20874336155060963), "{o:?}");
        assert!(close(o.only_2_active, 0.29061927108059127), "{o:?}");
        assert!(close(o.both_active, 0.272846417395442), "{o:?}");
        assert!(close(o.p_avg_mw, 141.99038984702418), "{o:?}");
    }

    #[test]
    fn profile_2_unequal_weights_and_queues() {
        // lambda 20, mu1 100, mu2 80, alpha 0.6, gamma 1.39 (bonding): a = 0.6 x 1.39 x 0.2 =
        // 0.1668, b = 0.4 x 1.39 x 0.25 = 0.139; p(0,0) = 0.8332 x 0.861 = 0.7173852;
        // u(0) = exp(-2.4), v(0) = exp(-1.6); P = 5, Q = 4.
        let o = analytic(&Inputs {
            lambda: 20.0,
            mu1: 100.0,
            mu2: 80.0,
            alpha: 0.6,
            gamma: 1.39,
            tau_s: 0.2,
            queue_1: 5,
            queue_2: 4,
            profile: PROFILES[1],
        })
        .unwrap();
        assert!(close(o.both_asleep, 0.01313936826732234), "{o:?}");
        assert!(close(o.p_avg_mw, 2301.725653492663), "{o:?}");
        let total = o.both_asleep + o.only_1_active + o.only_2_active + o.both_active;
        assert!(close(total, 1.0));
    }

    #[test]
    fn power_rises_with_lambda_and_bad_inputs_are_named() {
        let base = Inputs {
            lambda: 1.0,
            mu1: 500.0,
            mu2: 400.0,
            alpha: 0.5,
            gamma: 1.39,
            tau_s: 0.2,
            queue_1: 100,
            queue_2: 100,
            profile: PROFILES[1],
        };
        let mut last = 0.0;
        for l in [1.0, 10.0, 50.0, 100.0, 200.0] {
            let p = analytic(&Inputs { lambda: l, ..base }).unwrap().p_avg_mw;
            assert!(p > last, "{l}: {p}");
            last = p;
        }
        // No traffic: both asleep, the sleep draw.
        let idle = analytic(&Inputs {
            lambda: 0.0,
            ..base
        })
        .unwrap();
        assert!(close(idle.p_avg_mw, 930.0 + 820.0));
        let e = analytic(&Inputs {
            lambda: 600.0,
            ..base
        })
        .unwrap_err();
        assert!(e.starts_with("unstable"), "{e}");
        let e = analytic(&Inputs { gamma: 0.9, ..base }).unwrap_err();
        assert!(e.starts_with("gamma"), "{e}");
        let e = analytic(&Inputs { alpha: 1.5, ..base }).unwrap_err();
        assert!(e.starts_with("alpha"), "{e}");
        let e = analytic(&Inputs { mu2: 0.0, ..base }).unwrap_err();
        assert!(e.starts_with("mu1, mu2"), "{e}");
    }

    #[test]
    fn awake_clock_sleeps_tau_after_the_queue_empties() {
        use super::AwakeClock;
        use railpath_core::Time;
        let ms = Time::from_ms;
        let mut c = AwakeClock::new(ms(200));
        // Asleep until the first packet at 1 s; it leaves at 1.001 s: awake until 1.201 s.
        c.packet(ms(1000));
        c.idle(ms(1001));
        // A packet at 1.1 s (still awake) extends the period: it leaves at 1.102 -> 1.302 s.
        c.packet(ms(1100));
        c.idle(ms(1102));
        // A packet at 2 s after sleeping: a new period, open at the end (3 s).
        c.packet(ms(2000));
        // 0.302 s + (3 - 2) s.
        assert!((c.awake_s(ms(3000)) - 1.302).abs() < 1e-12);
        c.idle(ms(2500));
        // Closed at 2.7 s: 0.302 + 0.7; an end inside a period cuts it.
        assert!((c.awake_s(ms(3000)) - 1.002).abs() < 1e-12);
        assert!((c.awake_s(ms(2600)) - 0.902).abs() < 1e-12);
        // Never a packet: never awake.
        assert_eq!(AwakeClock::new(ms(200)).awake_s(ms(5000)), 0.0);
    }
}
