//! Scenario keys of the train radio model: `[train]` and `[[carrier]]` (results.md), with their
//! defaults and range checks. Every error names the key path, e.g. `carrier[1].enb_spacing_m`.
//!
//! Ranges of the A3 parameters follow 3GPP TS 36.331 (ReportConfigEUTRA): `hysteresis` 0..30 in
//! 0.5 dB steps (0..15 dB), `a3-Offset` -30..30 in 0.5 dB steps (-15..15 dB), `timeToTrigger`
//! one of the enumerated values in [`TTT_VALUES_MS`].

use crate::failure::{Degradation, DurationDist, FailureParams};
use crate::RadioError;
use railpath_core::{show_num, Time, MAX_DURATION_S, MAX_RATE_MBPS, MAX_TRACK_M, MIN_RATE_MBPS};
use serde::{Deserialize, Serialize};

/// `TimeToTrigger` values allowed by 3GPP TS 36.331 (ms).
pub const TTT_VALUES_MS: [u32; 16] = [
    0, 40, 64, 80, 100, 128, 160, 256, 320, 480, 512, 640, 1024, 1280, 2560, 5120,
];

/// The train: where it starts, how fast it runs, how late.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Constant speed for the whole run (give this or `segment`).
    pub speed_kmh: Option<f64>,
    /// Piecewise speed profile (`[[train.segment]]`); each segment accelerates (or brakes) from
    /// the current speed towards its `speed_kmh`, then holds it, for `duration_s`. After the last
    /// segment the train keeps the speed it has reached.
    #[serde(default, rename = "segment")]
    pub segments: Vec<SpeedSegment>,
    /// Speed when the profile starts (segments only; default 0: departing from a station).
    pub initial_speed_kmh: Option<f64>,
    /// Acceleration and braking magnitude of segments that do not give their own, m/s².
    #[serde(default = "default_accel")]
    pub accel_mps2: f64,
    /// Length of the track; the train stops at its end. Default: unbounded.
    pub track_length_m: Option<f64>,
    /// Position at which the train starts, metres along the track.
    #[serde(default)]
    pub start_m: f64,
    /// Late running: the train waits at `start_m` this long before it departs, so it passes the
    /// same positions at times shifted by this much.
    #[serde(default)]
    pub late_start_s: f64,
    /// Position sampling period (the PHA paper: 10 ms).
    #[serde(default = "default_sample_ms")]
    pub sample_ms: f64,
}

/// One segment of a speed profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeedSegment {
    /// Target speed of the segment.
    pub speed_kmh: f64,
    /// How long the segment lasts, seconds.
    pub duration_s: f64,
    /// Acceleration/braking magnitude towards the target; default `train.accel_mps2`.
    pub accel_mps2: Option<f64>,
}

/// Where a carrier link's conditions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CarrierModel {
    /// Base stations along the track, RSRP, A3 handovers, SINR capacity.
    #[default]
    Radio,
    /// Constant rate, handovers every `handover_interval_s` (the PROXY-LB testbed).
    Scripted,
    /// Measured per-carrier CSV (time, position, throughput or opportunities, handover marks).
    Csv,
    /// Mahimahi delivery-opportunity trace, binned into rate steps.
    Mahimahi,
}

/// How a radio carrier's rate follows its signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CapacityModel {
    /// Capped Shannon mapping of the serving cell's SINR (TR 36.942 A.2), up to `rate_mbps`.
    #[default]
    Sinr,
    /// Always `rate_mbps` while connected: only handovers (and weak-signal delay/loss) act.
    Peak,
}

/// What the carrier's link does with queued packets during a handover interruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutageMode {
    /// Forwarded over X2 and delivered late.
    Hold,
    /// Lost.
    Drop,
}

/// One carrier (operator) along the track.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CarrierConfig {
    pub id: String,
    #[serde(default)]
    pub model: CarrierModel,
    /// Peak rate of the carrier (radio and scripted models).
    pub rate_mbps: Option<f64>,

    // --- sites (radio model) ---
    /// Regular site grid along the track (give this or `sites_m`).
    pub enb_spacing_m: Option<f64>,
    /// Perpendicular distance of the sites from the track.
    #[serde(default = "default_enb_offset")]
    pub enb_offset_m: f64,
    /// Position of the first site of the regular grid.
    #[serde(default)]
    pub first_enb_m: f64,
    /// Explicit site positions along the track (instead of the grid).
    pub sites_m: Option<Vec<f64>>,
    /// Stretches of the line with their own site spacing (denser near towns, sparser in the
    /// open), instead of one grid: each from its `from_m` to the next one's (the last to the
    /// end of the track); `site_jitter_m` applies to every site.
    pub site_segments: Option<Vec<SiteSegment>>,
    /// Uniform jitter of each grid site along the track, +- this many metres (fixed per place).
    #[serde(default)]
    pub site_jitter_m: f64,
    /// Seed of everything fixed per place (site jitter, shadowing); default 0. The carrier id is
    /// mixed in, so carriers differ with the same place seed.
    #[serde(default)]
    pub place_seed: u64,

    // --- propagation (radio model) ---
    /// Reference-signal power per resource element including antenna gain, dBm.
    #[serde(default = "default_rs_power")]
    pub rs_power_dbm: f64,
    /// Path loss at 1 km, dB (log-distance model).
    #[serde(default = "default_pl_1km")]
    pub pathloss_1km_db: f64,
    /// Path-loss exponent n: loss grows by 10 n dB per decade of distance.
    #[serde(default = "default_pl_exp")]
    pub pathloss_exponent: f64,
    /// Standard deviation of the shadowing fixed per place, dB.
    #[serde(default = "default_shadow_sigma")]
    pub shadowing_sigma_db: f64,
    /// Decorrelation distance of the shadowing (Gudmundson), metres.
    #[serde(default = "default_shadow_corr")]
    pub shadowing_corr_m: f64,
    /// Correlation of the shadowing of two sites of the carrier at the same place (0..1).
    #[serde(default = "default_site_corr")]
    pub shadowing_site_corr: f64,
    /// Standard deviation of the per-run variation on top of the fixed shadowing, dB.
    #[serde(default = "default_run_sigma")]
    pub run_variation_db: f64,
    /// Layer-3 filter coefficient k of TS 36.331 5.5.3.2 (0 = no filtering).
    #[serde(default = "default_l3_k")]
    pub l3_filter_k: u32,
    /// Noise power per resource element, dBm (thermal -132.2 dBm per 15 kHz + noise figure).
    #[serde(default = "default_noise")]
    pub noise_dbm: f64,
    /// Load of the neighbouring cells (share of their power that interferes), 0..=1.
    #[serde(default = "default_load")]
    pub interference_load: f64,
    /// Cells farther than this along the track are neither measured nor interfering.
    #[serde(default = "default_cell_range")]
    pub cell_range_m: f64,

    // --- A3 handover (radio model) ---
    #[serde(default = "default_hysteresis")]
    pub hysteresis_db: f64,
    #[serde(default)]
    pub a3_offset_db: f64,
    #[serde(default = "default_ttt")]
    pub ttt_ms: u32,

    // --- handover execution (all models) ---
    /// Interruption of each handover during which the link delivers nothing (X2: 50 ms).
    #[serde(default = "default_interruption")]
    pub interruption_ms: f64,
    /// Default outage mode for links driven by this carrier (the link's `outage_mode` wins).
    pub outage_mode: Option<OutageMode>,
    /// The execution time of each successful handover, drawn per handover (instead of the
    /// constant `interruption_ms`).
    pub interruption: Option<DurationDist>,

    // --- the real train (radio model) ---
    /// A bundle of defaults for a kind of line ([`Profile`]): it fills the keys below (and
    /// `interruption`) that the carrier does not give.
    pub profile: Option<Profile>,
    /// Radio link failure, handover failure and re-establishment (3GPP TR 36.839's model;
    /// [`FailureOptions`]). Absent: every handover succeeds after its interruption.
    pub failures: Option<FailureOptions>,
    /// HARQ and RLC retransmission delay and residual loss as the serving cell's SINR falls
    /// ([`DegradationOptions`]). Absent: none.
    pub degradation: Option<DegradationOptions>,
    /// The eNodeB's queue for the train's modem, packets: the buffer of the links this carrier
    /// drives unless a link gives its own.
    pub enb_buffer_packets: Option<u32>,

    // --- weak signal (radio model) ---
    /// Below this serving RSRP the link gets extra delay and loss (PROXY-LB: -110 dBm).
    #[serde(default = "default_low_rsrp")]
    pub low_rsrp_dbm: f64,
    #[serde(default = "default_low_delay")]
    pub low_rsrp_extra_delay_ms: f64,
    #[serde(default = "default_low_loss")]
    pub low_rsrp_loss: f64,

    // --- capacity (radio model) ---
    /// `sinr` (default) or `peak` (constant rate between handovers).
    #[serde(default)]
    pub capacity: CapacityModel,
    /// Rate floor of a connected cell, Mbit/s.
    #[serde(default = "default_min_rate")]
    pub min_rate_mbps: f64,
    /// A rate step is emitted when the rate moves by this share of the last emitted rate ...
    #[serde(default = "default_step_fraction")]
    pub rate_step_fraction: f64,
    /// ... or by this many Mbit/s, whichever is smaller.
    #[serde(default = "default_step_mbps")]
    pub rate_step_mbps: f64,

    // --- scripted ---
    pub handover_interval_s: Option<f64>,
    /// Time of the first scripted handover; default: one interval.
    pub handover_offset_s: Option<f64>,

    // --- measured ---
    /// Measured CSV, path relative to the scenario file.
    pub csv: Option<String>,
    /// Mahimahi trace, path relative to the scenario file.
    pub mahimahi: Option<String>,
    /// Bin width when turning a Mahimahi trace into rate steps.
    #[serde(default = "default_mm_bin")]
    pub mahimahi_bin_ms: f64,
    /// Loaded measured data; filled by [`CarrierConfig::load_files`], not read from TOML.
    #[serde(skip)]
    pub measured: Option<MeasuredData>,
    /// The keys the scenario file wrote in this carrier's table (filled by the scenario parser,
    /// not read as a key): defaults hide whether a key was given, and a key of another model
    /// must be refused, not silently ignored.
    #[serde(skip)]
    pub keys_given: Vec<String>,
}

/// Keys every carrier model takes.
pub const CARRIER_COMMON_KEYS: &[&str] = &[
    "id",
    "model",
    "interruption_ms",
    "outage_mode",
    "enb_buffer_packets",
];

/// One stretch of a line's sites (`site_segments`): sites every `spacing_m` from `from_m`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteSegment {
    pub from_m: f64,
    pub spacing_m: f64,
}

/// A bundle of defaults (`profile = "..."` on a carrier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A high-speed line: handovers and radio links fail as 3GPP's mobility evaluation models
    /// them, the link degrades with the SINR, handover execution times are drawn, and the
    /// eNodeB queue is deep (every value and its source: [`CarrierConfig::apply_profile`] and
    /// docs/models/radio.md).
    Hsr,
}

/// `failures = { ... }` on a radio carrier; every key optional (defaults: [`FailureOptions::params`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureOptions {
    /// Out-of-sync threshold on the serving cell's 200 ms wideband SINR, dB.
    pub q_out_db: Option<f64>,
    /// In-sync threshold on its 100 ms wideband SINR, dB.
    pub q_in_db: Option<f64>,
    pub n310: Option<u32>,
    pub t310_ms: Option<f64>,
    pub n311: Option<u32>,
    pub t304_ms: Option<f64>,
    /// From the A3 report to the handover command at the UE (report, preparation, command), ms.
    pub prep_ms: Option<f64>,
    /// How long re-establishment takes after a failure.
    pub reestablish: Option<DurationDist>,
}

/// Default `failures.reestablish`: TS 36.133's re-establishment delay, 50 ms + cell
/// identification (100 ms for a cell the UE measured, up to 800 ms) + system information
/// (SIB1 every 80 ms, up to 1280 ms) + random access (10-20 ms): 240 to 2150 ms.
pub const DEFAULT_REESTABLISH: DurationDist = DurationDist::Uniform {
    min_ms: 240.0,
    max_ms: 2150.0,
};

impl FailureOptions {
    /// The parameters with 3GPP's defaults: Qout -8 dB, Qin -6 dB (TR 36.839's SINR mapping of
    /// TS 36.133's 10 % / 2 % PDCCH error rates), N310 1, T310 1000 ms, N311 1 (TS 36.331
    /// §9.2.5, the UE's defaults), T304 1000 ms (TS 36.331's `ms1000`, a common setting), 50 ms
    /// from report to command (TR 36.839), re-establishment [`DEFAULT_REESTABLISH`]; out-of-sync
    /// and in-sync over 200 and 100 ms (TS 36.133 §7.6), an indication every `sample`.
    pub fn params(&self, sample: Time) -> FailureParams {
        FailureParams {
            q_out_db: self.q_out_db.unwrap_or(-8.0),
            q_in_db: self.q_in_db.unwrap_or(-6.0),
            indication: sample,
            eval_out: Time::from_ms(200),
            eval_in: Time::from_ms(100),
            n310: self.n310.unwrap_or(1),
            t310: Time::from_ms_f64(self.t310_ms.unwrap_or(1000.0)),
            n311: self.n311.unwrap_or(1),
            t304: Time::from_ms_f64(self.t304_ms.unwrap_or(1000.0)),
            prep: Time::from_ms_f64(self.prep_ms.unwrap_or(50.0)),
            reestablish: self.reestablish.unwrap_or(DEFAULT_REESTABLISH),
        }
    }
}

/// `degradation = { ... }` on a radio carrier; every key optional (defaults:
/// [`DegradationOptions::model`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DegradationOptions {
    pub harq_rtt_ms: Option<f64>,
    pub max_harq_tx: Option<u32>,
    pub bler_target: Option<f64>,
    pub sinr_min_db: Option<f64>,
    pub bler_db_per_decade: Option<f64>,
    pub rlc_retx_ms: Option<f64>,
    pub rlc_max_retx: Option<u32>,
}

impl DegradationOptions {
    /// The model with its defaults: HARQ round trip 8 ms (FDD, TS 36.213 §8), 4 transmissions
    /// (TS 36.331's `maxHARQ-Tx` n4, an eNodeB setting), a 10 % first-transmission block error
    /// rate (the CQI definition of TS 36.213 §7.2.3), -6.9 dB for the most robust scheme
    /// (CQI 1 at 10 % BLER in the Vienna LTE link-level simulator: Mehlführer et al., EUSIPCO
    /// 2009), a decade of block error rate per 1 dB below it (the waterfall of a turbo code's
    /// BLER curve), RLC AM retransmission after 45 ms (`t-PollRetransmit` ms45) and at most 8
    /// of them (`maxRetxThreshold` t8) (TS 36.322, TS 36.331; common operator settings).
    pub fn model(&self) -> Degradation {
        Degradation {
            harq_rtt: Time::from_ms_f64(self.harq_rtt_ms.unwrap_or(8.0)),
            max_harq_tx: self.max_harq_tx.unwrap_or(4),
            bler_target: self.bler_target.unwrap_or(0.1),
            sinr_min_db: self.sinr_min_db.unwrap_or(-6.9),
            bler_db_per_decade: self.bler_db_per_decade.unwrap_or(1.0),
            rlc_retx: Time::from_ms_f64(self.rlc_retx_ms.unwrap_or(45.0)),
            rlc_max_retx: self.rlc_max_retx.unwrap_or(8),
        }
    }
}

/// `profile = "hsr"`'s eNodeB queue: 1000 packets (1.5 MB). Jiang et al., "Tackling
/// bufferbloat in 3G/4G networks", IMC 2012, measured buffers of over 1 MB per connection in the
/// LTE networks they tested.
pub const HSR_ENB_BUFFER_PACKETS: u32 = 1000;
/// `profile = "hsr"`'s handover execution: TS 36.133 §5.1.2.1,
/// `T_interrupt = T_search + T_IU + 20 ms` with `T_search` = 0 for a target the UE measured and `T_IU` up to 30 ms (the wait
/// for a random-access occasion): 20 to 50 ms.
pub const HSR_INTERRUPTION: DurationDist = DurationDist::Uniform {
    min_ms: 20.0,
    max_ms: 50.0,
};
/// Keys of the radio model (besides [`CARRIER_COMMON_KEYS`]).
pub const CARRIER_RADIO_KEYS: &[&str] = &[
    "rate_mbps",
    "enb_spacing_m",
    "enb_offset_m",
    "first_enb_m",
    "sites_m",
    "site_jitter_m",
    "place_seed",
    "rs_power_dbm",
    "pathloss_1km_db",
    "pathloss_exponent",
    "shadowing_sigma_db",
    "shadowing_corr_m",
    "shadowing_site_corr",
    "run_variation_db",
    "l3_filter_k",
    "noise_dbm",
    "interference_load",
    "cell_range_m",
    "hysteresis_db",
    "a3_offset_db",
    "ttt_ms",
    "low_rsrp_dbm",
    "low_rsrp_extra_delay_ms",
    "low_rsrp_loss",
    "capacity",
    "min_rate_mbps",
    "rate_step_fraction",
    "rate_step_mbps",
    "site_segments",
    "interruption",
    "profile",
    "failures",
    "degradation",
];
/// Keys of the scripted model.
pub const CARRIER_SCRIPTED_KEYS: &[&str] = &[
    "rate_mbps",
    "handover_interval_s",
    "handover_offset_s",
    "interruption",
];
/// Keys of the measured CSV model.
pub const CARRIER_CSV_KEYS: &[&str] = &["csv"];
/// Keys of the Mahimahi model.
pub const CARRIER_MAHIMAHI_KEYS: &[&str] = &["mahimahi", "mahimahi_bin_ms"];

impl CarrierModel {
    /// The scenario spelling of the model.
    pub fn name(self) -> &'static str {
        match self {
            CarrierModel::Radio => "radio",
            CarrierModel::Scripted => "scripted",
            CarrierModel::Csv => "csv",
            CarrierModel::Mahimahi => "mahimahi",
        }
    }

    /// The model-specific keys of this model.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            CarrierModel::Radio => CARRIER_RADIO_KEYS,
            CarrierModel::Scripted => CARRIER_SCRIPTED_KEYS,
            CarrierModel::Csv => CARRIER_CSV_KEYS,
            CarrierModel::Mahimahi => CARRIER_MAHIMAHI_KEYS,
        }
    }

    /// The models that take `key` (empty for an unknown key).
    pub fn models_taking(key: &str) -> Vec<&'static str> {
        [
            CarrierModel::Radio,
            CarrierModel::Scripted,
            CarrierModel::Csv,
            CarrierModel::Mahimahi,
        ]
        .into_iter()
        .filter(|m| m.keys().contains(&key))
        .map(CarrierModel::name)
        .collect()
    }
}

fn default_accel() -> f64 {
    0.5
}
fn default_sample_ms() -> f64 {
    10.0
}
fn default_enb_offset() -> f64 {
    300.0
}
fn default_rs_power() -> f64 {
    // 46 dBm over 1200 subcarriers (20 MHz) = 15.2 dBm per RE, plus 15 dBi antenna gain.
    30.2
}
fn default_pl_1km() -> f64 {
    128.1
}
fn default_pl_exp() -> f64 {
    3.76
}
fn default_shadow_sigma() -> f64 {
    4.0
}
fn default_shadow_corr() -> f64 {
    50.0
}
fn default_site_corr() -> f64 {
    0.5
}
fn default_run_sigma() -> f64 {
    0.3
}
fn default_l3_k() -> u32 {
    4
}
fn default_noise() -> f64 {
    // -174 dBm/Hz + 10 log10(15 kHz) + 7 dB noise figure.
    -125.2
}
fn default_load() -> f64 {
    0.5
}
fn default_cell_range() -> f64 {
    4000.0
}
fn default_hysteresis() -> f64 {
    3.0
}
fn default_ttt() -> u32 {
    256
}
fn default_interruption() -> f64 {
    50.0
}
fn default_low_rsrp() -> f64 {
    -110.0
}
fn default_low_delay() -> f64 {
    30.0
}
fn default_low_loss() -> f64 {
    0.01
}
fn default_min_rate() -> f64 {
    0.5
}
fn default_step_fraction() -> f64 {
    0.02
}
fn default_step_mbps() -> f64 {
    0.5
}
fn default_mm_bin() -> f64 {
    100.0
}

impl TrainConfig {
    /// A train at constant speed from position 0.
    pub fn constant(speed_kmh: f64) -> TrainConfig {
        TrainConfig {
            speed_kmh: Some(speed_kmh),
            segments: Vec::new(),
            initial_speed_kmh: None,
            accel_mps2: default_accel(),
            track_length_m: None,
            start_m: 0.0,
            late_start_s: 0.0,
            sample_ms: default_sample_ms(),
        }
    }
}

impl CarrierConfig {
    /// A radio-model carrier with every default and a regular site grid.
    pub fn grid(id: &str, rate_mbps: f64, spacing_m: f64, first_enb_m: f64) -> CarrierConfig {
        CarrierConfig {
            id: id.to_string(),
            model: CarrierModel::Radio,
            rate_mbps: Some(rate_mbps),
            enb_spacing_m: Some(spacing_m),
            enb_offset_m: default_enb_offset(),
            first_enb_m,
            sites_m: None,
            site_segments: None,
            site_jitter_m: 0.0,
            place_seed: 0,
            rs_power_dbm: default_rs_power(),
            pathloss_1km_db: default_pl_1km(),
            pathloss_exponent: default_pl_exp(),
            shadowing_sigma_db: default_shadow_sigma(),
            shadowing_corr_m: default_shadow_corr(),
            shadowing_site_corr: default_site_corr(),
            run_variation_db: default_run_sigma(),
            l3_filter_k: default_l3_k(),
            noise_dbm: default_noise(),
            interference_load: default_load(),
            cell_range_m: default_cell_range(),
            hysteresis_db: default_hysteresis(),
            a3_offset_db: 0.0,
            ttt_ms: default_ttt(),
            interruption_ms: default_interruption(),
            outage_mode: None,
            interruption: None,
            profile: None,
            failures: None,
            degradation: None,
            enb_buffer_packets: None,
            low_rsrp_dbm: default_low_rsrp(),
            low_rsrp_extra_delay_ms: default_low_delay(),
            low_rsrp_loss: default_low_loss(),
            capacity: CapacityModel::Sinr,
            min_rate_mbps: default_min_rate(),
            rate_step_fraction: default_step_fraction(),
            rate_step_mbps: default_step_mbps(),
            handover_interval_s: None,
            handover_offset_s: None,
            csv: None,
            mahimahi: None,
            mahimahi_bin_ms: default_mm_bin(),
            measured: None,
            keys_given: Vec::new(),
        }
    }
}

struct Check;

impl Check {
    fn finite(key: &str, v: f64) -> Result<(), RadioError> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(RadioError::key(
                key,
                format!("expected a finite number, found {}", show_num(v)),
            ))
        }
    }
    fn positive(key: &str, v: f64) -> Result<(), RadioError> {
        Check::finite(key, v)?;
        if v > 0.0 {
            Ok(())
        } else {
            Err(RadioError::key(
                key,
                format!("expected a number > 0, found {}", show_num(v)),
            ))
        }
    }
    fn non_negative(key: &str, v: f64) -> Result<(), RadioError> {
        Check::finite(key, v)?;
        if v >= 0.0 {
            Ok(())
        } else {
            Err(RadioError::key(
                key,
                format!("expected a number >= 0, found {}", show_num(v)),
            ))
        }
    }
    fn range(key: &str, v: f64, lo: f64, hi: f64, what: &str) -> Result<(), RadioError> {
        Check::finite(key, v)?;
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(RadioError::key(
                key,
                format!(
                    "expected {what} in {}..={}, found {}",
                    show_num(lo),
                    show_num(hi),
                    show_num(v)
                ),
            ))
        }
    }
}

impl TrainConfig {
    /// Check ranges; keys are reported as `train.<field>`.
    pub fn validate(&self) -> Result<(), RadioError> {
        match (self.speed_kmh, self.segments.is_empty()) {
            (Some(_), false) => {
                return Err(RadioError::key(
                    "train.speed_kmh",
                    "give either speed_kmh (constant speed) or [[train.segment]], not both",
                ))
            }
            (None, true) => {
                return Err(RadioError::key(
                    "train.speed_kmh",
                    "required: a constant speed in km/h > 0, or a profile of [[train.segment]]",
                ))
            }
            (Some(v), true) => {
                if self.initial_speed_kmh.is_some() {
                    return Err(RadioError::key(
                        "train.initial_speed_kmh",
                        "only used with [[train.segment]] (this train runs at the constant speed_kmh)",
                    ));
                }
                Check::range("train.speed_kmh", v, 0.0, 600.0, "a speed in km/h")?;
                if v == 0.0 {
                    return Err(RadioError::key(
                        "train.speed_kmh",
                        "expected a speed > 0 km/h: a train at 0 km/h never moves, so it never passes a base station; \
                         model a stop with [[train.segment]] speed_kmh = 0",
                    ));
                }
            }
            (None, false) => {
                if let Some(v) = self.initial_speed_kmh {
                    Check::range("train.initial_speed_kmh", v, 0.0, 600.0, "a speed in km/h")?;
                }
                let mut moves = self.initial_speed_kmh.unwrap_or(0.0) > 0.0;
                for (i, s) in self.segments.iter().enumerate() {
                    let k = |f: &str| format!("train.segment[{i}].{f}");
                    Check::range(&k("speed_kmh"), s.speed_kmh, 0.0, 600.0, "a speed in km/h")?;
                    Check::positive(&k("duration_s"), s.duration_s)?;
                    Check::range(
                        &k("duration_s"),
                        s.duration_s,
                        0.0,
                        MAX_DURATION_S,
                        "a duration in s",
                    )?;
                    if let Some(a) = s.accel_mps2 {
                        Check::range(&k("accel_mps2"), a, 0.01, 10.0, "an acceleration in m/s²")?;
                    }
                    moves |= s.speed_kmh > 0.0;
                }
                if !moves {
                    return Err(RadioError::key(
                        "train.segment",
                        "the speed profile never moves (every speed_kmh is 0), so the train never passes a base station",
                    ));
                }
            }
        }
        Check::range(
            "train.accel_mps2",
            self.accel_mps2,
            0.01,
            10.0,
            "an acceleration in m/s²",
        )?;
        Check::range(
            "train.start_m",
            self.start_m,
            0.0,
            MAX_TRACK_M,
            "a position in metres",
        )?;
        if let Some(l) = self.track_length_m {
            Check::range(
                "train.track_length_m",
                l,
                1.0,
                MAX_TRACK_M,
                "a length in metres",
            )?;
            if self.start_m >= l {
                return Err(RadioError::key(
                    "train.start_m",
                    format!(
                        "expected a start before the end of the track ({l} m), found {}",
                        self.start_m
                    ),
                ));
            }
        }
        Check::range(
            "train.late_start_s",
            self.late_start_s,
            0.0,
            MAX_DURATION_S,
            "a delay in s",
        )?;
        Check::range(
            "train.sample_ms",
            self.sample_ms,
            1.0,
            1000.0,
            "a sampling period in ms",
        )?;
        Ok(())
    }
}

impl CarrierConfig {
    /// Fill the keys its `profile` bundles that the carrier does not give itself (called when
    /// a scenario is resolved). `hsr`: `failures` and `degradation` with
    /// their 3GPP defaults, `interruption` [`HSR_INTERRUPTION`], `enb_buffer_packets`
    /// [`HSR_ENB_BUFFER_PACKETS`].
    pub fn apply_profile(&mut self) {
        let Some(Profile::Hsr) = self.profile else {
            return;
        };
        self.failures.get_or_insert_with(FailureOptions::default);
        self.degradation
            .get_or_insert_with(DegradationOptions::default);
        // A constant interruption the carrier writes wins over the profile's draw.
        if !self.keys_given.iter().any(|g| g == "interruption_ms") {
            self.interruption.get_or_insert(HSR_INTERRUPTION);
        }
        self.enb_buffer_packets
            .get_or_insert(HSR_ENB_BUFFER_PACKETS);
    }

    /// Check ranges and model-specific keys; keys are reported as `carrier[i].<field>`.
    pub fn validate(&self, i: usize) -> Result<(), RadioError> {
        let k = |f: &str| format!("carrier[{i}].{f}");
        if self.id.is_empty() {
            return Err(RadioError::key(k("id"), "expected a non-empty id"));
        }
        let only = |set: bool, key: &str, model: &str| -> Result<(), RadioError> {
            if set {
                Err(RadioError::key(
                    k(key),
                    format!(
                        "only used with model = \"{model}\" (this carrier's model is \"{}\")",
                        self.model.name()
                    ),
                ))
            } else {
                Ok(())
            }
        };
        use CarrierModel as M;
        let m = self.model;
        for key in &self.keys_given {
            if CARRIER_COMMON_KEYS.contains(&key.as_str()) || m.keys().contains(&key.as_str()) {
                continue;
            }
            let takers = CarrierModel::models_taking(key);
            if !takers.is_empty() {
                return Err(RadioError::key(
                    k(key),
                    format!(
                        "only used with model = \"{}\"; this carrier's model is \"{}\", which takes {}",
                        takers.join("\" or \""),
                        m.name(),
                        CARRIER_COMMON_KEYS
                            .iter()
                            .chain(m.keys())
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        only(
            m != M::Radio && self.enb_spacing_m.is_some(),
            "enb_spacing_m",
            "radio",
        )?;
        only(m != M::Radio && self.sites_m.is_some(), "sites_m", "radio")?;
        only(
            m != M::Scripted && self.handover_interval_s.is_some(),
            "handover_interval_s",
            "scripted",
        )?;
        only(
            m != M::Scripted && self.handover_offset_s.is_some(),
            "handover_offset_s",
            "scripted",
        )?;
        only(m != M::Csv && self.csv.is_some(), "csv", "csv")?;
        only(
            m != M::Mahimahi && self.mahimahi.is_some(),
            "mahimahi",
            "mahimahi",
        )?;
        match m {
            M::Radio | M::Scripted => match self.rate_mbps {
                Some(r) => Check::range(
                    &k("rate_mbps"),
                    r,
                    MIN_RATE_MBPS,
                    MAX_RATE_MBPS,
                    "a rate in Mbit/s",
                )?,
                None => {
                    return Err(RadioError::key(
                        k("rate_mbps"),
                        format!(
                            "required: the carrier's peak rate in Mbit/s, {MIN_RATE_MBPS} to {MAX_RATE_MBPS}"
                        ),
                    ))
                }
            },
            M::Csv | M::Mahimahi => {
                if self.rate_mbps.is_some() {
                    return Err(RadioError::key(
                        k("rate_mbps"),
                        "not used: a measured carrier's rate comes from its data",
                    ));
                }
            }
        }
        Check::range(
            &k("interruption_ms"),
            self.interruption_ms,
            0.0,
            10_000.0,
            "an interruption in ms",
        )?;
        if let Some(d) = &self.interruption {
            if self.keys_given.iter().any(|g| g == "interruption_ms") {
                return Err(RadioError::key(
                    k("interruption"),
                    "give either interruption_ms (a constant) or interruption (a distribution), not both",
                ));
            }
            if let Some((f, msg)) = d.problem() {
                return Err(RadioError::key(k(&format!("interruption.{f}")), msg));
            }
            if d.max_ms() > 10_000.0 {
                return Err(RadioError::key(
                    k("interruption.max_ms"),
                    "expected an interruption of at most 10000 ms (give max_ms)",
                ));
            }
        }
        if let Some(b) = self.enb_buffer_packets {
            if !(1..=1_000_000).contains(&b) {
                return Err(RadioError::key(
                    k("enb_buffer_packets"),
                    format!("expected a buffer of 1 to 1000000 packets, found {b}"),
                ));
            }
        }
        match m {
            M::Radio => self.validate_radio(&k)?,
            M::Scripted => {
                match self.handover_interval_s {
                    Some(v) => {
                        Check::range(
                            &k("handover_interval_s"),
                            v,
                            0.0,
                            MAX_DURATION_S,
                            "an interval in s",
                        )?;
                        // Each handover's interruption ends before the next handover starts;
                        // otherwise the carrier would never carry anything.
                        if v * 1000.0 <= self.interruption_ms && self.interruption.is_none() {
                            return Err(RadioError::key(
                                k("handover_interval_s"),
                                format!(
                                    "expected more than interruption_ms = {} ms (a handover's interruption must end before the next handover), found {v} s",
                                    self.interruption_ms
                                ),
                            ));
                        }
                        if let Some(d) = &self.interruption {
                            if v * 1000.0 <= d.max_ms() {
                                return Err(RadioError::key(
                                    k("handover_interval_s"),
                                    format!(
                                        "expected more than the longest interruption's draw, {} ms (a handover's interruption must end before the next handover), found {v} s",
                                        show_num(d.max_ms())
                                    ),
                                ));
                            }
                        }
                    }
                    None => {
                        return Err(RadioError::key(
                            k("handover_interval_s"),
                            "required for model = \"scripted\": seconds between handovers > 0",
                        ))
                    }
                }
                if let Some(o) = self.handover_offset_s {
                    Check::range(
                        &k("handover_offset_s"),
                        o,
                        0.0,
                        MAX_DURATION_S,
                        "a time in s",
                    )?;
                }
            }
            M::Csv => {
                if self.csv.as_deref().unwrap_or("").is_empty() {
                    return Err(RadioError::key(
                        k("csv"),
                        "required for model = \"csv\": a CSV file path",
                    ));
                }
            }
            M::Mahimahi => {
                if self.mahimahi.as_deref().unwrap_or("").is_empty() {
                    return Err(RadioError::key(
                        k("mahimahi"),
                        "required for model = \"mahimahi\": a trace file path",
                    ));
                }
                Check::range(
                    &k("mahimahi_bin_ms"),
                    self.mahimahi_bin_ms,
                    1.0,
                    60_000.0,
                    "a bin width in ms",
                )?;
            }
        }
        Ok(())
    }

    fn validate_radio(&self, k: &dyn Fn(&str) -> String) -> Result<(), RadioError> {
        if let Some(segs) = &self.site_segments {
            if self.enb_spacing_m.is_some() || self.sites_m.is_some() {
                let other = if self.sites_m.is_some() {
                    "sites_m"
                } else {
                    "enb_spacing_m"
                };
                return Err(RadioError::key(
                    k("site_segments"),
                    format!(
                        "give one of enb_spacing_m, sites_m and site_segments, not {other} too"
                    ),
                ));
            }
            self.validate_segments(k, segs)?;
        }
        match (&self.enb_spacing_m, &self.sites_m) {
            (Some(_), Some(_)) => {
                return Err(RadioError::key(k("sites_m"), "give either enb_spacing_m or sites_m, not both"))
            }
            (None, None) if self.site_segments.is_some() => {}
            (None, None) => {
                return Err(RadioError::key(
                    k("enb_spacing_m"),
                    "required: the distance between sites along the track in metres (or sites_m = [...], or site_segments = [...])",
                ))
            }
            (Some(s), None) => {
                Check::range(&k("enb_spacing_m"), *s, 50.0, 100_000.0, "a site spacing in metres")?;
                Check::range(
                    &k("first_enb_m"),
                    self.first_enb_m,
                    0.0,
                    MAX_TRACK_M,
                    "a position in metres",
                )?;
                Check::non_negative(&k("site_jitter_m"), self.site_jitter_m)?;
                if self.site_jitter_m >= s / 2.0 {
                    return Err(RadioError::key(
                        k("site_jitter_m"),
                        format!("expected less than half the spacing ({} m), found {}", s / 2.0, self.site_jitter_m),
                    ));
                }
            }
            (None, Some(v)) => {
                if v.is_empty() {
                    return Err(RadioError::key(k("sites_m"), "expected at least one site position"));
                }
                for (j, x) in v.iter().enumerate() {
                    Check::range(
                        &k(&format!("sites_m[{j}]")),
                        *x,
                        0.0,
                        MAX_TRACK_M,
                        "a position in metres",
                    )?;
                    if j > 0 && *x <= v[j - 1] {
                        return Err(RadioError::key(
                            k(&format!("sites_m[{j}]")),
                            "site positions must be strictly increasing",
                        ));
                    }
                }
                if self.site_jitter_m != 0.0 {
                    return Err(RadioError::key(k("site_jitter_m"), "only used with a regular grid (enb_spacing_m)"));
                }
            }
        }
        Check::range(
            &k("enb_offset_m"),
            self.enb_offset_m,
            0.0,
            50_000.0,
            "a distance in metres",
        )?;
        Check::range(
            &k("rs_power_dbm"),
            self.rs_power_dbm,
            -50.0,
            80.0,
            "a power in dBm",
        )?;
        Check::range(
            &k("pathloss_1km_db"),
            self.pathloss_1km_db,
            50.0,
            200.0,
            "a loss in dB",
        )?;
        Check::range(
            &k("pathloss_exponent"),
            self.pathloss_exponent,
            1.5,
            6.0,
            "a path-loss exponent",
        )?;
        Check::range(
            &k("shadowing_sigma_db"),
            self.shadowing_sigma_db,
            0.0,
            20.0,
            "a deviation in dB",
        )?;
        Check::range(
            &k("shadowing_corr_m"),
            self.shadowing_corr_m,
            1.0,
            10_000.0,
            "a distance in metres",
        )?;
        Check::range(
            &k("shadowing_site_corr"),
            self.shadowing_site_corr,
            0.0,
            1.0,
            "a correlation",
        )?;
        Check::range(
            &k("run_variation_db"),
            self.run_variation_db,
            0.0,
            20.0,
            "a deviation in dB",
        )?;
        if self.l3_filter_k > 19 {
            return Err(RadioError::key(
                k("l3_filter_k"),
                format!(
                    "expected a filterCoefficient k in 0..=19 (TS 36.331), found {}",
                    self.l3_filter_k
                ),
            ));
        }
        Check::range(
            &k("noise_dbm"),
            self.noise_dbm,
            -200.0,
            0.0,
            "a noise power in dBm",
        )?;
        Check::range(
            &k("interference_load"),
            self.interference_load,
            0.0,
            1.0,
            "a load",
        )?;
        Check::range(
            &k("cell_range_m"),
            self.cell_range_m,
            100.0,
            1_000_000.0,
            "a distance in metres",
        )?;
        if let Some(s) = self.enb_spacing_m {
            if self.cell_range_m < s {
                return Err(RadioError::key(
                    k("cell_range_m"),
                    format!("expected at least the site spacing ({s} m) so a neighbour is always measured"),
                ));
            }
        }
        Check::range(
            &k("hysteresis_db"),
            self.hysteresis_db,
            0.0,
            15.0,
            "a hysteresis in dB (TS 36.331)",
        )?;
        Check::range(
            &k("a3_offset_db"),
            self.a3_offset_db,
            -15.0,
            15.0,
            "an a3-Offset in dB (TS 36.331)",
        )?;
        if !TTT_VALUES_MS.contains(&self.ttt_ms) {
            let allowed: Vec<String> = TTT_VALUES_MS.iter().map(u32::to_string).collect();
            return Err(RadioError::key(
                k("ttt_ms"),
                format!(
                    "expected a TimeToTrigger of TS 36.331, one of {} ms; found {}",
                    allowed.join(", "),
                    self.ttt_ms
                ),
            ));
        }
        Check::range(
            &k("low_rsrp_dbm"),
            self.low_rsrp_dbm,
            -200.0,
            0.0,
            "an RSRP in dBm",
        )?;
        Check::range(
            &k("low_rsrp_extra_delay_ms"),
            self.low_rsrp_extra_delay_ms,
            0.0,
            10_000.0,
            "a delay in ms",
        )?;
        Check::finite(&k("low_rsrp_loss"), self.low_rsrp_loss)?;
        if !(0.0..1.0).contains(&self.low_rsrp_loss) {
            return Err(RadioError::key(
                k("low_rsrp_loss"),
                format!(
                    "expected a probability in [0, 1), found {}",
                    self.low_rsrp_loss
                ),
            ));
        }
        Check::non_negative(&k("min_rate_mbps"), self.min_rate_mbps)?;
        if self.min_rate_mbps < MIN_RATE_MBPS
            || self.min_rate_mbps > self.rate_mbps.unwrap_or(f64::INFINITY)
        {
            return Err(RadioError::key(
                k("min_rate_mbps"),
                format!(
                    "expected a rate floor >= {MIN_RATE_MBPS} Mbit/s and at most rate_mbps, found {}",
                    self.min_rate_mbps
                ),
            ));
        }
        Check::range(
            &k("rate_step_fraction"),
            self.rate_step_fraction,
            0.0001,
            1.0,
            "a fraction",
        )?;
        Check::positive(&k("rate_step_mbps"), self.rate_step_mbps)?;
        Check::range(
            &k("rate_step_mbps"),
            self.rate_step_mbps,
            0.0,
            MAX_RATE_MBPS,
            "a rate in Mbit/s",
        )?;
        if let Some(f) = &self.failures {
            validate_failures(&|x: &str| k(&format!("failures.{x}")), f)?;
        }
        if let Some(d) = &self.degradation {
            validate_degradation(&|x: &str| k(&format!("degradation.{x}")), d)?;
        }
        Ok(())
    }

    fn validate_segments(
        &self,
        k: &dyn Fn(&str) -> String,
        segs: &[SiteSegment],
    ) -> Result<(), RadioError> {
        if segs.is_empty() {
            return Err(RadioError::key(
                k("site_segments"),
                "expected at least one stretch, e.g. [{ from_m = 0, spacing_m = 1500 }]",
            ));
        }
        for (j, g) in segs.iter().enumerate() {
            let sk = |f: &str| k(&format!("site_segments[{j}].{f}"));
            Check::range(
                &sk("from_m"),
                g.from_m,
                0.0,
                MAX_TRACK_M,
                "a position in metres",
            )?;
            Check::range(
                &sk("spacing_m"),
                g.spacing_m,
                50.0,
                100_000.0,
                "a site spacing in metres",
            )?;
            if j > 0 && g.from_m <= segs[j - 1].from_m {
                return Err(RadioError::key(
                    sk("from_m"),
                    "stretches must start at strictly increasing positions",
                ));
            }
            Check::non_negative(&k("site_jitter_m"), self.site_jitter_m)?;
            if self.site_jitter_m >= g.spacing_m / 2.0 {
                return Err(RadioError::key(
                    k("site_jitter_m"),
                    format!(
                        "expected less than half the smallest spacing ({} m in site_segments[{j}]), found {}",
                        g.spacing_m / 2.0,
                        self.site_jitter_m
                    ),
                ));
            }
        }
        if let Some(last) = segs.last() {
            if self.cell_range_m < segs.iter().map(|g| g.spacing_m).fold(0.0, f64::max) {
                return Err(RadioError::key(
                    k("cell_range_m"),
                    format!(
                        "expected at least the largest site spacing ({} m) so a neighbour is always measured",
                        segs.iter().map(|g| g.spacing_m).fold(last.spacing_m, f64::max)
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn validate_failures(k: &dyn Fn(&str) -> String, f: &FailureOptions) -> Result<(), RadioError> {
    for (key, v) in [("q_out_db", f.q_out_db), ("q_in_db", f.q_in_db)] {
        if let Some(v) = v {
            Check::range(&k(key), v, -30.0, 30.0, "an SINR in dB")?;
        }
    }
    let p = f.params(Time::from_ms(10));
    if p.q_in_db < p.q_out_db {
        return Err(RadioError::key(
            k("q_in_db"),
            format!(
                "expected Qin >= Qout ({} dB): in-sync needs a better signal than out-of-sync, found {}",
                p.q_out_db, p.q_in_db
            ),
        ));
    }
    // TS 36.331 §6.3.6 (RLF-TimersAndConstants): N310 n1..n20, N311 n1..n10, T310 0..6000 ms,
    // T304 50..2000 ms (10000 for some targets).
    for (key, v, hi) in [("n310", f.n310, 20), ("n311", f.n311, 10)] {
        if let Some(v) = v {
            if !(1..=hi).contains(&v) {
                return Err(RadioError::key(
                    k(key),
                    format!("expected a count of 1 to {hi} (TS 36.331), found {v}"),
                ));
            }
        }
    }
    for (key, v, lo, hi) in [
        ("t310_ms", f.t310_ms, 0.0, 6000.0),
        ("t304_ms", f.t304_ms, 50.0, 10_000.0),
        ("prep_ms", f.prep_ms, 0.0, 5000.0),
    ] {
        if let Some(v) = v {
            Check::range(&k(key), v, lo, hi, "a time in ms")?;
        }
    }
    if let Some(d) = &f.reestablish {
        if let Some((x, msg)) = d.problem() {
            return Err(RadioError::key(k(&format!("reestablish.{x}")), msg));
        }
        if d.max_ms() > 60_000.0 {
            return Err(RadioError::key(
                k("reestablish.max_ms"),
                "expected a re-establishment of at most 60000 ms (give max_ms)",
            ));
        }
    }
    Ok(())
}

fn validate_degradation(
    k: &dyn Fn(&str) -> String,
    d: &DegradationOptions,
) -> Result<(), RadioError> {
    if let Some(v) = d.harq_rtt_ms {
        Check::range(&k("harq_rtt_ms"), v, 1.0, 100.0, "a round trip in ms")?;
    }
    if let Some(v) = d.max_harq_tx {
        if !(1..=28).contains(&v) {
            return Err(RadioError::key(
                k("max_harq_tx"),
                format!("expected 1 to 28 transmissions (TS 36.331 maxHARQ-Tx), found {v}"),
            ));
        }
    }
    if let Some(v) = d.bler_target {
        Check::range(&k("bler_target"), v, 0.0001, 0.5, "a block error rate")?;
    }
    if let Some(v) = d.sinr_min_db {
        Check::range(&k("sinr_min_db"), v, -20.0, 10.0, "an SINR in dB")?;
    }
    if let Some(v) = d.bler_db_per_decade {
        Check::range(&k("bler_db_per_decade"), v, 0.1, 20.0, "dB per decade")?;
    }
    if let Some(v) = d.rlc_retx_ms {
        Check::range(&k("rlc_retx_ms"), v, 0.0, 2000.0, "a time in ms")?;
    }
    if let Some(v) = d.rlc_max_retx {
        if v > 32 {
            return Err(RadioError::key(
                k("rlc_max_retx"),
                format!("expected 0 to 32 retransmissions (TS 36.331 maxRetxThreshold), found {v}"),
            ));
        }
    }
    Ok(())
}

/// Validate a scenario's radio keys: the train (required when any carrier is given) and every
/// carrier, with unique ids.
pub fn validate(train: Option<&TrainConfig>, carriers: &[CarrierConfig]) -> Result<(), RadioError> {
    if let Some(t) = train {
        t.validate()?;
    }
    for (i, c) in carriers.iter().enumerate() {
        c.validate(i)?;
        if carriers[..i].iter().any(|o| o.id == c.id) {
            return Err(RadioError::key(
                format!("carrier[{i}].id"),
                format!("duplicate carrier id {:?}", c.id),
            ));
        }
    }
    if !carriers.is_empty() && train.is_none() {
        return Err(RadioError::key(
            "train",
            "a [train] table is required when [[carrier]] is given (handovers are logged with the train's position)",
        ));
    }
    Ok(())
}

/// What `measured::load_files` reads for a carrier of a measured model (kept with the
/// configuration it belongs to; `measured.rs` parses and replays it).
/// Loaded measured data of a carrier.
#[derive(Debug, Clone, PartialEq)]
pub enum MeasuredData {
    Csv {
        file: String,
        rows: Vec<CsvRow>,
    },
    Mahimahi {
        file: String,
        opportunities_ms: Vec<u64>,
    },
}

/// One CSV row, with its rate resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvRow {
    pub t_s: f64,
    pub position_m: f64,
    pub rate_bps: u64,
    pub handover: bool,
    pub interruption_ms: Option<f64>,
    pub cell: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let t = TrainConfig::constant(300.0);
        let c = CarrierConfig::grid("A", 25.0, 1340.0, 0.0);
        validate(Some(&t), &[c]).unwrap();
    }

    #[test]
    fn zero_speed_is_a_clear_error() {
        let e = TrainConfig::constant(0.0).validate().unwrap_err();
        assert_eq!(e.key, "train.speed_kmh");
        assert!(e.message.contains("never moves"), "{e}");
        let mut t = TrainConfig::constant(1.0);
        t.speed_kmh = None;
        t.segments = vec![SpeedSegment {
            speed_kmh: 0.0,
            duration_s: 10.0,
            accel_mps2: None,
        }];
        assert_eq!(t.validate().unwrap_err().key, "train.segment");
    }

    #[test]
    fn errors_name_carrier_keys() {
        let t = TrainConfig::constant(300.0);
        let mut c = CarrierConfig::grid("B", 25.0, 1340.0, 670.0);
        c.enb_spacing_m = Some(-5.0);
        let a = CarrierConfig::grid("A", 25.0, 1340.0, 0.0);
        let e = validate(Some(&t), &[a.clone(), c]).unwrap_err();
        assert_eq!(e.key, "carrier[1].enb_spacing_m");
        let mut c = a.clone();
        c.ttt_ms = 250;
        let e = validate(Some(&t), &[c]).unwrap_err();
        assert_eq!(e.key, "carrier[0].ttt_ms");
        assert!(e.message.contains("256"), "{e}");
        let mut c = a.clone();
        c.hysteresis_db = 20.0;
        assert_eq!(
            validate(Some(&t), &[c]).unwrap_err().key,
            "carrier[0].hysteresis_db"
        );
        let e = validate(Some(&t), &[a.clone(), a.clone()]).unwrap_err();
        assert_eq!(e.key, "carrier[1].id");
        let e = validate(None, std::slice::from_ref(&a)).unwrap_err();
        assert_eq!(e.key, "train");
        let mut c = a.clone();
        c.handover_interval_s = Some(24.0);
        assert_eq!(
            validate(Some(&t), &[c]).unwrap_err().key,
            "carrier[0].handover_interval_s"
        );
        let mut c = a;
        c.model = CarrierModel::Scripted;
        c.enb_spacing_m = None;
        assert_eq!(
            validate(Some(&t), &[c]).unwrap_err().key,
            "carrier[0].handover_interval_s"
        );
    }

    #[test]
    fn toml_keys_of_results_md_parse() {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct S {
            train: TrainConfig,
            carrier: Vec<CarrierConfig>,
        }
        let text = r#"
            [train]
            speed_kmh = 300
            track_length_m = 6000
            start_m = 0

            [[carrier]]
            id = "A"
            rate_mbps = 25
            enb_spacing_m = 1340
            enb_offset_m = 300
            first_enb_m = 0
            hysteresis_db = 3
            ttt_ms = 256
            interruption_ms = 50
        "#;
        let s: S = toml::from_str(text).unwrap();
        validate(Some(&s.train), &s.carrier).unwrap();
        assert_eq!(s.carrier[0].enb_spacing_m, Some(1340.0));
        assert_eq!(s.carrier[0].low_rsrp_dbm, -110.0);
    }
}
