//! A cluster audit for Python: `trawl audit` run on the client with its listings and reads
//! pulled from two Python generators (the Dask tasks), and a worker's side of those tasks.

use std::sync::Arc;

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use trawl_cluster::{AuditFeed as Plan, AuditWorker as Worker, Remote, RemoteSource};

use crate::{os_args, path};

/// The plan's files, a shard at a time, for the generator that runs the read tasks.
#[pyclass(name = "Feed", frozen)]
struct Feed(Arc<Plan>);

#[pymethods]
impl Feed {
    /// (files, bytes) the plan holds.
    fn planned(&self) -> (u64, u64) {
        (self.0.files, self.0.bytes)
    }

    /// (files, bytes) one read task holds at most, for `workers` workers and the bounds
    /// `max_bytes` and `max_files` (`--shard-size`, `--shard-files`): the plan cut as a scan's
    /// files are cut into shards (trawl-cluster's `ShardBounds::caps`).
    fn caps(&self, max_bytes: u64, max_files: usize, workers: usize) -> (usize, u64) {
        let bounds = trawl_cluster::ShardBounds {
            max_bytes,
            max_files,
            workers,
        };
        bounds.caps(self.0.files, self.0.bytes)
    }

    /// The next shard (bytes for a read task) of at most `max_files` files and about
    /// `max_bytes` bytes; None at the plan's end.
    fn next(&self, py: Python<'_>, max_files: usize, max_bytes: u64) -> Option<Py<PyBytes>> {
        let plan = &self.0;
        py.detach(|| plan.next_shard(max_files, max_bytes))
            .map(|b| PyBytes::new(py, &b).unbind())
    }
}

/// The two generators: `walk(spec, roots)` yields listing results, `read(feed)` yields read
/// results. A Python exception ends the audit; it is kept to be raised again when it is an
/// interrupt.
struct PyRemote {
    walk: Py<PyAny>,
    read: Py<PyAny>,
    stream: Option<Py<PyAny>>,
    error: Option<PyErr>,
}

impl PyRemote {
    fn fail(&mut self, py: Python<'_>, e: PyErr) -> String {
        let why = if e.is_instance_of::<PyKeyboardInterrupt>(py) {
            "interrupted".to_string()
        } else {
            e.value(py).to_string()
        };
        self.error = Some(e);
        why
    }

    fn start(&mut self, f: impl FnOnce(Python<'_>) -> PyResult<Py<PyAny>>) -> Result<(), String> {
        Python::attach(|py| {
            match f(py).and_then(|g| Ok(g.bind(py).try_iter()?.unbind().into_any())) {
                Ok(it) => {
                    self.stream = Some(it);
                    Ok(())
                }
                Err(e) => Err(self.fail(py, e)),
            }
        })
    }
}

impl Remote for PyRemote {
    fn walk(&mut self, spec: &[u8], roots: usize) -> Result<(), String> {
        let walk = Python::attach(|py| self.walk.clone_ref(py));
        self.start(|py| walk.call1(py, (PyBytes::new(py, spec), roots)))
    }

    fn read(&mut self, feed: Arc<Plan>) -> Result<(), String> {
        let read = Python::attach(|py| self.read.clone_ref(py));
        self.start(|py| read.call1(py, (Feed(feed),)))
    }

    fn next(&mut self) -> Result<Option<Vec<u8>>, String> {
        Python::attach(|py| {
            let Some(it) = self.stream.as_ref() else {
                return Ok(None);
            };
            // A Ctrl-C that came while the engine ran: raised here, as the generator would.
            if let Err(e) = py.check_signals() {
                return Err(self.fail(py, e));
            }
            let r = it.bind(py).call_method0("__next__");
            match r {
                Ok(b) => match b.extract::<Vec<u8>>() {
                    Ok(v) => Ok(Some(v)),
                    Err(e) => Err(self.fail(py, e)),
                },
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyStopIteration>(py) => Ok(None),
                Err(e) => Err(self.fail(py, e)),
            }
        })
    }

    fn close(&mut self) {
        Python::attach(|py| {
            if let Some(it) = self.stream.take() {
                // A generator's `finally` runs now (its tasks are let go), not when collected.
                if let Ok(close) = it.bind(py).getattr("close") {
                    // An interrupt that lands here is kept, not lost with the close.
                    if let Err(e) = close.call0()
                        && e.is_instance_of::<PyKeyboardInterrupt>(py)
                        && self.error.is_none()
                    {
                        self.error = Some(e);
                    }
                }
            }
        })
    }
}

/// Runs `trawl audit ARGS` here, its listings from `walk(spec, roots)` and its reads from
/// `read(feed)` (generators yielding the tasks' results); returns its exit code. An interrupt
/// raised by a generator is raised again once the catalog has recorded the run as interrupted.
#[pyfunction]
fn audit(py: Python<'_>, args: Vec<Vec<u8>>, walk: Py<PyAny>, read: Py<PyAny>) -> PyResult<u8> {
    let mut remote = RemoteSource(PyRemote {
        walk,
        read,
        stream: None,
        error: None,
    });
    let args = os_args(args);
    let code = py.detach(|| trawl_cli::dask::audit::audit(args, &mut remote));
    match remote.0.error.take() {
        Some(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => Err(e),
        _ => Ok(code),
    }
}

/// Opens a cluster audit's own figures file (`flag` names it in messages, e.g. `--stats`) for
/// `trawl audit`'s arguments: refused (ValueError) where it is the catalog, one of SQLite's
/// files beside it, or another output.
#[pyfunction]
fn open_audit_output(args: Vec<Vec<u8>>, flag: &str, path: Vec<u8>) -> PyResult<crate::RunFile> {
    trawl_cli::dask::audit::open_run_output(os_args(args), flag, &crate::path(path))
        .map(|o| crate::RunFile(std::sync::Mutex::new(Some(o))))
        .map_err(|e| PyValueError::new_err(format!("{e:#}")))
}

/// Whether `-q` silences a cluster audit's summaries and notes, as `trawl audit`'s flags read
/// it (false for arguments that do not parse).
#[pyfunction]
fn audit_quiet(args: Vec<Vec<u8>>) -> bool {
    trawl_cli::dask::audit::quiet(os_args(args))
}

/// A worker's side of a cluster audit: `trawl audit`'s flags, parsed.
#[pyclass(name = "AuditWorker", frozen)]
struct AuditWorker(Worker);

#[pymethods]
impl AuditWorker {
    #[new]
    fn new(args: Vec<Vec<u8>>) -> PyResult<AuditWorker> {
        trawl_cli::dask::audit::worker(os_args(args))
            .map(AuditWorker)
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))
    }

    /// An audit's listing task: root number `idx` of the walk `spec` (`dirs` None) or each of
    /// `dirs`, depth first within the listing budget a scan's tasks have (in trawl-cluster):
    /// (each directory's listing, as bytes for the client; the directories left to list).
    fn list_task(
        &self,
        py: Python<'_>,
        spec: Vec<u8>,
        idx: usize,
        dirs: Option<Vec<Vec<u8>>>,
    ) -> PyResult<(BytesList, BytesList)> {
        use std::os::unix::ffi::OsStrExt;
        let dirs = dirs.map(|d| d.into_iter().map(path).collect());
        let (items, dirs) = py
            .detach(|| {
                self.0
                    .list_task(&spec, idx, dirs, trawl_cluster::ListBudget::default())
            })
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
        Ok((
            items.iter().map(|b| PyBytes::new(py, b).unbind()).collect(),
            dirs.iter()
                .map(|d| PyBytes::new(py, d.as_os_str().as_bytes()).unbind())
                .collect(),
        ))
    }

    /// Reads one shard from [`Feed::next`]: what each file's read found, as bytes.
    fn read(&self, py: Python<'_>, shard: Vec<u8>) -> PyResult<Py<PyBytes>> {
        let out = py
            .detach(|| self.0.read(&shard))
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
        Ok(PyBytes::new(py, &out).unbind())
    }
}

/// Python `bytes` objects, one per item.
type BytesList = Vec<Py<PyBytes>>;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Feed>()?;
    m.add_class::<AuditWorker>()?;
    m.add_function(wrap_pyfunction!(audit, m)?)?;
    m.add_function(wrap_pyfunction!(open_audit_output, m)?)?;
    m.add_function(wrap_pyfunction!(audit_quiet, m)?)?;
    Ok(())
}
