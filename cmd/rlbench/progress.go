package main

import (
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is a progress bar on stderr when stderr is a terminal, and nothing
// otherwise, so that piped or tested output stays clean.
type progress struct{ bar *progressbar.ProgressBar }

// newProgress starts a bar of total steps labelled desc.
func newProgress(total int, desc string) progress {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return progress{}
	}
	return progress{progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc), progressbar.OptionClearOnFinish(), progressbar.OptionShowCount())}
}

// add advances the bar by n steps.
func (p progress) add(n int) {
	if p.bar != nil {
		p.bar.Add(n)
	}
}

// done removes the bar.
func (p progress) done() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
