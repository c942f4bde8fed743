"""Reports over evaluation runs: self-contained HTML, Markdown and CSV."""
