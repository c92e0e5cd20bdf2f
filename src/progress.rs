//! A progress bar on stderr, drawn only when asked for (the binary asks when
//! stderr is a terminal and `--no-progress` is absent). Hidden, it costs one
//! atomic add per unit of work.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress over units of work.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `total` units, drawn on stderr if `visible`.
    pub fn new(visible: bool, total: u64) -> Progress {
        let bar = if visible {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} checking {pos}/{len} parts {wide_bar} {eta}") {
                bar.set_style(style);
            }
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress { bar }
    }

    /// One more unit done.
    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
