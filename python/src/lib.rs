//! `trawl._native`: trawl's command line and a cluster scan's pieces for Python, in-process.
//! Long calls (a shard's map, a partition's reduce, the outputs) release the interpreter's
//! lock, so that a Dask worker's other threads (its heartbeats) go on meanwhile. `trawl.scan`'s
//! run and its typed exceptions are `scan`'s; a cluster audit's pieces, `audit`'s.

mod audit;
mod scan;

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use trawl_cli::dask::{ClusterPlan, OpenOutputs, RunOutput};
use trawl_cluster::{ListBudget, Listing, ShardBounds, ShardPart};

pyo3::create_exception!(
    trawl._native,
    BatchError,
    PyValueError,
    "A map's batch a reducer refused: args are (the map's place in the reduce's input, why)."
);

/// `trawl scan`'s flags, parsed and checked for a cluster.
#[pyclass(name = "Plan", frozen)]
struct Plan(ClusterPlan);

/// A shard's map for Python: report, records, totals, one batch set per partition.
type PyMap = (Py<PyBytes>, Py<PyBytes>, Py<PyBytes>, Vec<Py<PyBytes>>);

/// A path from the bytes Python passed.
pub(crate) fn path(b: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(b))
}

/// Command-line arguments from the bytes Python passed.
pub(crate) fn os_args(v: Vec<Vec<u8>>) -> Vec<OsString> {
    v.into_iter().map(OsString::from_vec).collect()
}

#[pymethods]
impl Plan {
    /// Parses `trawl scan`'s arguments (paths and flags, without `trawl scan`).
    #[new]
    fn new(args: Vec<Vec<u8>>) -> PyResult<Plan> {
        ClusterPlan::parse(os_args(args))
            .map(Plan)
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))
    }

    /// What each shard's map computes because of the outputs asked for (part of a
    /// checkpoint's key).
    fn computes(&self) -> Vec<&'static str> {
        self.0.computes()
    }

    /// Whether the scan measures data reduction.
    fn reducing(&self) -> bool {
        self.0.reducing()
    }

    /// Whether `-q` was given (as trawl's flags read it).
    fn quiet(&self) -> bool {
        self.0.quiet()
    }

    /// The roots as given, as bytes.
    fn roots(&self, py: Python<'_>) -> Vec<Py<PyBytes>> {
        self.0
            .roots()
            .iter()
            .map(|r| PyBytes::new(py, r.as_os_str().as_bytes()).unbind())
            .collect()
    }

    /// Where each PATH given stands among the arguments parsed (None for one that cannot be
    /// placed), in the order given: the arguments to replace to rewrite the paths.
    fn path_places(&self) -> Vec<Option<usize>> {
        self.0.path_places().to_vec()
    }

    /// The arguments that decide a shard's result (as bytes): every one given but those that
    /// say where an output goes or how much is said, a manifest by its format alone, spelled
    /// `--flag=VALUE` whatever way they were given (part of a checkpoint's key).
    fn result_args(&self, py: Python<'_>) -> Vec<Py<PyBytes>> {
        self.0
            .result_args()
            .iter()
            .map(|a| PyBytes::new(py, a.as_bytes()).unbind())
            .collect()
    }

    /// A listing task: root number `idx` (`dirs` None) or each of `dirs` (bytes), depth first
    /// within a task's budget; the listing as one bytes object, for [`Walk::add`].
    #[pyo3(signature = (idx, dirs=None))]
    fn list(
        &self,
        py: Python<'_>,
        idx: usize,
        dirs: Option<Vec<Vec<u8>>>,
    ) -> PyResult<Py<PyBytes>> {
        let dirs = dirs.map(|d| d.into_iter().map(path).collect());
        let work = self.0.work();
        let l = py
            .detach(|| trawl_cluster::list_task(work, idx, dirs, ListBudget::default()))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &l.encode()).unbind())
    }

    /// Reads one shard: (report, records, totals, [one fingerprint batch set per partition]).
    fn map(&self, py: Python<'_>, files: Vec<Vec<u8>>, partitions: u32) -> PyResult<PyMap> {
        let files: Vec<PathBuf> = files.into_iter().map(path).collect();
        let r = py
            .detach(|| trawl_cluster::map(self.0.work(), files, partitions))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        let b = |v: &[u8]| PyBytes::new(py, v).unbind();
        Ok((
            b(&r.report),
            b(&r.records),
            b(&r.totals),
            r.partitions.iter().map(|p| b(p)).collect(),
        ))
    }

    /// Opens the outputs before anything is read; returns them and their (device, inode).
    fn open_outputs(&self) -> PyResult<(Outputs, Vec<(u64, u64)>)> {
        let (o, ids) = self
            .0
            .open_outputs()
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
        Ok((Outputs(Mutex::new(Some(o))), ids))
    }

    /// Opens the run's own figures file (`flag` names it in messages, e.g. `--stats`) as
    /// trawl's outputs are opened: refused (ValueError) where it is a root or another output.
    fn open_run_output(&self, flag: &str, path: Vec<u8>) -> PyResult<RunFile> {
        self.0
            .open_run_output(flag, &crate::path(path))
            .map(|o| RunFile(Mutex::new(Some(o))))
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))
    }

    /// A merge of the shards' parts, fed one at a time ([`Merger::add`]).
    fn merge(&self) -> Merger {
        Merger(Mutex::new(Some(trawl_cluster::Merge::new(self.0.work()))))
    }

    /// Writes the outputs from the merged shards and the partitions' counts as `trawl scan`
    /// does, and prints its summary; returns the exit code.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        py: Python<'_>,
        outputs: &Outputs,
        merger: &Merger,
        partitions: Vec<Vec<u8>>,
        walk: &Walk,
        seconds: f64,
    ) -> PyResult<u8> {
        let out = take(&outputs.0, "these outputs were already written")?;
        let merge = take(&merger.0, "this merge was already finished")?;
        let walk = walk
            .0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?;
        let started = Instant::now() - Duration::from_secs_f64(seconds.max(0.0));
        Ok(py.detach(|| {
            self.0
                .finish(out, merge, &partitions, walk.problems(), started)
        }))
    }
}

/// What a mutex holds, taken once.
fn take<T>(m: &Mutex<Option<T>>, twice: &str) -> PyResult<T> {
    m.lock()
        .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?
        .take()
        .ok_or_else(|| PyRuntimeError::new_err(twice.to_string()))
}

/// The shards' parts merged so far, on the client.
#[pyclass(name = "Merger", frozen)]
struct Merger(Mutex<Option<trawl_cluster::Merge>>);

#[pymethods]
impl Merger {
    /// Takes the next shard's (report, records, totals), in the order its map was reduced in;
    /// `worker`: the worker that read it, named in its failures; `walk`: the walk that found
    /// its files, which says which worker listed a file that `worker` could not find or open.
    #[pyo3(signature = (report, records, totals, worker=None, walk=None))]
    fn add(
        &self,
        py: Python<'_>,
        report: Vec<u8>,
        records: Vec<u8>,
        totals: Vec<u8>,
        worker: Option<String>,
        walk: Option<&Walk>,
    ) -> PyResult<()> {
        let part = ShardPart {
            report,
            records,
            totals,
            worker,
        };
        let mut g = self
            .0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?;
        let m = g
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("this merge was already finished"))?;
        let walk = walk
            .map(|w| w.0.lock())
            .transpose()
            .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?;
        let walk: Option<&trawl_cluster::Walk> = walk.as_deref();
        py.detach(|| m.add_listed(&part, |name| walk?.listed_by(name).map(str::to_string)))
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }
}

/// A cluster scan's outputs, open until [`Plan::finish`] writes them; dropped unwritten, they
/// leave nothing behind.
#[pyclass(name = "Outputs", frozen)]
struct Outputs(Mutex<Option<OpenOutputs>>);

/// A file of the cluster run's own (`--stats`), open as a temporary file until written;
/// dropped unwritten, it leaves nothing behind.
#[pyclass(name = "RunFile", frozen)]
pub(crate) struct RunFile(pub(crate) Mutex<Option<RunOutput>>);

#[pymethods]
impl RunFile {
    /// Writes `data` and renames the file into place; OSError with the file's name and the
    /// reason when it cannot (a full disk).
    fn write(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        let out = take(&self.0, "this file was already written")?;
        py.detach(|| out.write(&data))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{e:#}")))
    }

    /// Device and inode of its temporary file (for the walk to leave out), if it is a file.
    fn identity(&self) -> PyResult<Option<(u64, u64)>> {
        Ok(self
            .0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?
            .as_ref()
            .and_then(RunOutput::identity))
    }
}

/// Counts one fingerprint partition from every map's batch set (in map order); the counts as
/// bytes for the client. A batch from another trawl version, or damaged, is refused:
/// `BatchError(map, why)`.
#[pyfunction]
fn reduce_partition(py: Python<'_>, parts: Vec<Vec<u8>>) -> PyResult<Py<PyBytes>> {
    let r = py.detach(|| {
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        trawl_cluster::reduce(&refs)
    });
    match r {
        Ok(b) => Ok(PyBytes::new(py, &b).unbind()),
        Err(e) => Err(BatchError::new_err((e.map, e.reason))),
    }
}

/// A shard for Python: (key, root number, names, bytes).
type PyShard = (String, usize, Vec<Py<PyBytes>>, u64);

/// What the listing tasks found, on the client: files (the outputs' own left out), the
/// entries skipped or failed, and the shards the files are cut into.
#[pyclass(name = "Walk", frozen)]
struct Walk(Mutex<trawl_cluster::Walk>);

#[pymethods]
impl Walk {
    /// `excluded`: (device, inode) of the outputs.
    #[new]
    fn new(excluded: Vec<(u64, u64)>) -> Walk {
        Walk(Mutex::new(trawl_cluster::Walk::new(excluded)))
    }

    /// Takes a listing task's result for root number `root` (`worker`: the worker that listed,
    /// named in its failures); the directories it left, to list next.
    #[pyo3(signature = (root, listing, worker=None))]
    fn add(
        &self,
        py: Python<'_>,
        root: usize,
        listing: Vec<u8>,
        worker: Option<&str>,
    ) -> PyResult<Vec<Py<PyBytes>>> {
        let l = Listing::decode(&listing).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let dirs = l
            .dirs
            .iter()
            .map(|d| PyBytes::new(py, d.as_os_str().as_bytes()).unbind())
            .collect();
        self.0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?
            .add(root, l, worker);
        Ok(dirs)
    }

    /// (files found, listing results taken).
    fn counts(&self) -> PyResult<(usize, usize)> {
        let w = self
            .0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?;
        Ok((w.files(), w.listings()))
    }

    /// The files cut into shards for `workers` workers, each at most `max_files` files and
    /// `max_bytes` bytes: [(key, root, [paths], bytes)], the same files always giving the same
    /// shards and keys.
    fn shards(
        &self,
        py: Python<'_>,
        max_bytes: u64,
        max_files: usize,
        workers: usize,
    ) -> PyResult<Vec<PyShard>> {
        let w = self
            .0
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned by a panic"))?;
        let bounds = ShardBounds {
            max_bytes,
            max_files,
            workers,
        };
        let shards = py.detach(|| w.shards(bounds));
        Ok(shards
            .into_iter()
            .map(|s| {
                let names = s
                    .files
                    .iter()
                    .map(|f| PyBytes::new(py, f.as_os_str().as_bytes()).unbind())
                    .collect();
                (s.key, s.root, names, s.bytes)
            })
            .collect())
    }
}

/// A size as trawl's flags read it (`512M`, `8GiB`, `4096`), in bytes; ValueError with the
/// forms it takes otherwise.
#[pyfunction]
fn parse_size(s: &str) -> PyResult<u64> {
    trawl_cli::parse_size(s).map_err(|e| PyValueError::new_err(format!("{e:#}")))
}

/// The scheduler's address in a scheduler file (bytes: its path), read as trawl reads a small
/// input; ValueError naming the file for one that cannot be read or holds none.
#[pyfunction]
fn scheduler_address(path: Vec<u8>) -> PyResult<String> {
    trawl_cli::dask::scheduler::scheduler_address(&crate::path(path))
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))
}

/// `trawl scan`'s (or, with `command` "audit", `trawl audit`'s) arguments with each
/// `--exclude-from FILE` read here and given as its patterns (`--exclude=PATTERN`), for the
/// workers, which parse the flags again where FILE may not be; ValueError with trawl's words.
#[pyfunction]
fn worker_args(py: Python<'_>, command: &str, args: Vec<Vec<u8>>) -> PyResult<Vec<Py<PyBytes>>> {
    let out = trawl_cli::dask::worker_args(command, os_args(args))
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    Ok(out
        .iter()
        .map(|a| PyBytes::new(py, a.as_bytes()).unbind())
        .collect())
}

/// The trawl version and batch format every worker of a cluster must share.
#[pyfunction]
fn wire_version() -> String {
    trawl_cluster::wire_version()
}

/// Runs a trawl command line in-process (`argv[0]` is the program's name); its exit code.
/// Signals stay the interpreter's.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<Vec<u8>>) -> u8 {
    let argv = os_args(argv);
    py.detach(|| trawl_cli::main_with(argv, false))
}

/// How many of the `left` directories a listing task handed back go to each next task, for
/// `workers` workers (trawl-cluster's one rule for a scan's and an audit's listings).
#[pyfunction]
fn listing_batch(left: usize, workers: usize) -> usize {
    trawl_cluster::listing_batch(left, workers)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Plan>()?;
    m.add_class::<Outputs>()?;
    m.add_class::<Merger>()?;
    m.add_class::<Walk>()?;
    m.add_class::<RunFile>()?;
    m.add("BatchError", m.py().get_type::<BatchError>())?;
    m.add_function(wrap_pyfunction!(reduce_partition, m)?)?;
    m.add_function(wrap_pyfunction!(wire_version, m)?)?;
    m.add_function(wrap_pyfunction!(worker_args, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(scheduler_address, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(scan::scan, m)?)?;
    m.add_function(wrap_pyfunction!(listing_batch, m)?)?;
    audit::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
