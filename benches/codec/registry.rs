//! What each benchmark processes, and criterion's estimates read back.

use std::io::Read as _;
use std::path::PathBuf;

use criterion::BenchmarkId;

/// What one benchmark processes per iteration, for the summary table.
pub(crate) struct Work {
    pub(crate) path: String,
    pub(crate) messages: u64,
    /// Uncompressed message/payload bytes.
    pub(crate) bytes: u64,
}

#[derive(Default)]
pub(crate) struct Registry(pub(crate) Vec<Work>);

impl Registry {
    fn add(&mut self, path: String, messages: u64, bytes: u64) {
        self.0.push(Work {
            path,
            messages,
            bytes,
        });
    }
}

pub(crate) fn id(
    func: &str,
    param: &str,
    reg: &mut Registry,
    group: &str,
    messages: u64,
    bytes: u64,
) -> BenchmarkId {
    reg.add(format!("{group}/{func}/{param}"), messages, bytes);
    BenchmarkId::new(func, param)
}

pub(crate) fn criterion_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(p).join("criterion");
    }
    // <target>/<profile>/deps/codec-<hash>
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .nth(3)
        .map(|t| t.join("criterion"))
        .unwrap_or_else(|| "target/criterion".into())
}

/// Median time per iteration in ns, from criterion's estimates.json.
pub(crate) fn median_ns(path: &str) -> Option<f64> {
    let file = criterion_dir().join(path).join("new/estimates.json");
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    let at = text.find("\"median\"")?;
    let rest = &text[at..];
    let at = rest.find("\"point_estimate\":")? + "\"point_estimate\":".len();
    let rest = &rest[at..];
    let end = rest.find([',', '}'])?;
    rest[..end].trim().parse().ok()
}
