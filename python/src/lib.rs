//! The Python package `retro`: a thin PyO3 layer over the probe library
//! (`retro_probe`), not a second implementation. Every answer is the
//! document `coordinator probe --json` prints, as Python dicts and lists.
//!
//! ```python
//! import retro
//! tb = retro.open_tablebase("tablebases/stage1")
//! tb.probe("e1/b4/b1 A")["position"]["category"]   # 'kingmaker'
//! tb.unrank(tb.rank("e1/b4/b1 A"))                  # 'e1/b4/b1 A'
//! ```

use pyo3::prelude::*;
use std::path::PathBuf;

pyo3::create_exception!(
    retro,
    ProbeError,
    pyo3::exceptions::PyValueError,
    "A tablebase directory could not be opened, or a position not answered; the message is the probe library's."
);

/// The probe library's error as a Python exception, its message kept.
fn raised(e: retro_probe::ProbeError) -> PyErr {
    ProbeError::new_err(e.to_string())
}

/// A directory of solved tablebases, opened for probing (three-player,
/// two-player or the ranked game, as its files say).
#[pyclass(name = "Tablebase", module = "retro", frozen)]
struct Tablebase {
    inner: retro_probe::Tablebases,
    directory: PathBuf,
}

#[pymethods]
impl Tablebase {
    /// `cc3` (three-player, first winner), `cc2` (two-player) or `ranked`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// Ranks in each layer file: every rank from 0 to this names a position.
    #[getter]
    fn positions(&self) -> u64 {
        self.inner.positions()
    }

    /// The start position's text.
    #[getter]
    fn start(&self) -> String {
        self.inner.start_text()
    }

    /// The directory the tablebases were opened from.
    #[getter]
    fn directory(&self) -> PathBuf {
        self.directory.clone()
    }

    /// The values of `position` (its text; the start when left out) and of
    /// every move's child: `{"position": {...}, "moves": [{"move": ..,
    /// "child": {...}}, ...]}`. Three-player: the 12 answers (solo, pairout,
    /// enable) and the category; two-player: the value for player 1 and for
    /// the player to move; ranked: top2 and the race.
    #[pyo3(signature = (position=None))]
    fn probe<'py>(&self, py: Python<'py>, position: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let (json, _) = py.detach(|| self.inner.probe_text(position)).map_err(raised)?;
        py.import("json")?.call_method1("loads", (json.to_string(),))
    }

    /// The same as plain text, as `coordinator probe` prints it.
    #[pyo3(signature = (position=None))]
    fn describe(&self, py: Python<'_>, position: Option<&str>) -> PyResult<String> {
        let (_, text) = py.detach(|| self.inner.probe_text(position)).map_err(raised)?;
        Ok(text)
    }

    /// The rank `position` is stored at (docs/FORMAT.md: the colex rank; a
    /// two-player board folded by the mirror stores a position with player 2
    /// to move at its mirror image's rank).
    fn rank(&self, position: &str) -> PyResult<u64> {
        self.inner.rank_of_text(position).map_err(raised)
    }

    /// The text of the position stored at `rank`.
    fn unrank(&self, rank: u64) -> PyResult<String> {
        self.inner.text_of_rank(rank).map_err(raised)
    }

    fn __repr__(&self) -> String {
        format!(
            "<retro.Tablebase {} {} positions from {:?}>",
            self.inner.kind(),
            self.inner.positions(),
            self.directory.display().to_string()
        )
    }
}

/// Opens the tablebases in `directory` (a solved plan's output directory),
/// checking that its files belong together; raises `retro.ProbeError`
/// saying what is missing or wrong.
#[pyfunction]
fn open_tablebase(py: Python<'_>, directory: PathBuf) -> PyResult<Tablebase> {
    let inner = py.detach(|| retro_probe::open(&directory)).map_err(raised)?;
    Ok(Tablebase { inner, directory })
}

/// The module Python imports as `retro`.
#[pymodule]
fn retro(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tablebase>()?;
    m.add_function(wrap_pyfunction!(open_tablebase, m)?)?;
    m.add("ProbeError", m.py().get_type::<ProbeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
