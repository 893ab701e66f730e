//! A cluster scan's front, as the Python package calls it in-process: `trawl scan`'s own flags
//! parsed and checked for a cluster ([`ClusterPlan`]), its outputs opened before anything is
//! read, and written at the end from the merged parts exactly as `trawl scan` writes them. The
//! work between (listings, maps, reduces, the merge) is `trawl-cluster`'s. An audit's front is
//! [`audit`]'s; the scheduler file, [`scheduler`]'s.

pub mod audit;
pub mod scheduler;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use trawl_cluster::{Listing, Merge, ScanWork};

use crate::commands::output::{Output, distinct};
use crate::commands::scan::{Outputs, write};
use crate::flags::hiargs::ScanPlan;
use crate::flags::lowargs::Command;

/// `trawl scan`'s flags, checked for what a cluster can do.
pub struct ClusterPlan {
    plan: ScanPlan,
    work: ScanWork,
    /// Where each PATH given stands among the arguments.
    path_places: Vec<Option<usize>>,
    /// The arguments that decide a shard's result.
    result_args: Vec<OsString>,
}

/// `trawl scan`'s arguments (by id) that say where the outputs go or how much is said, not
/// what a shard's result is (what the outputs need computed is [`ClusterPlan::computes`]'s).
const NOT_THE_RESULTS: [&str; 8] = [
    "json",
    "jsonl",
    "html",
    "ncdu",
    "duplicates",
    "media_index",
    "quiet",
    "zero",
];

/// The outputs of a cluster scan, open (as temporary files) until written; dropped unwritten,
/// they leave nothing behind.
pub struct OpenOutputs(Outputs);

/// A file of the cluster run's own (`trawl-dask --stats`), opened before anything is read
/// and written as trawl's outputs are: a temporary file beside it, renamed into place once
/// whole; dropped unwritten, it leaves nothing behind.
pub struct RunOutput(Output);

impl RunOutput {
    /// Writes `bytes` and puts the file in place.
    pub fn write(mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let name = self.0.name();
        self.0
            .write_all(bytes)
            .and_then(|()| self.0.flush())
            .with_context(|| format!("{name}: cannot write"))?;
        self.0.commit()
    }

    /// Device and inode of the temporary file, if it is one (the walk leaves it out).
    pub fn identity(&self) -> Option<(u64, u64)> {
        self.0.identity()
    }
}

/// `args` (`trawl scan`'s or, with `command` `audit`, `trawl audit`'s, without the command)
/// with each `--exclude-from FILE` replaced, where it stands, by its patterns as
/// `--exclude=PATTERN`: the file is read here, once, because each worker parses the flags
/// again where FILE may not be (or may differ), and a checkpoint's key must change with the
/// patterns, not with the file's name. The rules the result gives are checked to be the
/// rules `args` give. Arguments without the flag are returned as they are.
pub fn worker_args(command: &str, args: Vec<OsString>) -> anyhow::Result<Vec<OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let rules = |args: &[OsString]| -> anyhow::Result<(Vec<String>, Vec<OsString>)> {
        let mut argv: Vec<OsString> = vec!["trawl".into(), command.into()];
        argv.extend(args.iter().cloned());
        let low = crate::flags::parse_low(argv).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
        let a = match &low.command {
            Command::Scan(a) => &a.excluding,
            Command::Audit(a) => &a.excluding,
            _ => bail!("not a scan or an audit"),
        };
        let e = crate::flags::hiargs::exclusion(a)?;
        Ok((e.patterns().to_vec(), e.if_present().to_vec()))
    };
    // Without the flag the arguments go as they are (and are checked where they always were).
    let flagged = |a: &OsString| {
        let b = a.as_bytes();
        b == b"--exclude-from" || b.starts_with(b"--exclude-from=")
    };
    if !args
        .iter()
        .take_while(|a| a.as_bytes() != b"--")
        .any(flagged)
    {
        return Ok(args);
    }
    let before = rules(&args)?;
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let b = a.as_bytes();
        let file = if b == b"--exclude-from" {
            it.next()
        } else if let Some(v) = b.strip_prefix(b"--exclude-from=") {
            Some(OsString::from(std::ffi::OsStr::from_bytes(v)))
        } else {
            let end = b == b"--";
            out.push(a);
            if end {
                out.extend(it.by_ref());
            }
            continue;
        };
        let Some(file) = file else {
            bail!("--exclude-from: a FILE is required")
        };
        let path = PathBuf::from(file);
        let text = crate::flags::hiargs::read_exclude_file(&path)?;
        for p in trawl_walk::ExclusionBuilder::file_patterns(&path, &text)? {
            out.push(format!("--exclude={p}").into());
        }
    }
    if rules(&out)? != before {
        bail!("--exclude-from: its patterns could not be handed to the workers as they are");
    }
    Ok(out)
}

/// Refuses what a cluster scan does not do yet, naming the flag.
fn refuse_unsupported(plan: &ScanPlan) -> anyhow::Result<()> {
    for (set, flag) in [
        (plan.jsonl.is_some(), "--jsonl"),
        (plan.ncdu.is_some(), "--ncdu"),
        (plan.duplicates.is_some(), "--duplicates"),
        (plan.media_index.is_some(), "--media-index"),
        (plan.cfg.walk.follow_links, "--follow"),
        // The workers are handed no catalog: every file would be read, unsaid.
        (plan.reuse.is_some(), "--reuse"),
        (
            plan.reduce
                .as_ref()
                .and_then(|r| r.sample)
                .is_some_and(|s| s < 1.0),
            "--sample",
        ),
    ] {
        if set {
            bail!("{flag}: not available in a cluster scan (trawl scan has it)");
        }
    }
    Ok(())
}

/// What each worker is asked to do with its shard, from the plan.
fn scan_work(plan: &ScanPlan) -> ScanWork {
    let keep = plan.json.is_some() || !plan.manifests.is_empty() || plan.html.is_some();
    ScanWork {
        cfg: plan.cfg.clone(),
        objects: plan.objects.clone(),
        algorithms: plan.algorithms.clone(),
        reduce: plan.reduce.clone(),
        media: plan.media,
        count_links: plan.count_links,
        record_memory: plan.record_memory,
        temp_dir: plan.temp_dir.clone(),
        keep_records: keep,
        list_files: plan.json.is_some(),
        duplicate_directories: plan.json.is_some() || plan.html.is_some(),
    }
}

/// The arguments `given` that shape the results, each as given (a manifest's as its format
/// alone: its file is where an output goes).
fn result_args(given: Vec<crate::flags::Given>, plan: &ScanPlan) -> Vec<OsString> {
    let mut result_args = Vec::new();
    for g in given {
        match (g.id.as_str(), g.long) {
            (id, _) if NOT_THE_RESULTS.contains(&id) => {}
            // A manifest's format may add a digest; its file is where an output goes.
            ("manifest", _) => result_args.extend(
                plan.manifests
                    .iter()
                    .map(|m| OsString::from(format!("--manifest={}", m.kind))),
            ),
            (_, None) => result_args.extend(g.values),
            (_, Some(flag)) if g.values.is_empty() => result_args.push(flag.into()),
            (_, Some(flag)) => result_args.extend(g.values.into_iter().map(|v| {
                let mut a = OsString::from(format!("{flag}="));
                a.push(v);
                a
            })),
        }
    }
    result_args
}

impl ClusterPlan {
    /// Parses `trawl scan`'s arguments (without `trawl scan` itself); refuses what a cluster
    /// does not do yet, naming the flag.
    pub fn parse(args: Vec<OsString>) -> anyhow::Result<ClusterPlan> {
        let path_places = crate::flags::places("scan", "paths", &args);
        let mut argv: Vec<OsString> = vec!["trawl".into(), "scan".into()];
        argv.extend(args);
        let invocation = crate::flags::hiargs::invocation(&argv[1..]);
        let given = crate::flags::given(argv.clone(), "scan");
        let low = crate::flags::parse_low(argv).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
        let Command::Scan(a) = low.command else {
            bail!("not a scan");
        };
        let mut plan = ScanPlan::from_args(&a)?;
        plan.invocation = invocation;
        refuse_unsupported(&plan)?;
        let work = scan_work(&plan);
        let result_args = result_args(given?, &plan);
        Ok(ClusterPlan {
            plan,
            work,
            path_places,
            result_args,
        })
    }

    /// Where each PATH given stands among the arguments parsed (None for one that cannot be
    /// placed), in the order given: a caller that rewrites the paths (makes them absolute)
    /// replaces exactly those arguments.
    pub fn path_places(&self) -> &[Option<usize>] {
        &self.path_places
    }

    /// The arguments that decide a shard's result, with what the outputs need computed
    /// ([`ClusterPlan::computes`]): every argument given but those that say where an output
    /// goes or how much is said (`--json`, `--html`, `-q`, ...; a manifest by its format
    /// alone), as `--flag=VALUE` (`--flag` for one that takes none) in the order `trawl scan`
    /// declares them, and the paths as given. Part of a checkpoint's key, and what `--resume`
    /// shows of how two runs differ.
    pub fn result_args(&self) -> &[OsString] {
        &self.result_args
    }

    /// What determines each shard's result: the workers' side of the plan.
    pub fn work(&self) -> &ScanWork {
        &self.work
    }

    /// What each shard's map computes because of which outputs were asked for (the flags say
    /// the rest): part of a checkpoint's key, so that a resume never takes a shard that
    /// computed less than the run needs.
    pub fn computes(&self) -> Vec<&'static str> {
        let w = &self.work;
        [
            ("reduction", w.reduce.is_some()),
            ("records", w.keep_records),
            ("file list", w.list_files),
            ("directory comparison", w.duplicate_directories),
            ("media", w.media),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect()
    }

    /// Whether the scan measures data reduction (else the maps ship no fingerprints).
    pub fn reducing(&self) -> bool {
        self.plan.reduce.is_some()
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.plan.cfg.roots
    }

    /// Whether `-q` silences the summaries (trawl's, and the run's own figures).
    pub fn quiet(&self) -> bool {
        self.plan.quiet
    }

    /// Opens the outputs (before any reading: a bad path costs nothing) and returns their
    /// (device, inode) so that the walk leaves them out.
    pub fn open_outputs(&self) -> anyhow::Result<(OpenOutputs, Vec<(u64, u64)>)> {
        let o = Outputs::open(&self.plan)?;
        let ids = o.identities();
        Ok((OpenOutputs(o), ids))
    }

    /// Opens the run's own figures file (`flag`, e.g. `--stats`) as the scan's outputs are
    /// opened: refused where it is a root, would replace a file inside one, or names the file
    /// of another output.
    pub fn open_run_output(&self, flag: &str, path: &Path) -> anyhow::Result<RunOutput> {
        let mut outputs = self.plan.output_paths();
        outputs.push((flag, path));
        distinct(&outputs)?;
        Output::create_apart(path, &self.plan.cfg.roots).map(RunOutput)
    }

    /// Writes the outputs from the merged shards and every partition's counts as `trawl scan`
    /// does (its summary included); returns the exit code. `walk`: the listings' skipped and
    /// failed entries.
    pub fn finish(
        &self,
        outputs: OpenOutputs,
        merge: Merge,
        partitions: &[Vec<u8>],
        walk: &Listing,
        started: Instant,
    ) -> u8 {
        let _run = crate::stop::begin_run();
        let written = merge
            .finish(partitions, walk, started)
            .map_err(anyhow::Error::from)
            .and_then(|result| write(outputs.0, &self.plan, result, None));
        crate::finish(written.unwrap_or_else(|e| {
            crate::messages::error(format_args!("{}", crate::describe(&e)));
            crate::Outcome::Trouble
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// Each `--exclude-from FILE` becomes its patterns where it stood (comments and blank
    /// lines left out), in both of its spellings, so that a worker that lacks FILE parses the
    /// same rules; arguments without it, and a `--` path spelled like it, go as they are.
    #[test]
    fn an_exclude_file_is_handed_to_the_workers_as_its_patterns() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("pats");
        std::fs::write(&f, "# c\n*.o\n\n!keep.o\n").unwrap();
        let f = f.to_str().unwrap();
        let got = worker_args(
            "scan",
            os(&["/d", "--exclude", "a", "--exclude-from", f, "-q"]),
        )
        .unwrap();
        assert_eq!(
            got,
            os(&[
                "/d",
                "--exclude",
                "a",
                "--exclude=*.o",
                "--exclude=!keep.o",
                "-q"
            ])
        );
        let eq = format!("--exclude-from={f}");
        let got = worker_args("audit", os(&["/d", "-c", "c.db", &eq, "--exclude", "b"])).unwrap();
        assert_eq!(
            got,
            os(&[
                "/d",
                "-c",
                "c.db",
                "--exclude=*.o",
                "--exclude=!keep.o",
                "--exclude",
                "b"
            ])
        );
        let plain = os(&["/d", "--exclude", "a", "--", "--exclude-from"]);
        assert_eq!(worker_args("scan", plain.clone()).unwrap(), plain);
        let e = worker_args("scan", os(&["/d", "--exclude-from", "/nonexistent/p"])).unwrap_err();
        assert!(
            e.to_string().contains("cannot read it: no such file"),
            "{e}"
        );
    }

    fn plan(args: &[&str]) -> ClusterPlan {
        ClusterPlan::parse(args.iter().map(Into::into).collect()).unwrap()
    }

    /// A shard's result is decided by every argument but the outputs' places and how much is
    /// said: other outputs (and `-q`) give the same arguments, a manifest by its format; the
    /// paths and the other flags are in them, spelled one way whatever way they were given.
    #[test]
    fn the_arguments_that_decide_a_shards_result_leave_the_outputs_out() {
        let t = tempfile::tempdir().unwrap();
        let out = |n: &str| t.path().join(n).display().to_string();
        let (j, h, s) = (out("a.json"), out("a.html"), out("SUMS"));
        let m = format!("sha256sum:{s}");
        let one = plan(&["data", "-j", "2", "--json", &j, "-m", &m, "--cdc=16k"]);
        let two = plan(&[
            "-q",
            "--html",
            &h,
            "--threads=2",
            "-z",
            "data",
            "--manifest",
            &m,
        ]);
        let want: Vec<OsString> = ["data", "--manifest=sha256sum", "--cdc=16k", "--threads=2"]
            .into_iter()
            .map(Into::into)
            .collect();
        assert_eq!(one.result_args(), want);
        let without_cdc: Vec<OsString> =
            want.iter().filter(|a| *a != "--cdc=16k").cloned().collect();
        assert_eq!(two.result_args(), without_cdc);
        // Another digest is another result.
        let md5 = plan(&["data", "-d", "md5"]);
        assert_eq!(md5.result_args(), ["data", "--digest=md5"]);
    }

    /// What a cluster scan cannot honour is refused by name, `--reuse` among them (its workers
    /// would read every file and the report would not say so).
    #[test]
    fn a_flag_a_cluster_cannot_honour_is_refused() {
        for (args, flag) in [
            (&["data", "--reuse", "c.db"][..], "--reuse"),
            (&["data", "--follow"][..], "--follow"),
        ] {
            let args = args.iter().map(Into::into).collect();
            let e = ClusterPlan::parse(args).err().expect("refused").to_string();
            assert!(
                e.contains(&format!("{flag}: not available in a cluster scan")),
                "{e}"
            );
        }
    }

    /// The paths' places among the arguments, for a caller that rewrites them.
    #[test]
    fn the_paths_places_are_where_they_stand_among_the_arguments() {
        let p = plan(&["--temp-dir", "/tmp", "/tmp", "b", "--", "-q"]);
        assert_eq!(p.path_places(), [Some(2), Some(3), Some(5)]);
    }
}
