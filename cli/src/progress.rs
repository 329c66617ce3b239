//! A progress bar for long work (a large jar, the JDK), drawn on stderr only when stderr is a
//! terminal; otherwise nothing is drawn and the command's one-line summary is all there is.
//! Messages printed while a bar is up go through [`Progress::line`] so they do not garble it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::OnceCell;
use std::io::IsTerminal;

pub struct Progress {
    /// Set by [`Progress::start`] when stderr is a terminal.
    bar: OnceCell<ProgressBar>,
    what: &'static str,
}

impl Progress {
    /// A bar counting `what` (e.g. "classes"); nothing is drawn before [`Progress::start`].
    pub fn new(what: &'static str) -> Progress {
        Progress {
            bar: OnceCell::new(),
            what,
        }
    }

    /// The amount of work is now known: the bar appears (on a terminal).
    pub fn start(&self, total: usize) {
        if !std::io::stderr().is_terminal() || self.bar.get().is_some() {
            return;
        }
        let style = ProgressStyle::with_template(
            "bci [{bar:40}] {pos}/{len} {msg} {elapsed_precise} (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_message(self.what);
        let _ = self.bar.set(b);
    }

    pub fn inc(&self) {
        if let Some(b) = self.bar.get() {
            b.inc(1);
        }
    }

    /// Sets the position (for work that reports `done` counts).
    pub fn set(&self, done: usize) {
        if let Some(b) = self.bar.get() {
            b.set_position(done as u64);
        }
    }

    /// Removes the bar (the caller prints its summary after this).
    pub fn finish(&self) {
        if let Some(b) = self.bar.get() {
            b.finish_and_clear();
        }
    }

    /// Prints a line on stderr above the bar.
    pub fn line(&self, s: &str) {
        match self.bar.get() {
            Some(b) => b.suspend(|| eprintln!("{s}")),
            None => eprintln!("{s}"),
        }
    }

    /// Prints a line on stdout without garbling the bar.
    pub fn out(&self, s: &str) {
        match self.bar.get() {
            Some(b) => b.suspend(|| outln!("{s}")),
            None => outln!("{s}"),
        }
    }
}
