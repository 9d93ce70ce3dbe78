//! Train motion along the track: a speed profile of constant-acceleration phases (uniformly
//! accelerated motion, x = x0 + v0 t + a t² / 2), optional late running, and the end of the track.
//!
//! Late running (PHA paper, seeds.md §1: "trains can run minutes late") is a wait at `start_m`
//! before departure: the train then passes the same positions at times shifted by `late_start_s`.
//! Time since departure is computed in integer nanoseconds so a shifted run samples exactly the
//! same positions.

use crate::config::TrainConfig;
use railpath_core::Time;

#[derive(Debug, Clone, PartialEq)]
struct Phase {
    /// Start, seconds since departure.
    t0: f64,
    /// Distance travelled since departure at `t0`, metres.
    x0: f64,
    /// Speed at `t0`, m/s.
    v0: f64,
    /// Acceleration, m/s².
    a: f64,
}

/// Where the train is at any time of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Motion {
    phases: Vec<Phase>,
    start_m: f64,
    late_start: Time,
    track_end_m: f64,
    sample: Time,
}

impl Motion {
    /// The motion of a validated train configuration.
    pub fn new(train: &TrainConfig) -> Motion {
        let kmh = 1.0 / 3.6;
        let mut phases = Vec::new();
        match train.speed_kmh {
            Some(v) => phases.push(Phase {
                t0: 0.0,
                x0: 0.0,
                v0: v * kmh,
                a: 0.0,
            }),
            None => {
                let (mut t, mut x, mut v) =
                    (0.0, 0.0, train.initial_speed_kmh.unwrap_or(0.0) * kmh);
                for s in &train.segments {
                    let target = s.speed_kmh * kmh;
                    let acc = s.accel_mps2.unwrap_or(train.accel_mps2);
                    let a = if target > v { acc } else { -acc };
                    let t_reach = ((target - v) / a).max(0.0);
                    if t_reach >= s.duration_s {
                        phases.push(Phase {
                            t0: t,
                            x0: x,
                            v0: v,
                            a,
                        });
                        x += v * s.duration_s + 0.5 * a * s.duration_s * s.duration_s;
                        v += a * s.duration_s;
                    } else {
                        if t_reach > 0.0 {
                            phases.push(Phase {
                                t0: t,
                                x0: x,
                                v0: v,
                                a,
                            });
                            x += v * t_reach + 0.5 * a * t_reach * t_reach;
                        }
                        let cruise = s.duration_s - t_reach;
                        phases.push(Phase {
                            t0: t + t_reach,
                            x0: x,
                            v0: target,
                            a: 0.0,
                        });
                        x += target * cruise;
                        v = target;
                    }
                    t += s.duration_s;
                }
                phases.push(Phase {
                    t0: t,
                    x0: x,
                    v0: v.max(0.0),
                    a: 0.0,
                });
            }
        }
        Motion {
            phases,
            start_m: train.start_m,
            late_start: Time::from_secs_f64(train.late_start_s),
            track_end_m: train.track_length_m.unwrap_or(f64::INFINITY),
            sample: Time::from_ms_f64(train.sample_ms),
        }
    }

    /// Position sampling period.
    pub fn sample_period(&self) -> Time {
        self.sample
    }

    fn phase(&self, tau: f64) -> &Phase {
        let i = self.phases.partition_point(|p| p.t0 <= tau);
        &self.phases[i.saturating_sub(1)]
    }

    /// Position along the track at run time `t`, metres.
    pub fn position_at(&self, t: Time) -> f64 {
        if t <= self.late_start {
            return self.start_m;
        }
        let tau = (t - self.late_start).secs_f64();
        let p = self.phase(tau);
        let dt = tau - p.t0;
        let x = self.start_m + p.x0 + p.v0 * dt + 0.5 * p.a * dt * dt;
        x.min(self.track_end_m)
    }

    /// Speed at run time `t`, m/s (0 while waiting and at the end of the track).
    pub fn speed_at(&self, t: Time) -> f64 {
        if t < self.late_start || self.position_at(t) >= self.track_end_m {
            return 0.0;
        }
        let tau = (t - self.late_start).secs_f64();
        let p = self.phase(tau);
        (p.v0 + p.a * (tau - p.t0)).max(0.0)
    }

    /// Sample times `0, sample, 2 sample, ...` up to and including `duration`.
    pub fn sample_times(&self, duration: Time) -> impl Iterator<Item = Time> + '_ {
        let n = duration.ns() / self.sample.ns().max(1);
        (0..=n).map(move |k| self.sample.mul(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SpeedSegment;

    #[test]
    fn constant_speed() {
        let m = Motion::new(&TrainConfig::constant(360.0)); // 100 m/s
        assert_eq!(m.position_at(Time::ZERO), 0.0);
        assert!((m.position_at(Time::from_ms(12_340)) - 1234.0).abs() < 1e-9);
        assert!((m.speed_at(Time::from_secs(5)) - 100.0).abs() < 1e-12);
        assert_eq!(m.sample_times(Time::from_ms(30)).count(), 4);
    }

    #[test]
    fn profile_accelerates_cruises_and_brakes() {
        let mut t = TrainConfig::constant(1.0);
        t.speed_kmh = None;
        t.accel_mps2 = 1.0;
        t.segments = vec![
            // 0 -> 36 km/h (10 m/s) at 1 m/s²: 10 s, 50 m; then 10 s cruise, 100 m.
            SpeedSegment {
                speed_kmh: 36.0,
                duration_s: 20.0,
                accel_mps2: None,
            },
            // Brake at 2 m/s² to 0: 5 s, 25 m; then stand.
            SpeedSegment {
                speed_kmh: 0.0,
                duration_s: 10.0,
                accel_mps2: Some(2.0),
            },
            // Accelerate at 1 m/s² towards 360 km/h for 4 s only: 8 m, ends at 4 m/s.
            SpeedSegment {
                speed_kmh: 360.0,
                duration_s: 4.0,
                accel_mps2: None,
            },
        ];
        t.validate().unwrap();
        let m = Motion::new(&t);
        let at = |s: f64| m.position_at(Time::from_secs_f64(s));
        assert!((at(10.0) - 50.0).abs() < 1e-9);
        assert!((at(20.0) - 150.0).abs() < 1e-9);
        assert!((at(25.0) - 175.0).abs() < 1e-9);
        assert!((at(30.0) - 175.0).abs() < 1e-9);
        assert!((at(34.0) - 183.0).abs() < 1e-9);
        // After the profile: keeps 4 m/s.
        assert!((at(36.0) - 191.0).abs() < 1e-9);
        assert!((m.speed_at(Time::from_secs(36)) - 4.0).abs() < 1e-9);
    }

    #[test]
    fn late_start_shifts_times_not_positions() {
        let mut t = TrainConfig::constant(300.0);
        t.start_m = 100.0;
        let on_time = Motion::new(&t);
        t.late_start_s = 180.0;
        let late = Motion::new(&t);
        assert_eq!(late.position_at(Time::from_secs(90)), 100.0);
        assert_eq!(late.speed_at(Time::from_secs(90)), 0.0);
        for ms in [0u64, 10, 12_340, 69_990] {
            assert_eq!(
                late.position_at(Time::from_ms(ms) + Time::from_secs(180)),
                on_time.position_at(Time::from_ms(ms))
            );
        }
    }

    #[test]
    fn track_end_stops_the_train() {
        let mut t = TrainConfig::constant(360.0);
        t.track_length_m = Some(500.0);
        let m = Motion::new(&t);
        assert_eq!(m.position_at(Time::from_secs(10)), 500.0);
        assert_eq!(m.speed_at(Time::from_secs(10)), 0.0);
    }
}
