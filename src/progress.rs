//! A progress bar on stderr, drawn only when asked for (the binary asks when
//! stderr is a terminal and `--no-progress` is absent). Hidden, it costs one
//! atomic add per unit of work. In a run that reads object storage, the bar
//! also shows the requests made and the bytes they brought.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress over units of work.
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `total` units, drawn on stderr if `visible`.
    pub(crate) fn new(visible: bool, total: u64) -> Progress {
        let bar = if visible {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} checking {pos}/{len} parts {wide_bar} {eta} {msg}")
            {
                bar.set_style(style);
            }
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress { bar }
    }

    /// One more unit done.
    pub(crate) fn inc(&self) {
        self.bar.inc(1);
        if !self.bar.is_hidden() {
            let (requests, bytes) = crate::source::storage::remote::traffic();
            if requests > 0 {
                self.bar.set_message(format!(
                    "{requests} requests, {:.1} MiB",
                    bytes as f64 / (1 << 20) as f64
                ));
            }
        }
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
