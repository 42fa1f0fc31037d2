package cli

import (
	"bytes"
	"io"
	"os"

	"github.com/corral-dev/corral/core/display"

	"golang.org/x/term"
)

// IOStreams carries a command's input and output. Commands never touch
// os.Stdout directly: human text when Out is a terminal, data with --json,
// diagnostics on ErrOut.
//
// Out and ErrOut are human streams: [System] and [Test] wrap them in a
// display.Writer, so no control, bidi or other unsafe rune that a file, an
// argument or a path carried reaches the terminal raw, whichever command
// printed it. Data goes to the raw writer (printJSON, dataOut), and so
// does a terminal handed to a session (Terminal).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY, InTTY and ErrTTY say whether Out, In and ErrOut are
	// terminals (ErrTTY: progress is one updating line there).
	OutTTY, InTTY, ErrTTY bool
}

// System returns the process's streams.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: display.NewWriter(os.Stdout), ErrOut: display.NewWriter(os.Stderr),
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		InTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// Test returns in-memory streams and their buffers.
func Test(tty bool) (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: display.NewWriter(out), ErrOut: display.NewWriter(errOut), OutTTY: tty, InTTY: tty}, in, out, errOut
}

// Terminal returns the streams unfiltered, for a session (an agent, a
// shell) that draws on the terminal itself.
func (s *IOStreams) Terminal() (in io.Reader, out, errOut io.Writer) {
	return s.In, display.Raw(s.Out), display.Raw(s.ErrOut)
}

// Flush writes what the human streams hold back (a rune split across
// writes).
func (s *IOStreams) Flush() {
	for _, w := range []io.Writer{s.Out, s.ErrOut} {
		if dw, ok := w.(*display.Writer); ok {
			dw.Flush() //nolint:errcheck // best effort at exit
		}
	}
}

// dataOut is the writer for machine output on w (JSON, a rendered
// template): the raw stream, so that data stays exactly as it was
// encoded. encoding/json already escapes the controls that matter.
func dataOut(w io.Writer) io.Writer { return display.Raw(w) }
