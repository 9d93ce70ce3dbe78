//! The experiment frame: what every reproduction shares, so that a study holds only what is its
//! own. A study ([`Study`]) plans its runs (a grid of jobs), runs one job, and analyses the runs
//! into [`Findings`]; the frame runs the jobs in parallel (one [`par_map`]), logs progress,
//! counts the runs, builds the [`Summary`], renders the report through the one page template
//! (crate::page) and writes `OUT/<study>/summary.json` and `OUT/<study>/report.html`
//! (crate::studies runs studies by name and writes `OUT/index.html`). A study with a kernel
//! side runs it from its analysis through [`Context::kernel_runs`] when the caller can run the
//! real kernel.

use crate::findings::{Findings, Meta, Report, Summary, FORMAT};
use crate::{page, sim};
use railpath_scenario::Scenario;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// How a reproduction runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Output directory; each paper writes into `out/<paper>/`.
    pub out: PathBuf,
    /// Seeds per configuration (each configuration runs with seeds 1..=seeds).
    pub seeds: u64,
    /// Parallel runs (threads); 0 = every core.
    pub jobs: usize,
    /// The real kernel, when the caller can run it (root, `railpath repro --testbed`): papers
    /// that have a kernel side run it too and show it beside the simulator.
    pub kernel: Option<KernelRun>,
    /// Runs per kernel configuration (seeds 1..=kernel_runs); each takes the scenario's
    /// duration in real time.
    pub kernel_runs: u64,
    /// Run each seed's kernel configurations at the same time, each on a testbed of its own
    /// (half the wall time; the default runs them one after another, as the published
    /// campaigns were measured).
    pub kernel_side_by_side: bool,
    /// Length of a kernel run, s, for papers whose kernel side is a shortened run (PROXY-LB:
    /// default 120 s); PHA runs its scenario's duration.
    pub kernel_duration_s: Option<f64>,
    /// PROXY-LB: kernel runs with 1..=N cars (default 5).
    pub kernel_cars: Option<usize>,
}

/// Runs a scenario on the real kernel (the namespace testbed), in a work directory of its own,
/// with railpath-gateway's PHA-D controller for flows whose `mechanisms` ask for it.
pub type KernelRun = fn(&Scenario, &Path) -> Result<KernelResult, String>;

/// A kernel run's results (the simulator's result types, so both are summarised alike) and a
/// line saying what the controller did, if one ran.
#[derive(Debug, Clone)]
pub struct KernelResult {
    pub results: railpath_sim::RunResults,
    pub note: String,
}

impl Options {
    /// The simulator alone (no kernel side), `seeds` seeds, every core, into `out`.
    pub fn simulator(out: impl Into<PathBuf>, seeds: u64) -> Options {
        Options {
            out: out.into(),
            seeds,
            jobs: 0,
            kernel: None,
            kernel_runs: 0,
            kernel_side_by_side: false,
            kernel_duration_s: None,
            kernel_cars: None,
        }
    }

    pub fn threads(&self) -> usize {
        if self.jobs > 0 {
            self.jobs
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

/// A study: its grid of runs, one run, and the analysis of all of them.
pub trait Study: Sized + Sync {
    const META: Meta;
    /// One run of the grid: a configuration and a seed.
    type Job: Sync;
    /// What one run gives the analysis.
    type Out: Send;

    /// Prepare the study (its scenarios, anything its runs share) and list its runs.
    fn plan(cx: &mut Context) -> Result<Plan<Self>, String>;

    /// Run one job; called on the frame's worker threads.
    fn run(&self, job: &Self::Job) -> Result<Self::Out, String>;

    /// Turn the runs into findings; a kernel side, if any, runs from here.
    fn analyse(
        &self,
        runs: Runs<Self::Job, Self::Out>,
        cx: &mut Context,
    ) -> Result<Findings, String>;
}

/// A study ready to run: itself, its jobs, and a line saying what they are (for the log).
pub struct Plan<S: Study> {
    pub study: S,
    pub jobs: Vec<S::Job>,
    pub grid: String,
}

/// The jobs and what each gave, in the jobs' order.
pub struct Runs<J, O> {
    pub jobs: Vec<J>,
    pub outs: Vec<O>,
}

impl<J, O> Runs<J, O> {
    pub fn iter(&self) -> impl Iterator<Item = (&J, &O)> {
        self.jobs.iter().zip(&self.outs)
    }

    /// The outputs of the jobs `keep` selects, in order.
    pub fn select(&self, keep: impl Fn(&J) -> bool) -> Vec<&O> {
        self.iter()
            .filter(|(j, _)| keep(j))
            .map(|(_, o)| o)
            .collect()
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

/// What a study's plan and analysis may use of the frame: the options, its output directory,
/// the log, the parallel runs and the kernel.
pub struct Context<'a> {
    name: &'static str,
    opts: &'a Options,
    dir: PathBuf,
    log: &'a mut dyn FnMut(&str),
    /// Runs made so far: the grid's and any the analysis made (the summary's `runs`).
    runs: u64,
}

impl<'a> Context<'a> {
    /// A context for study `name` writing into `dir`.
    pub fn new(
        name: &'static str,
        opts: &'a Options,
        dir: &Path,
        log: &'a mut dyn FnMut(&str),
    ) -> Context<'a> {
        Context {
            name,
            opts,
            dir: dir.to_path_buf(),
            log,
            runs: 0,
        }
    }

    pub fn opts(&self) -> &Options {
        self.opts
    }

    /// The study's output directory (kernel runs work under it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A progress line, prefixed with the study's name.
    pub fn log(&mut self, msg: &str) {
        (self.log)(&format!("{}: {msg}", self.name))
    }

    pub fn threads(&self) -> usize {
        self.opts.threads()
    }

    /// `f` over `jobs` on the options' threads, results in the jobs' order (see [`par_map`]).
    pub fn par_map<J: Sync, R: Send>(
        &self,
        jobs: &[J],
        f: impl Fn(&J) -> Result<R, String> + Sync,
    ) -> Result<Vec<R>, String> {
        par_map(self.threads(), jobs, f)
    }

    /// The real kernel, when the caller can run it.
    pub fn kernel(&self) -> Option<KernelRun> {
        self.opts.kernel
    }

    /// Runs counted so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Count `n` runs in the summary's `runs` (the frame counts the grid's; a study counts the
    /// runs it makes outside the grid, such as a kernel side and its simulator counterpart).
    pub fn count_runs(&mut self, n: u64) {
        self.runs += n;
    }

    /// Run `batch` on the kernel (`k`), one after another (stopping at the first failure), or
    /// all at the same time, each on a testbed of its own (`together`). Each run works in its
    /// own directory; the log says what runs, for how long, and what the run noted.
    pub fn kernel_runs(
        &mut self,
        k: KernelRun,
        batch: &[KernelJob],
        together: bool,
    ) -> Result<Vec<KernelResult>, String> {
        for j in batch {
            std::fs::create_dir_all(&j.work)
                .map_err(|e| format!("cannot create {}: {e}", j.work.display()))?;
        }
        let results: Vec<Result<KernelResult, String>> = if together {
            let labels: Vec<&str> = batch.iter().map(|j| j.label.as_str()).collect();
            self.log(&format!(
                "kernel runs ({}) side by side: {:.0} s on the testbed",
                labels.join("; "),
                duration(batch)
            ));
            std::thread::scope(|scope| {
                let runs: Vec<_> = batch
                    .iter()
                    .map(|j| scope.spawn(move || k(&j.scenario, &j.work)))
                    .collect();
                runs.into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err("a kernel run panicked".to_string()))
                    })
                    .collect()
            })
        } else {
            let mut v = Vec::new();
            for (i, j) in batch.iter().enumerate() {
                self.log(&format!(
                    "kernel run {}/{} ({}): {:.0} s on the testbed",
                    i + 1,
                    batch.len(),
                    j.label,
                    j.scenario.run.duration_s
                ));
                let r = k(&j.scenario, &j.work);
                let failed = r.is_err();
                v.push(r);
                if failed {
                    break;
                }
            }
            v
        };
        let mut out = Vec::new();
        for (j, r) in batch.iter().zip(results) {
            let r = r.map_err(|e| format!("kernel run ({}): {e}", j.label))?;
            if !r.note.is_empty() {
                self.log(&format!("kernel run ({}) done: {}", j.label, r.note));
            }
            out.push(r);
        }
        Ok(out)
    }
}

/// The longest scenario of a batch, s.
fn duration(batch: &[KernelJob]) -> f64 {
    batch
        .iter()
        .map(|j| j.scenario.run.duration_s)
        .fold(0.0, f64::max)
}

/// One kernel run: the scenario, its work directory, and a label for the log and errors.
pub struct KernelJob {
    pub scenario: Scenario,
    pub work: PathBuf,
    pub label: String,
}

/// `f` over `jobs` on `threads` threads, results in the jobs' order; the first error wins.
pub fn par_map<J: Sync, R: Send>(
    threads: usize,
    jobs: &[J],
    f: impl Fn(&J) -> Result<R, String> + Sync,
) -> Result<Vec<R>, String> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<R, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|sc| {
        for _ in 0..threads.min(jobs.len()).max(1) {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else {
                    break;
                };
                let out = f(job);
                results.lock().expect("no poisoned lock")[i] = Some(out);
            });
        }
    });
    results
        .into_inner()
        .expect("no poisoned lock")
        .into_iter()
        .map(|r| r.ok_or_else(|| "a run did not finish".to_string())?)
        .collect()
}

/// An entry of the registry: a study's description and how the frame runs it.
pub struct Entry {
    pub meta: Meta,
    reproduce: fn(&mut Context) -> Result<Findings, String>,
}

impl Entry {
    pub const fn of<S: Study>() -> Entry {
        Entry {
            meta: S::META,
            reproduce: reproduce::<S>,
        }
    }
}

/// Plan, run every job, analyse.
fn reproduce<S: Study>(cx: &mut Context) -> Result<Findings, String> {
    if let (Some(why), Some(_)) = (S::META.no_kernel, cx.kernel()) {
        cx.log(&format!(
            "no kernel side: {why} (the simulator's runs follow)"
        ));
    }
    let Plan { study, jobs, grid } = S::plan(cx)?;
    cx.log(&format!(
        "{} runs ({grid}) on {} threads",
        jobs.len(),
        cx.threads()
    ));
    let outs = cx.par_map(&jobs, |j| study.run(j))?;
    cx.log(&format!("{} runs done", jobs.len()));
    cx.count_runs(jobs.len() as u64);
    study.analyse(Runs { jobs, outs }, cx)
}

/// A study reproduced: its summary (`summary.json`) and its report's content.
#[derive(Debug, Clone)]
pub struct Reproduction {
    pub meta: Meta,
    pub summary: Summary,
    pub report: Report,
}

/// Reproduce `entry` into `dir`: run it, write `dir/summary.json` and `dir/report.html`.
pub fn reproduce_into(
    entry: &Entry,
    opts: &Options,
    dir: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<Reproduction, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut cx = Context::new(entry.meta.name, opts, dir, log);
    let findings = (entry.reproduce)(&mut cx)?;
    let runs = cx.runs;
    let Findings {
        seeds,
        numbers,
        claims,
        report,
        runs_table,
    } = findings;
    let summary = Summary {
        format: FORMAT.into(),
        paper: entry.meta.name.into(),
        source: entry.meta.source.into(),
        railpath_version: sim::VERSION.into(),
        seeds,
        runs,
        claims,
        numbers,
        runs_table,
    };
    write_json(&dir.join("summary.json"), &summary)?;
    write_text(
        &dir.join("report.html"),
        &page::report(&entry.meta, &summary, &report),
    )?;
    Ok(Reproduction {
        meta: entry.meta,
        summary,
        report,
    })
}

pub fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    text.push('\n');
    write_text(path, &text)
}

fn write_text(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_map_keeps_the_jobs_order_and_reports_an_error() {
        let jobs: Vec<u64> = (0..50).collect();
        for threads in [1, 2, 7] {
            let got = par_map(threads, &jobs, |&j| Ok(j * j)).unwrap();
            assert_eq!(got, jobs.iter().map(|j| j * j).collect::<Vec<_>>());
        }
        let err = par_map(2, &jobs, |&j| {
            if j == 17 {
                Err(format!("job {j} failed"))
            } else {
                Ok(j)
            }
        });
        assert_eq!(err, Err("job 17 failed".to_string()));
        assert_eq!(
            par_map(2, &[] as &[u64], |&j| Ok(j)).unwrap(),
            Vec::<u64>::new()
        );
    }
}
