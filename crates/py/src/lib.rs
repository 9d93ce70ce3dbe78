//! `railpath._core`: the Rust side of the Python package `railpath` (python/railpath).
//!
//! One source of truth: scenarios are loaded and validated by `railpath_scenario` exactly as the
//! CLI does, runs are `railpath_sim::run`; this module only moves values across the language
//! boundary. Runs release the GIL, so a thread pool runs simulations on every core.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use railpath_scenario::ScenarioError as RsScenarioError;
use std::path::Path;

pyo3::create_exception!(
    railpath,
    ScenarioError,
    PyValueError,
    "An invalid scenario or override; `file` and `key` name where, the message says what was expected."
);

fn scenario_error(e: RsScenarioError) -> PyErr {
    Python::attach(|py| {
        let err = ScenarioError::new_err(e.to_string());
        let v = err.value(py);
        // Attributes for programs; the message (str) is the CLI's.
        let _ = v.setattr("file", e.file.as_str());
        let _ = v.setattr("key", e.key.as_str());
        err
    })
}

fn load(
    text: &str,
    file: &str,
    base: &str,
    overrides: &[String],
) -> Result<railpath_scenario::Scenario, RsScenarioError> {
    railpath_scenario::load_text(text, file, Path::new(base), overrides)
}

/// Validate scenario text as `railpath run` does (with `overrides` in the `--set` syntax);
/// raises `ScenarioError` naming the file, key and expected range.
#[pyfunction]
#[pyo3(signature = (text, file, base, overrides=Vec::new()))]
fn validate(text: &str, file: &str, base: &str, overrides: Vec<String>) -> PyResult<()> {
    load(text, file, base, &overrides)
        .map(|_| ())
        .map_err(scenario_error)
}

/// TOML text of a scenario given as JSON (a Python dict dumped by `json.dumps`).
#[pyfunction]
fn toml_from_json(json: &str, file: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| scenario_error(RsScenarioError::new(file, "", format!("not JSON: {e}"))))?;
    let t: toml::Value = serde_json::from_value(v).map_err(|e| {
        scenario_error(RsScenarioError::new(
            file,
            "",
            format!("not a scenario table: {e}"),
        ))
    })?;
    if !t.is_table() {
        return Err(scenario_error(RsScenarioError::new(
            file,
            "",
            "expected a table of scenario keys",
        )));
    }
    toml::to_string(&t).map_err(|e| {
        scenario_error(RsScenarioError::new(
            file,
            "",
            format!("cannot be written as TOML: {e}"),
        ))
    })
}

/// One run's outputs: summary.json text, bin width, and every series as
/// (flow, subflow, metric, values).
type RunOut = (String, f64, Vec<(String, String, String, Vec<f64>)>);

/// Load, validate and run a scenario; the GIL is released while it loads and runs. With
/// `pcap`, packet captures of both ends of every link go into that directory (as `railpath
/// run --pcap`; format and snap length from the scenario's `[capture]`).
#[pyfunction]
#[pyo3(signature = (text, file, base, overrides=Vec::new(), pcap=None))]
fn run(
    py: Python<'_>,
    text: &str,
    file: &str,
    base: &str,
    overrides: Vec<String>,
    pcap: Option<String>,
) -> PyResult<RunOut> {
    let (text, file, base) = (text.to_string(), file.to_string(), base.to_string());
    let out = py.detach(move || -> Result<RunOut, PyErrBox> {
        let s = load(&text, &file, &base, &overrides).map_err(PyErrBox::Scenario)?;
        let s = s.validate().map_err(PyErrBox::Scenario)?;
        let start = std::time::Instant::now();
        let sim_err = |e| match e {
            // The scenario's fault found while building the run: a ScenarioError, as the CLI's
            // exit status 2.
            railpath_sim::SimError::Input(e) => PyErrBox::Scenario(e),
            e => PyErrBox::Run(e.to_string()),
        };
        // Only with `pcap` (there is no output directory for a [capture] table's `dir`); the
        // table's format and snap length apply.
        let capture = pcap.and_then(|d| {
            railpath_capture::CaptureOptions::for_run(
                s.capture.as_ref(),
                std::path::Path::new("."),
                Some(std::path::PathBuf::from(d)),
            )
        });
        let mut r = match capture {
            None => railpath_sim::run(&s).map_err(sim_err)?,
            Some(c) => match railpath_capture::run_with_capture(&s, &mut |_| {}, &c) {
                Ok((r, _)) => r,
                Err(railpath_capture::sim::CaptureRunError::Sim(e)) => return Err(sim_err(e)),
                Err(railpath_capture::sim::CaptureRunError::Capture(m)) => {
                    return Err(PyErrBox::Run(m))
                }
            },
        };
        r.summary.wall_s = start.elapsed().as_secs_f64();
        let summary =
            serde_json::to_string(&r.summary).map_err(|e| PyErrBox::Run(e.to_string()))?;
        let series = r
            .series
            .into_iter()
            .map(|s| (s.flow, s.subflow, s.metric.to_string(), s.values))
            .collect();
        Ok((summary, r.bin_s, series))
    });
    out.map_err(|e| match e {
        PyErrBox::Scenario(e) => scenario_error(e),
        PyErrBox::Value(m) => PyValueError::new_err(m),
        PyErrBox::Run(m) => pyo3::exceptions::PyRuntimeError::new_err(m),
    })
}

/// Run a paper's reproduction (`railpath repro`): the same code as the CLI. Returns the
/// summaries as JSON text; the GIL is released while it runs.
#[pyfunction]
#[pyo3(signature = (paper, out, seeds=10, jobs=0))]
fn repro(py: Python<'_>, paper: &str, out: &str, seeds: u64, jobs: usize) -> PyResult<String> {
    if paper != "all" && !railpath_repro::names().contains(&paper) {
        return Err(PyValueError::new_err(format!(
            "unknown paper {paper:?}; expected all or one of {}",
            railpath_repro::names().join(", ")
        )));
    }
    let opts = railpath_repro::Options {
        jobs,
        ..railpath_repro::Options::simulator(out, seeds)
    };
    let paper = paper.to_string();
    let done = py
        .detach(move || railpath_repro::run(&paper, &opts, &mut |_| {}))
        .map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
    let summaries: Vec<&railpath_repro::Summary> = done.iter().map(|r| &r.summary).collect();
    serde_json::to_string(&summaries)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// The analysis of packet captures (`railpath analyze`): its JSON summary, bin width and every
/// series as (flow, subflow, metric, values). `text`/`file`/`base`/`overrides` give the
/// scenario the captures are of (flow names, bins, duration), when known. Bad captures raise
/// ValueError naming the file and record. The GIL is released while it reads.
#[pyfunction]
#[pyo3(signature = (paths, text=None, file=None, base=None, overrides=Vec::new(), bin_ms=None, stall_ms=200.0))]
#[allow(clippy::too_many_arguments)]
fn analyze(
    py: Python<'_>,
    paths: Vec<String>,
    text: Option<String>,
    file: Option<String>,
    base: Option<String>,
    overrides: Vec<String>,
    bin_ms: Option<f64>,
    stall_ms: f64,
) -> PyResult<RunOut> {
    let out = py.detach(move || -> Result<RunOut, PyErrBox> {
        let mut opts = railpath_capture::AnalyzeOptions {
            stall_s: stall_ms / 1000.0,
            ..Default::default()
        };
        if let Some(text) = text {
            let s = load(
                &text,
                file.as_deref().unwrap_or("<string>"),
                base.as_deref().unwrap_or("."),
                &overrides,
            )
            .map_err(PyErrBox::Scenario)?;
            opts.flow_names = s.flows.iter().map(|f| f.id.clone()).collect();
            opts.bin_s = s.run.bin_ms / 1000.0;
            opts.duration_s = Some(s.run.duration_s);
        }
        if let Some(b) = bin_ms {
            if !(b.is_finite() && b >= 0.001) {
                return Err(PyErrBox::Value(format!(
                    "bin_ms: expected at least 0.001, found {b}"
                )));
            }
            opts.bin_s = b / 1000.0;
        }
        if !(stall_ms.is_finite() && stall_ms >= 0.0) {
            return Err(PyErrBox::Value(format!(
                "stall_ms: expected >= 0, found {stall_ms}"
            )));
        }
        let paths: Vec<std::path::PathBuf> = paths.into_iter().map(Into::into).collect();
        let a =
            railpath_capture::analyze(&paths, &opts).map_err(|e| PyErrBox::Value(e.to_string()))?;
        let summary =
            serde_json::to_string(&a.summary).map_err(|e| PyErrBox::Run(e.to_string()))?;
        let bin = a.summary.bin_s;
        let series = a
            .series
            .into_iter()
            .map(|s| (s.flow, s.subflow, s.metric.to_string(), s.values))
            .collect();
        Ok((summary, bin, series))
    });
    out.map_err(|e| match e {
        PyErrBox::Scenario(e) => scenario_error(e),
        PyErrBox::Value(m) => PyValueError::new_err(m),
        PyErrBox::Run(m) => pyo3::exceptions::PyRuntimeError::new_err(m),
    })
}

/// Errors built without the GIL, turned into Python exceptions after.
enum PyErrBox {
    Scenario(RsScenarioError),
    Run(String),
    /// Bad input that is not a scenario (a capture, an argument): ValueError.
    Value(String),
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("__version__", railpath_sim::VERSION)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(toml_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(repro, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    Ok(())
}
